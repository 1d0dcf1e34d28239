import SwitchCore
import SwitchProtocol
import SwitchStore
import SwitchSystem

/// The one writer: owns the read-write SQLite connection and the
/// authoritative copy of every switch, decides each write with SwitchCore's
/// rules and commits them.
///
/// Group commit: it takes every job queued since its last commit and
/// commits them in one transaction with one sync, so concurrent writers
/// share the cost of durability. Jobs are served in the order queued, so a
/// client's pipelined writes commit in the order it sent them. Runs on its
/// own thread; the event loop never waits for the disk.
final class Writer {
  let store: SwitchStore
  let configDirectory: String
  let log: Log
  var catalog: Catalog
  /// The settings the daemon started with: its socket and database stay
  /// these until it restarts, whatever a reload reads.
  let startSettings: DaemonSettings
  var records: KeyTable<SwitchRecord>
  /// Every user's own values of user-scope switches (`Writer+Users.swift`).
  var users = WriterUserValues()
  var revision: Int64
  var oldestRetained: Int64?
  /// No watch resumes from before this revision: the database was
  /// restored from a backup, and the log skips numbers below it
  /// (`SwitchStore.markRestored`); 0 if never.
  var resumeFloor: Int64 = 0
  /// The revision the switch rows hold (`SwitchStore.checkpoint`): the next
  /// checkpoint writes the rows of the records newer than it, and of
  /// `rowsWithoutRevision`, whose records changed without a revision.
  var checkpointed: Int64
  var rowsWithoutRevision: Set<String> = []
  /// The start could not copy the log's tail into the rows (a full disk):
  /// the next checkpoint does it first, with the users' values, which the
  /// writer does not hold as changed since (`SwitchStore.checkpointFromLog`).
  var rowsLagTheLog = false
  /// How long a group may wait for writes that are surely coming.
  var pacer = GroupCommitPacer()
  /// The arrays a group needs only while it is taken and decided.
  var groupBuffers = GroupBuffers()
  /// Outputs' arrays the loop has emptied, for the next groups (nil: none come back).
  var outputSpares: BlockingQueue<WriterOutput.Spare>?
  /// How many changes may wait in the log before the rows are brought up to
  /// date: what a start replays at most (a few milliseconds' work). A
  /// checkpoint writes one row per switch changed, however often each
  /// changed, so a longer interval shares it among more writes (1,024 cost
  /// a toggle ~0.18k instructions with 1,000 switches written in turn).
  static let checkpointInterval: Int64 = 4096
  /// Apply commands under way (Writer+Apply.swift) and the threads that run them.
  var applying = ApplyBook()
  let pool: ApplyPool
  /// Where the newest revision is kept beside the database (the lock file).
  var announced: AnnouncedRevision?
  /// Set once a commit found the database file moved: said once in the log.
  var reportedFilesMoved = false
  /// Commits that failed since the last that worked: the log says when
  /// writes are stored again (an audit: after a full disk it never did).
  var failedCommits = 0
  /// Switches whose command ran for a deadline's ending whose commit then
  /// failed and which is left to its retry (`isRetriedEnding`): the
  /// effective value the system holds, not the record. Until a command
  /// runs for the switch again, a change committed meanwhile that gives
  /// another value runs the command for it (`reapplyWhereSystemIsAhead`;
  /// a `confirm` during the pause kept the tried value in the record and
  /// the revert's in the system, a review).
  var systemAhead: [String: Bool] = [:]
  /// The `ExecWatch=` programs running, by key, and the thread that runs
  /// `ExecCheck=` programs (Writer+ReadBack.swift).
  var watches: [String: WatchThread] = [:]
  var checks: CheckThread
  /// Readings not yet told to the loop.
  var unreported: [String: Bool?] = [:]
  /// The last reading of each switch told to the loop (nil: unknown).
  var observed: [String: Bool?] = [:]
  /// Where the read-back threads post what they read (set at start).
  var jobs: BlockingQueue<WriterJob>?
  /// What the drift rules remember of each switch that reads back (Writer+Drift.swift).
  var drift: [String: Drift.Memory] = [:]
  /// Switches whose adopted value was refused because a dependent's apply
  /// failed, with why: `driftApplyEnded` makes each `invalid`.
  var adoptionFailures: [String: String] = [:]
  /// When the apply command of each switch last ended (`noteApplyEnded`),
  /// taken by `driftApplyEnded` as the apply's end.
  var applyEndTimes: [String: Int64] = [:]
  /// `status.readBack`, and whether the loop has the latest.
  var readBackReports: [String: ReadBackReport] = [:]
  var readBackReportsChanged = false
  /// Every switch's deadlines, and the timer armed for the earliest (Writer+Deadlines.swift).
  var deadlines = DeadlineIndex()
  var deadlineTimers: DeadlineTimers?
  /// The configuration as read from the files, before its scheduled
  /// policies are taken as they stand now (Writer+Schedule.swift), and when
  /// one of them next starts or ends a window.
  var configured: (catalog: Catalog, access: AccessRules)?
  var scheduleChangesAt: Int64?
  /// This boot's id, read once: a tried change of another boot is reverted
  /// (and why it could not be read: `start` warns).
  let boot = currentBootID()

