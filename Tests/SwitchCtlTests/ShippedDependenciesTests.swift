import SwitchProtocol
import SwitchTestSupport
import Testing

@testable import SwitchCtl

/// The repository's Config as shipped (issue 13 item 6): airplane mode
/// disables Wi-Fi and Bluetooth with the reason "Airplane mode is on", and
/// turning it off brings their own values back.
@Suite(.serialized) struct ShippedDependenciesTests {
  @Test func airplaneModeDisablesTheRadiosAndGivesThemBack() throws {
    let daemon = try DaemonFixture.shipped()
    let socket = ["--socket", daemon.socketPath]
    #expect(runCtl(socket + ["on", "bluetooth"]).code == .success)
    #expect(runCtl(socket + ["on", "airplane-mode"]).code == .success)

    for key in ["wifi", "bluetooth"] {
      let get = runCtl(socket + ["--json", "get", key])
      let object = json(get.out.joined())
      #expect(object["checked"] == .bool(true), "\(key)")
      #expect(object["disabled"] == .bool(true), "\(key)")
      #expect(object["disabledBy"] == .string("dependency"), "\(key)")
      #expect(object["disabledReason"] == .string("Airplane mode is on"), "\(key)")
      #expect(object["effective"] == .bool(false), "\(key)")
      // is-on: on but not in effect is 1.
      #expect(runCtl(socket + ["is-on", key]).code.rawValue == 1, "\(key)")
    }
    let refused = runCtl(socket + ["off", "wifi"])
    #expect(refused.code.rawValue == 4)
    #expect(refused.err.joined().contains("Airplane mode is on"), "\(refused.err)")
    let why = runCtl(socket + ["why", "bluetooth"])
    #expect(why.out.contains { $0.contains("Airplane mode is on") }, "\(why.out)")

    #expect(runCtl(socket + ["off", "airplane-mode"]).code == .success)
    #expect(runCtl(socket + ["get", "wifi"]).out == ["on"])
    #expect(runCtl(socket + ["get", "bluetooth"]).out == ["on"])
    #expect(runCtl(socket + ["is-on", "bluetooth"]).code == .success)
  }
}
