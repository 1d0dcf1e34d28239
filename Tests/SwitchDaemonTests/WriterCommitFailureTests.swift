import CSQLite
import Glibc
import SwitchCore
import SwitchProtocol
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
    ])
    try #require(steps.count == 3)

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
        before: { try harness.failInserts(where: "NEW.key = 'bluetooth'") },
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

/// A `Writer` over a fresh database, driven the way the event loop drives
/// it (jobs in a queue, outputs to a callback), plus a second SQLite
/// connection to the same file that can make its commits fail.
///
/// Everything runs on the test's thread: each output's callback records the
/// step and queues the next one (or `.stop`), so the writer never crosses
/// threads and needs no lock here.
private final class WriterHarness {
  struct Write {
    var key: String
    var operation: SwitchCore.Operation
  }

  /// One batch of writes, committed as one group, after `before` ran.
  struct Step {
    var before: () throws -> Void = {}
    var writes: [Write]
  }

  /// What a step came back as, and the state after it.
  struct Outcome {
    var changes: [Change]
    /// The writes (1 = the step's first) answered StorageFailure.
    var failures: [Int] = []
    /// Every write answered, in the order of the answers.
    var answeredWrites: [Int] = []
    /// The switches as answered, for the writes that succeeded.
    var answered: [SwitchRecord] = []
    /// The writer's copy and revision after the step.
    var records: [String: SwitchRecord]
    /// The writer's copy of every user's own values after the step.
    var users: UserValues = [:]
    var revision: Int64
    /// The revisions in the change log, as another reader of the file sees them.
    var logged: [Int64]
  }

  let directory: String
  private let writer: Writer
  let initial: (records: [String: SwitchRecord], revision: Int64, oldest: Int64?)
  private let saboteur: SQLiteConnection

  init() throws {
    var template = Array("/tmp/switchd-writer-test-XXXXXX".utf8CString)
    guard let made = mkdtemp(&template) else { throw WriterHarnessError("mkdtemp failed") }
    directory = String(cString: made)
    let config = directory + "/config"
    mkdir(config, 0o755)
    mkdir(config + "/switches.d", 0o755)
    try writeText(config + "/switchd.conf", "[Daemon]\nAdminGroup=\n")
    try writeText(
      config + "/switches.d/10-test.conf",
      "[wifi]\nLabel=Wi-Fi\nDefault=on\n\n[bluetooth]\nLabel=Bluetooth\nDefault=off\n\n"
        + "[email]\nLabel=Email\nDefault=on\nScope=user\n")
    guard let catalog = ConfigLoader.load(directory: config).catalog else {
      throw WriterHarnessError("the test configuration does not load")
    }
    let databasePath = directory + "/switches.db"
    writer = try Writer.start(
      databasePath: databasePath, configDirectory: config, catalog: catalog,
      access: AccessRules(daemonUID: getuid()), log: Log(), jobs: BlockingQueue<WriterJob>())
    initial = writer.snapshot
    saboteur = try SQLiteConnection(path: databasePath, flags: SQLITE_OPEN_READWRITE)
  }

  deinit {
    saboteur.close()
    let files = [
      "config/switchd.conf", "config/switches.d/10-test.conf", "switches.db", "switches.db-wal",
      "switches.db-shm",
    ]
    for name in files { unlink(directory + "/" + name) }
    rmdir(directory + "/config/switches.d")
    rmdir(directory + "/config")
    rmdir(directory)
  }

  /// Makes every insert into the change log for which `condition` holds abort.
  func failInserts(where condition: String) throws {
    try saboteur.execute(
      "CREATE TRIGGER injected_fault BEFORE INSERT ON changes WHEN \(condition) "
        + "BEGIN SELECT RAISE(ABORT, 'injected fault'); END")
  }

  func stopFailing() throws {
    try saboteur.execute("DROP TRIGGER injected_fault")
  }

  /// Runs the writer through `steps`, then stops it (which closes the store:
  /// a harness runs once). Returns what each step came back as.
  func run(_ steps: [Step]) throws -> [Outcome] {
    let jobs = BlockingQueue<WriterJob>()
    let caller = Caller(actor: .peer(uid: 1000, gid: 1000, pid: 1), isAdmin: false, mayWrite: true)
    var outcomes: [Outcome] = []
    var failure: (any Error)?
    var slot: UInt64 = 0
    func submitNext() {
      guard outcomes.count < steps.count, failure == nil else {
        jobs.push(.stop)
        return
      }
      let step = steps[outcomes.count]
      do {
        try step.before()
      } catch {
        failure = error
        jobs.push(.stop)
        return
      }
      jobs.push(
        contentsOf: step.writes.map { write in
          slot += 1
          let ticket = Ticket(connection: 1, slot: slot, part: 0, id: .number(JSONNumber(1)))
          return .write(ticket, key: write.key, write.operation, caller)
        })
    }
    submitNext()
    writer.run(jobs: jobs) { output in
      // Only a step's writes are answered (a prune or the stop is not).
      guard !output.answers.isEmpty, failure == nil else { return }
      do {
        let first = slot - UInt64(steps[outcomes.count].writes.count)
        outcomes.append(try outcome(of: output, firstSlot: first))
      } catch {
        failure = error
      }
      submitNext()
    }
    if let failure { throw failure }
    return outcomes
  }

  private func outcome(of output: WriterOutput, firstSlot: UInt64) throws -> Outcome {
    let snapshot = writer.snapshot
    let logged = try saboteur.textRows("SELECT revision FROM changes ORDER BY revision")
    var outcome = Outcome(
      changes: output.changes, records: snapshot.records, users: writer.users.values,
      revision: snapshot.revision, logged: logged.compactMap { Int64($0) })
    for (ticket, answer) in output.answers {
      let write = Int(ticket.slot - firstSlot)
      outcome.answeredWrites.append(write)
      guard case .write(let result) = answer else { throw WriterHarnessError("not a write answer") }
      switch result {
      case .success(let written): outcome.answered.append(written.record)
      case .failure(let error):
        guard error.code == .storageFailure else { throw WriterHarnessError("refused: \(error)") }
        outcome.failures.append(write)
      }
    }
    return outcome
  }
}

private struct WriterHarnessError: Error, CustomStringConvertible {
  var description: String
  init(_ description: String) { self.description = description }
}

private func writeText(_ path: String, _ text: String) throws {
  let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
  guard fd >= 0 else { throw WriterHarnessError("cannot write \(path)") }
  defer { close(fd) }
  let bytes = Array(text.utf8)
  guard bytes.withUnsafeBytes({ write(fd, $0.baseAddress, $0.count) }) == bytes.count else {
    throw WriterHarnessError("cannot write \(path)")
  }
}