  /// Opens the database, loads every switch, and applies `catalog`: rows for
  /// new switches, policy changes with `cause: policy`.
  /// `access` is who administers and writes under `catalog`; `announced`
  /// keeps the newest revision beside the database, to say at start when
  /// the database holds fewer. The results of apply commands come back on `jobs`.
  static func start(
    databasePath: String, configDirectory: String, catalog: Catalog, access: AccessRules,
    log: Log, jobs: BlockingQueue<WriterJob>,
    announced: (record: AnnouncedRevision, previous: Int64?)? = nil
  ) throws -> Writer {
    let store = try SwitchStore(path: databasePath, healthCheck: .alongside)
    // The file's health check reads every page: on the other core while
    // this thread loads the switches, and passed before the first write.
    let health = store.healthCheckPending ? HealthCheckThread(path: databasePath) : nil
    do {
      return try start(
        store, databasePath: databasePath, configDirectory: configDirectory, catalog: catalog,
        access: access, log: log, jobs: jobs, announced: announced, health: health)
    } catch {
      // Damage found by the check explains whatever the load ran into.
      let damage = health?.finish()
      store.close()
      throw damage ?? error
    }
  }

  private static func start(
    _ store: SwitchStore, databasePath: String, configDirectory: String, catalog: Catalog,
    access: AccessRules, log: Log, jobs: BlockingQueue<WriterJob>,
    announced: (record: AnnouncedRevision, previous: Int64?)?, health: HealthCheckThread?
  ) throws -> Writer {
    func healthChecked() throws {
      guard let health, store.healthCheckPending else { return }
      if let damage = health.finish() { throw damage }
      store.healthCheckPassed()
    }
    if let previous = announced?.previous {
      let found = try store.currentRevision()
      if found < previous {
        // Numbered on from above what was announced: a revision a client
        // saw never names another change, and its `since` is refused.
        try healthChecked()
        try store.markRestored(at: previous + 1)
        log.warning(
          "the database \(databasePath) is at revision \(found), but switchd announced revision "
            + "\(previous) before: it was restored from an older backup, replaced or emptied. "
            + "Its revision is now \(previous + 1) (revisions \(found + 1)-\(previous) are not "
            + "used again), and a watcher that resumes with a \"since\" below \(previous + 1) is "
            + "refused with HistoryCompacted and must read again")
      }
    }
    var records: KeyTable<SwitchRecord> = [:]
    // The catalog's Strings for its long keys, in every table (`KeyInterner`).
    for record in try store.loadSwitches(sharing: catalog.sharedKeys) {
      records[record.hashedKey] = record
    }
    // After a crash the rows lag the log; bring them up to date once, so from
    // here on the writer knows every key changed since the checkpoint. On a
    // full disk that fails, and need not stop the start: the records above
    // are the log's, and the next checkpoint copies the log first
    // (`rowsLagTheLog`). (An audit: after a crash on a full disk switchd
    // did not start, and no read was served until space was freed.) Any
    // failure of the copy, as a later checkpoint's: the file passed its
    // health check above, and whatever keeps it from being written then
    // refuses the writes, while reads are served (README, Durability). A
    // start that must commit (a new switch, a policy's change) still fails.
    var copyFailure: StoreError?
    if try store.checkpointRevision() < store.currentRevision() {
      try healthChecked()
      do throws(StoreError) {
        try store.checkpointFromLog()
      } catch {
        copyFailure = error
      }
    }
    let userValues = try store.loadUserValuesAndDeadlines(sharing: catalog.sharedKeys)
    try healthChecked()
    let writer = Writer(
      store: store, configDirectory: configDirectory, catalog: catalog, records: records,
      revision: try store.currentRevision(), oldestRetained: try store.oldestRetainedRevision(),
      checkpointed: try store.checkpointRevision(), log: log,
      pool: ApplyPool(results: jobs, log: log),
      checks: CheckThread(jobs: jobs, log: log))
    if let copyFailure {
      writer.rowsLagTheLog = true
      log.warning(
        "bringing the switch rows up to date from the change log failed (\(copyFailure)); "
          + "the switches are read from the log, and the next checkpoint tries again")
    }
    writer.users.load(
      userValues.values,
      withDeadlines: userValues.withDeadlines.map { UserKey(hashedKey: $0.key, user: $0.user) })
    // Every switch with a command is applied: the machine may have booted,
    // or switchd crashed between a command and its commit.
    _ = try writer.apply(
      writer.inEffectNow(catalog, access), access: access, reconcilingEvery: true)
    if let problem = writer.boot.problem {
      log.warning(
        "cannot read this boot's id (\(problem)): every start looks like a reboot, so a tried "
          + "change is reverted at each (rule 20); let switchd read \(bootIDPath)")
    }
    writer.startReadBack(jobs: jobs)
    writer.startDeadlines(jobs: jobs)
    writer.announced = announced?.record
    writer.announced?.record(writer.revision)
    writer.resumeFloor = try store.resumeFloor()
    writer.store.releaseCachedPages()
    return writer
  }

