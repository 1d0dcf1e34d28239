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
  @Test func aFailedCommitChangesNothingAndTheNextOneWorks() throws {
    let harness = try WriterHarness()
    defer { harness.stop() }
    let before = harness.records()
    #expect(before["wifi"]?.state.checked == true)
    #expect(before["bluetooth"]?.state.checked == false)

    try harness.failInserts(where: "1")
    let alone = try harness.commit([("wifi", .toggle(ifRevision: nil))])
    #expect(alone.changes.isEmpty)
    #expect(alone.failures == [1])
    #expect(harness.records() == before)
    #expect(harness.revision() == 0)

    // A group that fails is retried one by one; each fails here too.
    let group = try harness.commit([
      ("wifi", .toggle(ifRevision: nil)), ("bluetooth", .set(checked: true, ifRevision: nil)),
    ])
    #expect(group.changes.isEmpty)
    #expect(group.failures == [1, 2])
    #expect(harness.records() == before)
    #expect(try harness.loggedRevisions().isEmpty)

    try harness.stopFailing()
    let next = try harness.commit([("wifi", .toggle(ifRevision: nil))])
    #expect(next.failures.isEmpty)
    #expect(next.changes.map(\.revision) == [1])
    #expect(next.changes.first?.previous == before["wifi"]?.state)
    #expect(next.records.first?.state.checked == false)
    #expect(next.records.first?.revision == 1)
    #expect(harness.records()["wifi"]?.revision == 1)
    #expect(try harness.loggedRevisions() == [1])
  }

  /// One write whose commit fails among good ones: the group fails, the
  /// writes are committed alone, and only that one is refused; the others
  /// get consecutive revisions and are answered in the order sent.
  @Test func oneFailingWriteInAGroupSinksOnlyItself() throws {
    let harness = try WriterHarness()
    defer { harness.stop() }
    try harness.failInserts(where: "NEW.key = 'bluetooth'")
    let output = try harness.commit([
      ("wifi", .toggle(ifRevision: nil)), ("bluetooth", .toggle(ifRevision: nil)),
      ("wifi", .toggle(ifRevision: nil)),
    ])
    #expect(output.failures == [2])
    #expect(output.changes.map(\.revision) == [1, 2])
    #expect(output.changes.map(\.key) == ["wifi", "wifi"])
    #expect(output.answeredSlots == [1, 2, 3])
    #expect(harness.records()["bluetooth"]?.revision == 0)
    #expect(harness.records()["wifi"]?.revision == 2)
    #expect(try harness.loggedRevisions() == [1, 2])

    try harness.stopFailing()
    let next = try harness.commit([("bluetooth", .toggle(ifRevision: nil))])
    #expect(next.failures.isEmpty)
    #expect(next.changes.map(\.revision) == [3])
    #expect(try harness.loggedRevisions() == [1, 2, 3])
  }
}

/// A `Writer` on its own thread over a fresh database, fed jobs the way the
/// event loop feeds it, plus a second SQLite connection to the same file
/// that can make the writer's commits fail.
private final class WriterHarness {
  let directory: String
  let databasePath: String
  private let writer: Writer
  private let jobs = BlockingQueue<WriterJob>()
  private let outputs = BlockingQueue<WriterOutput>()
  private let saboteur: SQLiteConnection
  private var nextSlot: UInt64 = 1
  private var stopped = false

  /// What one batch of writes came back as.
  struct Outcome {
    var changes: [Change]
    /// The slots answered StorageFailure.
    var failures: [UInt64]
    /// Every slot answered, in the order of the answers.
    var answeredSlots: [UInt64]
    /// The switches as answered, for the writes that succeeded.
    var records: [SwitchRecord]
  }

