import CSQLite
import Glibc
import SwitchProtocol
import SwitchTestSupport
import Testing

@testable import SwitchDaemon
@testable import SwitchStore

/// A write whose apply command ran and whose commit then failed (a full
/// disk; here a trigger that aborts the insert into the change log, as in
/// `WriterCommitFailureTests`) is refused, nothing changed: the system must
/// not keep the value it asked for. The command runs again for the value
/// the switch still has (SEMANTICS.md rules 8 and 14).
@Suite struct CommitFailureAfterApplyTests {
  static func request(_ id: Int, _ method: String) -> [UInt8] {
    Array(
      (#"{"jsonrpc":"2.0","id":\#(id),"method":"\#(method)","params":{"key":"radio"}}"# + "\n")
        .utf8)
  }

  @Test func theCommandRunsAgainForTheStoredValueWhenTheCommitFails() throws {
    var log = ""
    let harness = try LoopHarness(daemonConf: "[Daemon]\nAdminGroup=\nLogLevel=error\n") {
      log = $0 + "/apply.log"
      let applier = $0 + "/apply"
      try writeWholeFile(
        applier, "#!/bin/sh\necho \"$SWITCH_EFFECTIVE $SWITCH_CAUSE\" >> \(log)\n")
      chmod(applier, 0o755)
      return "[radio]\nLabel=Radio\nDefault=off\nExecApply=\(applier)\n"
    }
    defer { harness.stop() }
    let saboteur = try SQLiteConnection(
      path: harness.directory + "/switches.db", flags: SQLITE_OPEN_READWRITE)
    defer { saboteur.close() }
    let peer = try TestClient(harness)
    defer { close(peer.fd) }
    func runs() -> [String] {
      ((try? readWholeFile(log)) ?? "").split(separator: "\n").map(String.init)
    }
    // The start's reconcile runs the command once.
    peer.drive(input: []) { _ in !runs().isEmpty }
    #expect(runs() == ["off reconcile"])

    try saboteur.execute(
      "CREATE TRIGGER injected_fault BEFORE INSERT ON changes "
        + "BEGIN SELECT RAISE(ABORT, 'injected fault'); END")
    peer.drive(input: Self.request(1, "toggle")) { $0.lines.count >= 1 && runs().count >= 3 }
    let refused = try JSONParser.parse(peer.lines.first ?? "null", maxDepth: 64)
    #expect(refused["error"]?["data"]?["name"]?.stringValue == "StorageFailure")
    // The toggle's command ran, its commit failed, and the command ran
    // again for the stored value: the system is off, as the switch says.
    #expect(runs() == ["off reconcile", "on toggle", "off reconcile"])

    try saboteur.execute("DROP TRIGGER injected_fault")
    peer.drive(input: Self.request(2, "toggle")) { $0.lines.count >= 2 }
    let toggled = try JSONParser.parse(peer.lines.last ?? "null", maxDepth: 64)
    #expect(toggled["result"]?["switch"]?["checked"]?.boolValue == true)
    #expect(toggled["result"]?["switch"]?["revision"]?.int64Value == 1)
    #expect(runs().last == "on toggle")
  }
}
