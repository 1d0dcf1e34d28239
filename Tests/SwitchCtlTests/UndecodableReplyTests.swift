import SwitchProtocol
import Testing

@testable import SwitchCtl

/// A result the daemon sent without a member switchctl reads, or with one of
/// another type, fails the command with one sentence naming the member:
/// nothing is guessed and printed as `?`.
@Suite struct UndecodableReplyTests {
  @Test func aMissingMemberFailsTheCommandAndNamesIt() {
    let partial = json(#"{"changed":true,"switch":{"key":"wifi"}}"#)
    do throws(Failure) {
      _ = try decode(partial, as: WriteResult.self)
      Issue.record("a Switch with only its key was accepted")
    } catch {
      #expect(error.exitCode == .failure)
      #expect(
        error.lines == [
          "switchctl: switchd sent a reply switchctl does not understand: "
            + #"a Switch has no member "label" that is a string"#
        ])
      #expect(error.jsonObject["code"] == .null)
      #expect(error.jsonObject["data"]?["name"] == .string("ClientFailure"))
    }
  }
}
