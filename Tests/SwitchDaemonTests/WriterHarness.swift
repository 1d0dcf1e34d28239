import CSQLite
import Glibc
import SwitchCore
import SwitchProtocol
import SwitchTestSupport

@testable import SwitchDaemon
@testable import SwitchStore

/// A `Writer` over a fresh database, driven the way the event loop drives
/// it (jobs in a queue, outputs to a callback), plus a second SQLite
/// connection to the same file that can make its commits fail.
///
/// Everything runs on the test's thread: each output's callback records the
/// step and queues the next one (or `.stop`), so the writer never crosses
/// threads and needs no lock here.
final class WriterHarness {
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
    var records: KeyTable<SwitchRecord>
    /// The writer's copy of every user's own values after the step.
    var users: UserValues = [:]
    var revision: Int64
    /// The revisions in the change log, as another reader of the file sees them.
    var logged: [Int64]
  }

  let directory: String
  /// The writer itself, for a test that runs it otherwise than `run` does.
  let writer: Writer
  let initial: (records: KeyTable<SwitchRecord>, revision: Int64, oldest: Int64?)
  private let saboteur: SQLiteConnection

  /// The switches of the harness's configuration unless a test gives its own.
  static let defaultSwitches =
    "[wifi]\nLabel=Wi-Fi\nDefault=on\n\n[bluetooth]\nLabel=Bluetooth\nDefault=off\n\n"
    + "[email]\nLabel=Email\nDefault=on\nScope=user\n"

  init(switches: String = WriterHarness.defaultSwitches) throws {
    directory = try makeTemporaryDirectory("switchd-writer-test")
    let config = directory + "/config"
    mkdir(config, 0o755)
    mkdir(config + "/switches.d", 0o755)
    try writeWholeFile(config + "/switchd.conf", "[Daemon]\nAdminGroup=\n")
    try writeWholeFile(config + "/switches.d/10-test.conf", switches)
    guard let catalog = ConfigLoader.load(directory: config).catalog else {
      throw FixtureError("the test configuration does not load")
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
    removeTree(directory)
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
  func run(_ steps: [Step], asAdmin: Bool = false) throws -> [Outcome] {
    let jobs = BlockingQueue<WriterJob>()
    let caller = Caller(
      actor: .peer(uid: asAdmin ? 0 : 1000, gid: asAdmin ? 0 : 1000, pid: 1), isAdmin: asAdmin,
      mayWrite: true)
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
      var writes: [WriterJob] = step.writes.map { write in
        slot += 1
        let ticket = Ticket(connection: 1, slot: slot, part: 0, id: .number(JSONNumber(1)))
        return .write(ticket, key: write.key, write.operation, caller)
      }
      jobs.push(taking: &writes)
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
      guard case .write(let result) = answer else { throw FixtureError("not a write answer") }
      switch result {
      case .success(let written): outcome.answered.append(written.record)
      case .failure(let error):
        guard error.code == .storageFailure else { throw FixtureError("refused: \(error)") }
        outcome.failures.append(write)
      }
    }
    return outcome
  }
}
