import Glibc
import SwitchProtocol
import SwitchTestSupport
import Testing

@testable import SwitchCtl

/// Messages for people (stderr) and for scripts (`--json` on stdout).
@Suite(.serialized) struct MessagesTests {
  static func remote(_ text: String) -> RemoteError { RemoteError(json(text)) }

  @Test func aPolicyHoldNamesItsFileAndLine() {
    let held = Self.remote(
      #"{"code":-32002,"message":"bluetooth is read-only: Bluetooth is turned off by your organisation.","#
        + #""data":{"name":"ReadOnly","key":"bluetooth","reason":"Bluetooth is turned off by your organisation.","#
        + #""heldBy":"policy","policySource":"50-corp.conf:2"}}"#)
    #expect(
      Failure.remote(held).lines == [
        "switchctl: bluetooth is read-only: Bluetooth is turned off by your organisation. "
          + "(held by policy 50-corp.conf:2; edit it and reload)"
      ])
    let disabled = Self.remote(
      #"{"code":-32003,"message":"email.marketing is disabled: Not offered.","#
        + #""data":{"name":"Disabled","key":"email.marketing","reason":"Not offered.","#
        + #""disabledBy":"policy","policySource":"60-site.conf:7"}}"#)
    #expect(
      Failure.remote(disabled).lines == [
        "switchctl: email.marketing is disabled: Not offered. "
          + "(disabled by policy 60-site.conf:7; edit it and reload)"
      ])
    // An administrator's hold has no file to name.
    let admin = Self.remote(
      #"{"code":-32002,"message":"wifi is read-only: Held.","#
        + #""data":{"name":"ReadOnly","key":"wifi","reason":"Held.","heldBy":"admin","policySource":null}}"#
    )
    #expect(Failure.remote(admin).lines == ["switchctl: wifi is read-only: Held."])
  }

  @Test func aRefusedReloadPrintsEveryError() {
    let refused = Self.remote(
      #"{"code":-32010,"message":"The configuration was refused (2 errors), the running one stays: a; b.","#
        + #""data":{"name":"InvalidConfig","errors":["policy.d/a.conf:1: bad","switches.d/b.conf:2: worse"]}}"#
    )
    #expect(
      Failure.remote(refused).lines == [
        "switchctl: the configuration was refused (2 errors); the running one stays:",
        "  policy.d/a.conf:1: bad", "  switches.d/b.conf:2: worse",
      ])
  }

  @Test func jsonErrorsGoToStdoutWithTheDocumentedStatus() throws {
    // Nothing listens: a switchctl-made error object, exit 7.
    let missing = runCtl(["--socket", "/nonexistent/switchd.sock", "--json", "get", "wifi"])
    #expect(missing.code == .unreachable)
    #expect(missing.out.count == 1)
    let unreachable = json(missing.out.first ?? "null")
    #expect(unreachable["code"] == .null)
    #expect(unreachable["data"]?["name"] == .string("Unreachable"))
    #expect(unreachable["message"]?.stringValue?.contains("/nonexistent/switchd.sock") == true)

    let daemon = try DaemonFixture.shipped()
    let s = ["--socket", daemon.socketPath, "--json"]
    let unknown = runCtl(s + ["get", "no-such-switch"])
    #expect(unknown.code == .unknownSwitch)
    #expect(
      unknown.out == [
        #"{"code":-32001,"message":"No switch has the key no-such-switch.","#
          + #""data":{"name":"UnknownSwitch","key":"no-such-switch"}}"#
      ])
    #expect(unknown.err == ["switchctl: No switch has the key no-such-switch."])
    // A key that cannot exist fails the same way, without asking the daemon.
    let bad = runCtl(s + ["get", "Bad Key"])
    #expect(bad.code == .unknownSwitch)
    #expect(json(bad.out.first ?? "null")["data"]?["name"] == .string("UnknownSwitch"))

    _ = runCtl(s + ["disable", "email.marketing", "--reason", "Not here."])
    let refused = runCtl(s + ["off", "email.marketing"])
    #expect(refused.code == .disabled)
    let object = json(refused.out.first ?? "null")
    #expect(object["code"] == .int(-32003))
    #expect(object["data"]?["disabledBy"] == .string("admin"))
    #expect(object["data"]?["policySource"] == .null)
  }

  @Test func isOnJSONSaysWhatTheStatusSays() throws {
    let daemon = try DaemonFixture.shipped()
    let s = ["--socket", daemon.socketPath]
    let on = runCtl(s + ["--json", "is-on", "wifi"])
    #expect(on.code == .success)
    #expect(on.out == [#"{"key":"wifi","on":true,"checked":true,"disabled":false}"#])
    _ = runCtl(s + ["disable", "wifi"])
    let disabled = runCtl(s + ["is-on", "wifi", "--json"])
    #expect(disabled.code == .isOff)
    #expect(disabled.out == [#"{"key":"wifi","on":false,"checked":true,"disabled":true}"#])
    // Without --json, is-on still prints nothing.
    #expect(runCtl(s + ["is-on", "wifi"]).out.isEmpty)
  }
}
