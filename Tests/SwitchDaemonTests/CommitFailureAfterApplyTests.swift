import CSQLite
import Glibc
import SwitchCore
import SwitchProtocol
import SwitchSystem
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

  /// A harness whose `radio` has a command that logs each run's effective
  /// value and cause, once the start's reconcile ran it; and a connection
  /// to its database, to make the change log refuse inserts.
  final class Setup {
    let harness: LoopHarness
    let saboteur: SQLiteConnection
    let peer: TestClient
    private let log: String

    /// `otherSwitches`: more of the schema, after `radio`.
    init(otherSwitches: String = "") throws {
      var log = ""
      harness = try LoopHarness(daemonConf: "[Daemon]\nAdminGroup=\nLogLevel=error\n") {
        log = $0 + "/apply.log"
        let applier = $0 + "/apply"
        try writeWholeFile(
          applier, "#!/bin/sh\necho \"$SWITCH_EFFECTIVE $SWITCH_CAUSE\" >> \(log)\n")
        chmod(applier, 0o755)
        return "[radio]\nLabel=Radio\nDefault=off\nExecApply=\(applier)\n" + otherSwitches
      }
      self.log = log
      saboteur = try SQLiteConnection(
        path: harness.directory + "/switches.db", flags: SQLITE_OPEN_READWRITE)
      peer = try TestClient(harness)
      // The start's reconcile runs the command once.
      peer.drive(input: []) { [log] _ in !Self.runs(log).isEmpty }
    }

    deinit {
      close(peer.fd)
      saboteur.close()
      harness.stop()
    }

    var runs: [String] { Self.runs(log) }

    static func runs(_ log: String) -> [String] {
      ((try? readWholeFile(log)) ?? "").split(separator: "\n").map(String.init)
    }

    /// Asks `get` until `radio` is `checked` (at most 60 s): whether it was.
    func waitUntilChecked(_ checked: Bool) -> Bool {
      let get = Array(CommitFailureAfterApplyTests.request(2, "get"))
      let deadline = monotonicSeconds() + 60
      while monotonicSeconds() < deadline {
        let asked = peer.lines.count
        peer.drive(input: get) { $0.lines.count > asked }
        let answer = try? JSONParser.parse(peer.lines.last ?? "null", maxDepth: 64)
        if answer?["result"]?["checked"]?.boolValue == checked { return true }
      }
      return false
    }

    /// Sets `radio` on as a change tried for `seconds`, from `client` (the
    /// peer when nil), and waits for its answer.
    func tryRadioOn(within seconds: Int, revertOnDisconnect: Bool, from client: TestClient? = nil) {
      let tried =
        #"{"jsonrpc":"2.0","id":1,"method":"set","params":{"key":"radio","checked":true,"#
        + #""confirmWithin":\#(seconds),"revertOnDisconnect":\#(revertOnDisconnect)}}"# + "\n"
      (client ?? peer).drive(input: Array(tried.utf8)) { $0.lines.count >= 1 }
    }

    /// The change log refuses reverts only.
    static let revertsOnly = "(new.what & 255) = \(Cause.revert.storageCode)"

    /// Drops the fault: the revert tried again is stored, and every run
    /// since the trial's was the revert's (none undid it between tries).
    func expectRevertStoredOnceTheDiskHasRoom() throws {
      try saboteur.execute("DROP TRIGGER injected_fault")
      #expect(waitUntilChecked(false), "the revert was not stored once the disk had room")
      #expect(runs.dropFirst(2).allSatisfy { $0 == "off revert" }, "\(runs)")
    }

    /// Makes the change log refuse the inserts for which `condition` holds.
    func failInserts(where condition: String = "1") throws {
      try saboteur.execute(
        "CREATE TRIGGER injected_fault BEFORE INSERT ON changes WHEN \(condition) "
          + "BEGIN SELECT RAISE(ABORT, 'injected fault'); END")
    }
  }

  @Test func theCommandRunsAgainForTheStoredValueWhenTheCommitFails() throws {
    let setup = try Setup()
    let (peer, saboteur) = (setup.peer, setup.saboteur)
    func runs() -> [String] { setup.runs }
    #expect(runs() == ["off reconcile"])

    try setup.failInserts()
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

  /// A reload whose policy's command ran and whose commit failed keeps the
  /// running configuration: the command runs again for its value.
  @Test func aReloadThatFailsToCommitRunsItsCommandsAgainForTheRunningValues() throws {
    let setup = try Setup()
    #expect(setup.runs == ["off reconcile"])
    let config = setup.harness.directory + "/config"
    mkdir(config + "/policy.d", 0o755)
    try writeWholeFile(config + "/policy.d/50-test.conf", "[radio]\nReadOnly=yes\nChecked=on\n")
    try setup.failInserts()
    let reload = #"{"jsonrpc":"2.0","id":1,"method":"reload","params":{}}"# + "\n"
    setup.peer.drive(input: Array(reload.utf8)) { $0.lines.count >= 1 && setup.runs.count >= 3 }
    let refused = try JSONParser.parse(setup.peer.lines.first ?? "null", maxDepth: 64)
    #expect(refused["error"]?["data"]?["name"]?.stringValue == "StorageFailure")
    #expect(setup.runs == ["off reconcile", "on policy", "off reconcile"])
  }

  /// A tried change whose revert fails to commit: the revert is tried again
  /// while it is due, for the same value, and the system is not turned
  /// back between tries (the record still holds the tried value, which the
  /// revert replaces once the disk has room).
  @Test func aRevertThatFailsToCommitIsTriedAgainAndNotUndone() throws {
    let setup = try Setup()
    // Before the trial, so that its 1 s cannot pass first on a slow
    // machine: the trial is the switch's first change, its revert is not.
    // (Not by revision: the writer may leave the rowid to SQLite.)
    try setup.failInserts(where: "new.key_previous IS NOT NULL")
    setup.tryRadioOn(within: 1, revertOnDisconnect: false)
    // Its deadline passes: the revert's command runs, its commit fails, and
    // after a pause it is tried again.
    setup.peer.drive(input: []) { _ in setup.runs.count >= 4 }
    #expect(setup.runs.prefix(4) == ["off reconcile", "on set", "off revert", "off revert"])

    try setup.expectRevertStoredOnceTheDiskHasRoom()
  }

  /// A trial reverted because its maker's connection closed, whose revert
  /// fails to commit: the revert stays due (rule 20: at once) and is tried
  /// again after the pause, for the same value, not undone between tries;
  /// stored once the disk has room, long before the trial's deadline. (It
  /// waited for that deadline, the command run again for the tried value
  /// meanwhile: the second review.)
  @Test func aRevertOnDisconnectThatFailsToCommitIsTriedAgainAndNotUndone() throws {
    let setup = try Setup()
    try setup.failInserts(where: "new.key_previous IS NOT NULL")
    let maker = try TestClient(setup.harness)
    setup.tryRadioOn(within: 600, revertOnDisconnect: true, from: maker)
    close(maker.fd)
    setup.peer.drive(input: []) { _ in setup.runs.count >= 4 }
    #expect(setup.runs.prefix(4) == ["off reconcile", "on set", "off revert", "off revert"])

    try setup.expectRevertStoredOnceTheDiskHasRoom()
  }

  /// A `confirm` that commits while a due revert waits for its retry: the
  /// revert's command had run (the system is off) and the confirm keeps
  /// the tried value, which needs no command by the record: the command
  /// runs for it, so the system agrees with the switch again (a review:
  /// the system stayed off while the switch said on).
  @Test func aConfirmOvertakingARetriedRevertRunsTheCommandForTheTriedValue() throws {
    let setup = try Setup()
    try setup.failInserts(where: Setup.revertsOnly)
    setup.tryRadioOn(within: 1, revertOnDisconnect: false)
    setup.peer.drive(input: []) { _ in setup.runs.count >= 3 }
    #expect(setup.runs.prefix(3) == ["off reconcile", "on set", "off revert"])
    // The revert may be tried again (and fail again) before the confirm
    // comes on a loaded machine; either way the confirm overtakes it.
    setup.peer.drive(input: Self.request(2, "confirm")) {
      $0.lines.count >= 2 && setup.runs.last == "on reconcile"
    }
    let confirmed = try JSONParser.parse(setup.peer.lines.last ?? "null", maxDepth: 64)
    #expect(confirmed["result"]?["switch"]?["checked"]?.boolValue == true, "\(confirmed)")
    #expect(setup.runs.last == "on reconcile", "\(setup.runs)")
    #expect(setup.waitUntilChecked(true))
  }

  /// The same, the change that overtakes the revert a reload's: a policy
  /// that holds `radio` at its record's value (no command by the record)
  /// while its commands run first for another switch, whose job holds
  /// `radio` too. The reload's own hold does not keep `radio`'s command
  /// from running (the review: it was skipped as another job's, and the
  /// system stayed off while the switch said on).
  @Test func aReloadOvertakingARetriedRevertRunsTheCommandForTheStoredValue() throws {
    let setup = try Setup(otherSwitches: "[fan]\nLabel=Fan\nDefault=off\nExecApply=/bin/true\n")
    try setup.failInserts(where: Setup.revertsOnly)
    setup.tryRadioOn(within: 1, revertOnDisconnect: false)
    setup.peer.drive(input: []) { _ in setup.runs.count >= 3 }
    #expect(setup.runs.prefix(3) == ["off reconcile", "on set", "off revert"])
    let config = setup.harness.directory + "/config"
    mkdir(config + "/policy.d", 0o755)
    try writeWholeFile(
      config + "/policy.d/50-test.conf",
      "[radio]\nReadOnly=yes\nChecked=on\n\n[fan]\nReadOnly=yes\nChecked=on\n")
    let reload = #"{"jsonrpc":"2.0","id":2,"method":"reload","params":{}}"# + "\n"
    // Its answer waits for the commands it started.
    setup.peer.drive(input: Array(reload.utf8)) { $0.lines.count >= 2 }
    // The revert may be tried again before it (its retry is not this
    // test's): the reload ran the command for the stored value.
    #expect(setup.runs.dropFirst(3).contains("on reconcile"), "\(setup.runs)")
  }

  @Test func aDeadlinesRetryWaitsLongerAfterEachFailedCommit() {
    #expect(
      [1, 2, 3, 6, 7, 100].map { Writer.retryPause(afterFailures: $0) }
        == [1000, 2000, 4000, 30_000, 30_000, 30_000])
  }
}