  private init(
    store: SwitchStore, configDirectory: String, catalog: Catalog,
    records: KeyTable<SwitchRecord>, revision: Int64, oldestRetained: Int64?, checkpointed: Int64,
    log: Log, pool: ApplyPool, checks: CheckThread
  ) {
    self.store = store
    self.configDirectory = configDirectory
    self.catalog = catalog
    self.startSettings = catalog.settings
    self.records = records
    self.revision = revision
    self.oldestRetained = oldestRetained
    self.checkpointed = checkpointed
    self.log = log
    self.pool = pool
    self.checks = checks
  }

  /// The switches as the writer holds them (for the loop's first copy).
  var snapshot: (records: KeyTable<SwitchRecord>, revision: Int64, oldest: Int64?) {
    (records, revision, oldestRetained)
  }

  /// Serves jobs until `.stop`, handing each output to `deliver`. Handed
  /// over, not lent: the loop then holds the only reference to its arrays,
  /// and moving the answers and changes out of them copies nothing (with
  /// the writer's copy still alive, each was copied on write, callgrind).
  func run(jobs: BlockingQueue<WriterJob>, deliver handOff: (consuming WriterOutput) -> Void) {
    func deliver(_ output: consuming WriterOutput) {
      // Recorded before the loop announces it (the record may lag, never lead).
      if !output.changes.isEmpty { announced?.record(revision) }
      rearmDeadlines()
      let drifted = drift.isEmpty ? [] : driftStateChanged(output.changes)
      handOff(output)
      if !drifted.isEmpty { deliver(commitGroup(drifted)) }
    }
    if let output = applyBookOutput() { deliver(output) }
    // Deadlines that passed while switchd was stopped, before any write.
    let due = dueExpiries()
    if !due.isEmpty { deliver(commitGroup(due)) }
    // Kept from group to group, emptied with their capacity: an array made
    // and freed per group cost ~0.4k instructions (callgrind).
    var batch: [WriterJob] = []
    var items: [GroupItem] = []
    while true {
      batch.empty()
      if let heldBack = applying.takeHeldBack() {
        batch = heldBack
      } else {
        takeGroup(from: jobs, into: &batch)
      }
      // Grown once, not doubled item by item (callgrind).
      items.reserveCapacity(batch.count)
      var stopping = false
      /// Switches whose apply command ended in this batch: the drift rules
      /// judge them once their outcome is committed.
      var ended: [String] = []
      func flushItems() {
        if !items.isEmpty {
          deliver(commitGroup(&items))
          items.empty()
        }
        guard !ended.isEmpty else { return }
        let follow = driftApplyEnded(ended)
        ended.removeAll()
        if !follow.isEmpty { deliver(commitGroup(follow)) }
      }
      for index in batch.indices {
        // Moved out, not copied out and released with the batch.
        let job = batch.moveOut(at: index, leaving: .stop)
        // Behind a reload or stop that waits for commands, everything waits
        // but the commands' results and the writes that need no command.
        if applying.isHoldingBack, !job.isApplied, !mayPassHeldBack(job) {
          applying.heldBack.append(job)
          continue
        }
        // Consumed: its payload moves into the item, not copied out of it.
        switch consume job {
        case .write(let ticket, let key, let operation, let caller, let lasting):
          items.append(
            .write(
              WriteRequest(
                ticket: ticket, key: key, operation: operation, caller: caller, lasting: lasting)))
        case .deadlinesDue:
          items += dueExpiries()
          // Behind the writes already queued, as a reload would be.
          if scheduleIsDue { jobs.push(.reload(nil, .scheduled)) }
        case .connectionClosed(let connection):
          items += makerLeft(connection)
        case .observed(let key, let state, let source, let time):
          observe(key, state, source: source, at: time)
          // Judged against what is committed: the writes before it first.
          flushItems()
          if let item = judgeReading(key, state, source: source, at: time) {
            deliver(commitGroup([item]))
          }
        case .watchEnded(let key, let reason):
          watchEnded(key, reason: reason)
        case .reapplyDue(let key, let generation):
          flushItems()
          reapplyIfStillDrifted(key, generation: generation)
        case .settled(let key):
          flushItems()
          if let item = judgeSettled(key) { deliver(commitGroup([item])) }
        case .applied(let result):
          let keys = applying.keys(of: result.id)
          // The command's end, taken before the check after it is asked
          // for: that check starts after it, so it is never taken for a
          // reading from before the apply (the end of the commit, later,
          // made it look "late", and an apply that did not take went unseen).
          noteApplyEnded(keys)
          checkAfterApply(keys)
          ended.append(contentsOf: keys)
          guard let item = applying.resume(result) else { break }
          if case .reload(let parked, let failures) = item {
            // Its switches are judged once the reload has committed and
            // released them (still busy here, they would be skipped and
            // their drift memory left "applying" for good).
            let judgeAfterRelease = ended
            ended.removeAll()
            flushItems()
            deliver(
              finishReload(
                parked.ticket, parked.next, parked.access, ran: (parked.applied, failures),
                scheduled: parked.scheduled, heldBy: parked.id, restoring: parked.before))
            items.append(.release(parked.id))
            ended = judgeAfterRelease
          } else {
            items.append(item)
          }
        case .reload(let ticket, let read):
          flushItems()
          if !applying.busy.isEmpty {
            applying.heldBack.append(.reload(ticket, read))
            continue
          }
          // An earlier reload's answer, ready since the flush freed its
          // last job, goes first: this one may wait for jobs of its own in
          // the same one place (a review: the earlier answer was replaced,
          // and its connection waited for it for good).
          if let output = applyBookOutput() { deliver(output) }
          deliver(reload(ticket, read))
        case .stop:
          flushItems()
          if !applying.busy.isEmpty {
            // A slow stop explained (the apply audit). Said again if the
            // jobs held back with it start commands of their own.
            let keys = applying.busy.keys.sorted().joined(separator: ", ")
            log.notice("stopping once the apply commands under way end (\(keys))")
            applying.heldBack.append(.stop)
            continue
          }
          stopping = true
        }
      }
      flushItems()
      if let output = applyBookOutput() { deliver(output) }
      if let output = readingsOutput() { deliver(output) }
      if stopping {
        stopReadBack()
        stopDeadlines()
        pool.stop()
        // The next start then replays nothing.
        checkpoint()
        store.close()
        deliver(WriterOutput(catalog: nil, changes: [], answers: [], stopped: true))
        return
      }
      if revision - checkpointed >= Self.checkpointInterval { checkpoint() }
      if let pruned = prune() { deliver(pruned) }
    }
  }
}
