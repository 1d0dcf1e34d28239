import SwitchProtocol
import Testing

@testable import SwitchCtl

/// switchctl under `Authorization=polkit`: `--no-ask-password`, and a
/// refusal for want of authentication says so and how to get it.
@Suite struct PolkitMessagesTests {
  @Test func noAskPasswordIsAGlobalFlag() throws {
    for arguments in [
      ["--no-ask-password", "toggle", "wifi"], ["toggle", "wifi", "--no-ask-password"],
    ] {
      let invocation = try ArgumentParser.parse(arguments).get()
      #expect(!invocation.askPassword)
      #expect(invocation.command == .toggle(key: "wifi", ifRevision: nil))
    }
    #expect(try ArgumentParser.parse(["toggle", "wifi"]).get().askPassword)
    guard case .failure = ArgumentParser.parse(["--no-ask-password=yes", "toggle", "wifi"]) else {
      Issue.record("--no-ask-password takes no value")
      return
    }
  }

  @Test func authenticationRequiredSaysHowToGetIt() {
    let refusal = RemoteError(
      json(
        #"{"code":-32004,"message":"You may not toggle wifi: polkit allows io.switchd.write only after authentication.","#
          + #""data":{"name":"PermissionDenied","key":"wifi","method":"toggle","authenticationRequired":true}}"#
      ))
    let lines = Failure.remote(refusal).lines
    #expect(lines.count == 2)
    #expect(lines.first?.hasPrefix("switchctl: You may not toggle wifi") == true)
    #expect(lines.last?.contains("authentication is required") == true)
    #expect(lines.last?.contains("--no-ask-password") == true)
    #expect(Failure.remote(refusal).exitCode == .permissionDenied)
    // Denied outright: one sentence, no hint.
    let denied = RemoteError(
      json(
        #"{"code":-32004,"message":"You may not toggle wifi: polkit did not authorize io.switchd.write.","#
          + #""data":{"name":"PermissionDenied","key":"wifi","method":"toggle","authenticationRequired":false}}"#
      ))
    #expect(Failure.remote(denied).lines.count == 1)
  }
}
