import CSQLite
import Glibc
import SwitchCore
import SwitchTestSupport
import Testing

@testable import SwitchDaemon
@testable import SwitchStore

/// The writer when a commit throws: the writes are answered StorageFailure,
/// nothing is emitted, the writer's copy and revision stay as they were, a
/// group that fails is retried write by write (so one bad write does not
/// sink the others), and the next commit works.
///
/// The failure is real: a trigger, installed in the database file from a
/// second connection, makes SQLite abort the insert into the change log, so
/// `SwitchStore.commit` rolls back and throws as it would on a full disk.
@Suite struct WriterCommitFailureTests {
  fileprivate static let toggleWifi = WriterHarness.Write(
    key: "wifi", operation: .toggle(ifRevision: nil))
  fileprivate static let toggleBluetooth = WriterHarness.Write(
    key: "bluetooth", operation: .toggle(ifRevision: nil))

  /// A confirm whose commit fails leaves the tried change as it was, and
  /// its maker with it: the maker's connection closing still reverts it
  /// (`wifi` a system switch, `email` the maker's own value).
  @Test(arguments: ["wifi", "email"])
  func aSettlingThatFailsToCommitKeepsTheTrialsMaker(key: String) throws {
    let harness = try WriterHarness()
    let writer = harness.writer
    _ = writer.commitGroup([
      QueuedRevertTests.write(
        key, .set(checked: false, ifRevision: nil), connection: 1,
        lasting: QueuedRevertTests.trial)
    ])
    try harness.failInserts(where: "1")
    let refused = writer.commitGroup([QueuedRevertTests.write(key, .confirm, connection: 1)])
    #expect(refused.changes.isEmpty)
    try harness.stopFailing()
    let queued = writer.makerLeft(1)
    #expect(queued.count == 1, "the maker was forgotten")
    _ = writer.commitGroup(queued)
    let after =
      key == "email"
      ? writer.users.value(key, user: 1000)?.checked : writer.records[key]?.state.checked
    #expect(after == true)
  }

  /// After a crash the rows lag the log. A start that cannot copy the log
  /// into them (a full disk) starts all the same, with the log's values,
  /// and its next checkpoint copies it, the users' values with it.
  @Test func aStartWhoseCheckpointFailsStartsAndItsNextCheckpointCatchesUp() throws {
    let harness = try WriterHarness()
    let changed = harness.writer.commitGroup([
      QueuedRevertTests.write("wifi", .toggle(ifRevision: nil), connection: 1),
      QueuedRevertTests.write("email", .toggle(ifRevision: nil), connection: 1),
    ])
    #expect(changed.changes.count == 2)
    // That writer is not stopped: its rows lag its log, as after a crash.
    let path = harness.directory + "/switches.db"
    let saboteur = try SQLiteConnection(path: path, flags: SQLITE_OPEN_READWRITE)
    defer { saboteur.close() }
    let checkpointRow = "SELECT value FROM meta WHERE name = 'checkpoint'"
    #expect(try saboteur.textRows(checkpointRow) == ["0"])
    try saboteur.execute(
      "CREATE TRIGGER injected_fault BEFORE UPDATE ON meta WHEN new.name = 'checkpoint' "
        + "BEGIN SELECT RAISE(ABORT, 'injected fault'); END")
    let catalog = try #require(ConfigLoader.load(directory: harness.directory + "/config").catalog)
    let restarted = try Writer.start(
      databasePath: path, configDirectory: harness.directory + "/config", catalog: catalog,
      access: AccessRules(daemonUID: getuid()), log: Log(level: .error),
      jobs: BlockingQueue<WriterJob>())
    #expect(restarted.records["wifi"]?.state.checked == false)
    #expect(restarted.users.values["email"]?[1000]?.checked == false)
    #expect(restarted.rowsLagTheLog)
    #expect(try saboteur.textRows(checkpointRow) == ["0"])

    try saboteur.execute("DROP TRIGGER injected_fault")
    restarted.checkpoint()
    #expect(!restarted.rowsLagTheLog)
    #expect(try saboteur.textRows(checkpointRow) == ["2"])
    // The user's value, which the restarted writer does not hold as changed.
    #expect(try saboteur.textRows("SELECT revision FROM user_values WHERE user = 1000") == ["2"])
    let jobs = BlockingQueue<WriterJob>()
    jobs.push(.stop)
    restarted.run(jobs: jobs) { _ in }
  }

  /// A reload whose commit fails leaves the configuration the schedule
  /// reads as it was: a schedule's next edge must not apply the one the
  /// reload could not (a review).
  @Test func aReloadThatFailsToCommitLeavesTheScheduledConfigurationAsItWas() throws {
    let harness = try WriterHarness()
    let writer = harness.writer
    #expect(writer.configured?.catalog.policyCount == 0)
    let config = harness.directory + "/config"
    mkdir(config + "/policy.d", 0o755)
    try writeWholeFile(config + "/policy.d/50-test.conf", "[wifi]\nReadOnly=yes\nChecked=off\n")
    let read = try #require(ConfigLoader.load(directory: config).catalog)
    try harness.failInserts(where: "1")
    let output = writer.reload(nil, .valid(read, AccessRules(daemonUID: getuid())))
    #expect(output.reload?.result == .failed)
    #expect(writer.catalog.policyCount == 0)
    #expect(writer.configured?.catalog.policyCount == 0)
    try harness.stopFailing()
    _ = try harness.run([])  // stops the writer
  }