  init() throws {
    var template = Array("/tmp/switchd-writer-test-XXXXXX".utf8CString)
    guard let made = mkdtemp(&template) else { throw HarnessError("mkdtemp failed") }
    directory = String(cString: made)
    databasePath = directory + "/switches.db"
    let config = directory + "/config"
    mkdir(config, 0o755)
    mkdir(config + "/switches.d", 0o755)
    try writeText(config + "/switchd.conf", "[Daemon]\nAdminGroup=\n")
    try writeText(
      config + "/switches.d/10-test.conf",
      "[wifi]\nLabel=Wi-Fi\nDefault=on\n\n[bluetooth]\nLabel=Bluetooth\nDefault=off\n")
    guard let catalog = ConfigLoader.load(directory: config).catalog else {
      throw HarnessError("the test configuration does not load")
    }
    let started = try Writer.start(
      databasePath: databasePath, configDirectory: config, catalog: catalog, log: Log())
    writer = started.0
    saboteur = try SQLiteConnection(path: databasePath, flags: SQLITE_OPEN_READWRITE)
    let (writer, jobs, outputs) = (writer, jobs, outputs)
    startThread { writer.run(jobs: jobs) { outputs.push($0) } }
  }

  deinit {
    stop()
    saboteur.close()
    for name in [
      "config/switchd.conf", "config/switches.d/10-test.conf", "switches.db", "switches.db-wal",
      "switches.db-shm",
    ] {
      unlink(directory + "/" + name)
    }
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

  /// The revisions in the change log, as another reader of the file sees them.
  func loggedRevisions() throws -> [Int64] {
    try saboteur.textRows("SELECT revision FROM changes ORDER BY revision").compactMap {
      Int64($0)
    }
  }

  /// Sends `writes` as one batch (one group commit) and waits for the output.
  func commit(_ writes: [(key: String, operation: SwitchCore.Operation)]) throws -> Outcome {
    let caller = Caller(actor: .peer(uid: 1000, gid: 1000, pid: 1), isAdmin: false, mayWrite: true)
    var batch: [WriterJob] = []
    for write in writes {
      let ticket = Ticket(connection: 1, slot: nextSlot, part: 0, id: .number(JSONNumber(1)))
      nextSlot += 1
      batch.append(.write(ticket, key: write.key, write.operation, caller))
    }
    let first = nextSlot - UInt64(writes.count)
    jobs.push(contentsOf: batch)
    let output = try nextOutput()
    var outcome = Outcome(changes: output.changes, failures: [], answeredSlots: [], records: [])
    for (ticket, answer) in output.answers {
      outcome.answeredSlots.append(ticket.slot - first + 1)
      guard case .write(let result) = answer else { throw HarnessError("not a write answer") }
      switch result {
      case .success(let written): outcome.records.append(written.record)
      case .failure(let error):
        guard error.code == .storageFailure else { throw HarnessError("refused: \(error)") }
        outcome.failures.append(ticket.slot - first + 1)
      }
    }
    return outcome
  }

  /// The writer's own copy. Read between batches only: the writer thread is
  /// then waiting for jobs, and the queues' locks order its writes before this.
  func records() -> [String: SwitchRecord] { writer.snapshot.records }
  func revision() -> Int64 { writer.snapshot.revision }

  func stop() {
    guard !stopped else { return }
    stopped = true
    jobs.push(.stop)
    while let output = try? nextOutput(), !output.stopped {}
  }

  /// The writer's next output, polled with a generous deadline (a hung writer
  /// fails the test instead of hanging it).
  private func nextOutput() throws -> WriterOutput {
    let deadline = monotonicSeconds() + 60
    while monotonicSeconds() < deadline {
      if pending.isEmpty { pending = outputs.drain() }
      if !pending.isEmpty { return pending.removeFirst() }
      usleep(1000)  // poll interval, not a wait for something to settle
    }
    throw HarnessError("the writer gave no output within 60 s")
  }
  private var pending: [WriterOutput] = []
}

private struct HarnessError: Error, CustomStringConvertible {
  var description: String
  init(_ description: String) { self.description = description }
}

private func monotonicSeconds() -> Double {
  var ts = timespec()
  clock_gettime(CLOCK_MONOTONIC, &ts)
  return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
}

private func writeText(_ path: String, _ text: String) throws {
  let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
  guard fd >= 0 else { throw HarnessError("cannot write \(path)") }
  defer { close(fd) }
  let bytes = Array(text.utf8)
  guard bytes.withUnsafeBytes({ write(fd, $0.baseAddress, $0.count) }) == bytes.count else {
    throw HarnessError("cannot write \(path)")
  }
}