  /// The deadlines armed with a pause while commits failed are armed
  /// again once one works: a revert due meanwhile is not held up to 30 s.
  @Test func aCommitThatWorksAgainRearmsTheDeadlines() throws {
    let harness = try WriterHarness()
    let writer = harness.writer
    try harness.failInserts(where: "1")
    _ = writer.commitGroup([
      QueuedRevertTests.write("wifi", .toggle(ifRevision: nil), connection: 1)
    ])
    #expect(writer.failedCommits == 1)
    try harness.stopFailing()
    writer.deadlines.moved = false
    let worked = writer.commitGroup([
      QueuedRevertTests.write("wifi", .toggle(ifRevision: nil), connection: 1)
    ])
    #expect(worked.changes.count == 1)
    #expect(writer.failedCommits == 0)
    #expect(writer.deadlines.moved, "the paused timers are not armed again")
    _ = try harness.run([])  // stops the writer
  }

  @Test func aFailedCommitChangesNothingAndTheNextOneWorks() throws {
    let harness = try WriterHarness()
    let before = harness.initial.records
    #expect(before["wifi"]?.state.checked == true)
    #expect(before["bluetooth"]?.state.checked == false)
    let steps = try harness.run([
      .init(before: { try harness.failInserts(where: "1") }, writes: [Self.toggleWifi]),
      // A group that fails is retried one by one; each fails here too.
      .init(
        writes: [
          Self.toggleWifi,
          .init(key: "bluetooth", operation: .set(checked: true, ifRevision: nil)),
        ]),
      .init(before: { try harness.stopFailing() }, writes: [Self.toggleWifi]),
      // A switch changed before: its record comes back with its revision and time.
      .init(before: { try harness.failInserts(where: "1") }, writes: [Self.toggleWifi]),
    ])
    try #require(steps.count == 4)

    let alone = steps[0]
    #expect(alone.changes.isEmpty)
    #expect(alone.failures == [1])
    #expect(alone.records == before)
    #expect(alone.revision == 0)
    #expect(alone.logged.isEmpty)

    let group = steps[1]
    #expect(group.changes.isEmpty)
    #expect(group.failures == [1, 2])
    #expect(group.records == before)
    #expect(group.revision == 0)
    #expect(group.logged.isEmpty)

    let next = steps[2]
    #expect(next.failures.isEmpty)
    #expect(next.changes.map(\.revision) == [1])
    #expect(next.changes.first?.previous == before["wifi"]?.state)
    #expect(next.answered.first?.state.checked == false)
    #expect(next.answered.first?.revision == 1)
    #expect(next.records["wifi"]?.revision == 1)
    #expect(next.logged == [1])

    let again = steps[3]
    #expect(again.failures == [1])
    #expect(again.records == next.records)
    #expect(again.records["wifi"]?.changedAt != nil)
    #expect(again.revision == 1)
  }

  /// A user's value whose commit fails: refused, the writer's copy of user
  /// values as it was, the others in its group committed alone; then it works.
  @Test func aFailedCommitOfAUsersValueChangesNothing() throws {
    let harness = try WriterHarness()
    let setEmail = WriterHarness.Write(
      key: "email", operation: .set(checked: false, ifRevision: nil))
    let steps = try harness.run([
      .init(
        before: { try harness.failInserts(where: "NEW.user = 1000") },
        writes: [setEmail, Self.toggleWifi]),
      .init(before: { try harness.stopFailing() }, writes: [setEmail]),
    ])
    try #require(steps.count == 2)
    #expect(steps[0].failures == [1])
    #expect(steps[0].changes.map(\.revision) == [1])
    #expect(steps[0].users.isEmpty)
    #expect(steps[1].changes.map(\.user) == [1000])
    #expect(steps[1].users["email"]?[1000]?.revision == 2)
    #expect(steps[1].answered.first?.state.checked == false)
    #expect(steps[1].logged == [1, 2])
  }

  /// One write whose commit fails among good ones: the group fails, the
  /// writes are committed alone, and only that one is refused; the others
  /// get consecutive revisions and are answered in the order sent.
  @Test func oneFailingWriteInAGroupSinksOnlyItself() throws {
    let harness = try WriterHarness()
    let steps = try harness.run([
      .init(
        before: {
          try harness.failInserts(
            where: "NEW.key_id = (SELECT id FROM keys WHERE key = 'bluetooth')")
        },
        writes: [Self.toggleWifi, Self.toggleBluetooth, Self.toggleWifi]),
      .init(before: { try harness.stopFailing() }, writes: [Self.toggleBluetooth]),
    ])
    try #require(steps.count == 2)

    let mixed = steps[0]
    #expect(mixed.failures == [2])
    #expect(mixed.changes.map(\.revision) == [1, 2])
    #expect(mixed.changes.map(\.key) == ["wifi", "wifi"])
    #expect(mixed.answeredWrites == [1, 2, 3])
    #expect(mixed.records["bluetooth"]?.revision == 0)
    #expect(mixed.records["wifi"]?.revision == 2)
    #expect(mixed.logged == [1, 2])

    let next = steps[1]
    #expect(next.failures.isEmpty)
    #expect(next.changes.map(\.revision) == [3])
    #expect(next.logged == [1, 2, 3])
  }
}
