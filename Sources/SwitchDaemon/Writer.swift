import SwitchCore
import SwitchProtocol
import SwitchStore

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
  private let store: SwitchStore
  private let configDirectory: String
  private let log: Log
  private(set) var catalog: Catalog
  /// The settings the daemon started with: its socket and database stay
  /// these until it restarts, whatever a reload reads.
  private let startSettings: DaemonSettings
  private(set) var records: [String: SwitchRecord]
  /// Every user's own values of user-scope switches (`Writer+Users.swift`).
  var users = WriterUserValues()
  var revision: Int64
  private var oldestRetained: Int64?
  /// The revision the switch rows hold (`SwitchStore.checkpoint`), and the
  /// keys changed since: their rows are what the next checkpoint writes.
  private var checkpointed: Int64
  private var changedSinceCheckpoint: Set<String> = []
  /// How long a group may wait for writes that are surely coming.
  private var pacer = GroupCommitPacer()
  /// How many changes may wait in the log before the rows are brought up to
  /// date: what a start replays at most (about a millisecond's work).
  static let checkpointInterval: Int64 = 1024

  /// Opens the database, loads every switch, and applies `catalog`: rows for
  /// new switches, policy changes with `cause: policy`.
  /// - Returns: the writer and who administers and writes under the configuration it applied.
  static func start(
    databasePath: String, configDirectory: String, catalog: Catalog, log: Log
  ) throws -> (Writer, AccessRules) {
    let store = try SwitchStore(path: databasePath)
    var records: [String: SwitchRecord] = [:]
    for record in try store.loadSwitches() { records[record.key] = record }
    // After a crash the rows lag the log; bring them up to date once, so from
    // here on the writer knows every key changed since the checkpoint.
    if try store.checkpointRevision() < store.currentRevision() { try store.checkpoint() }
    let userValues = try store.loadUserValues()
    let writer = Writer(
      store: store, configDirectory: configDirectory, catalog: catalog, records: records,
      revision: try store.currentRevision(), oldestRetained: try store.oldestRetainedRevision(),
      checkpointed: try store.checkpointRevision(), log: log)
    writer.users.values = userValues
    let applied = try writer.apply(catalog)
    return (writer, applied.update.access)
  }

  private init(
    store: SwitchStore, configDirectory: String, catalog: Catalog,
    records: [String: SwitchRecord], revision: Int64, oldestRetained: Int64?, checkpointed: Int64,
    log: Log
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
  }

  /// The switches as the writer holds them (for the loop's first copy).
  var snapshot: (records: [String: SwitchRecord], revision: Int64, oldest: Int64?) {
    (records, revision, oldestRetained)
  }

  /// Serves jobs until `.stop`, handing each output to `deliver`.
  func run(jobs: BlockingQueue<WriterJob>, deliver: (WriterOutput) -> Void) {
    while true {
      let batch = takeGroup(from: jobs)
      var writes: [(Ticket, String, Operation, Caller)] = []
      var stopping = false
      func flushWrites() {
        if writes.isEmpty { return }
        deliver(commitGroup(writes))
        writes.removeAll(keepingCapacity: true)
      }
      for job in batch {
        switch job {
        case .write(let ticket, let key, let operation, let caller):
          writes.append((ticket, key, operation, caller))
        case .reload(let ticket):
          flushWrites()
          deliver(reload(ticket))
        case .stop:
          stopping = true
        }
      }
      flushWrites()
      if stopping {
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

  // MARK: Writes

  /// The jobs of the next group: what is queued, plus the writes of the
  /// last group's writers that are on their way (`GroupCommitPacer`).
  private func takeGroup(from jobs: BlockingQueue<WriterJob>) -> [WriterJob] {
    var batch = jobs.takeAll()
    var awaited = pacer.awaited(present: Self.writers(of: batch))
    guard !awaited.isEmpty, !batch.contains(where: \.isControl) else { return batch }
    let deadline = monotonicSeconds() + pacer.budgetSeconds
    while !awaited.isEmpty && monotonicSeconds() < deadline {
      let more = jobs.takeAll(before: deadline)
      batch += more
      awaited.subtract(Self.writers(of: more))
      if more.contains(where: \.isControl) { break }
    }
    return batch
  }

  private static func writers(of jobs: [WriterJob]) -> Set<UInt64> {
    var connections = Set<UInt64>()
    for case .write(let ticket, _, _, _) in jobs { connections.insert(ticket.connection) }
    return connections
  }

  /// Decides every write against the current copy, then commits all the
  /// changes in one transaction. If the commit fails, the copy is restored
  /// and each write is tried alone, so every answer tells the truth.
  private func commitGroup(_ writes: [(Ticket, String, Operation, Caller)]) -> WriterOutput {
    let time = wallClockMilliseconds()
    var changes: [Change] = []
    var answers: [(Ticket, WriterOutput.Answer)] = []
    // What each change replaced, in order; restored newest first, so the oldest wins.
    var undo: [SwitchRecord] = []
    let firstRevision = revision
    for (ticket, key, operation, caller) in writes {
      if operation.changesValue && catalog.switches[key]?.scope == .user {
        if let change = writeUserValue(ticket, key, operation, caller, time: time, &answers) {
          changes.append(change)
        }
        continue
      }
      let decision = Rules.decide(
        operation, key: key, definition: catalog.switches[key], record: records[key],
        policy: catalog.policies[key], caller: caller)
      let decided: Decision
      switch decision {
      case .failure(let refusal):
        answers.append((ticket, .write(.failure(RPCError(refusal)))))
        continue
      case .success(let made): decided = made
      }
      guard let next = decided.next else {
        answers.append((ticket, .write(.success(WriteOutcome(decided, changed: false)))))
        continue
      }
      undo.append(decided.record)
      revision += 1
      let change = Change(
        revision: revision, time: time, key: key, cause: operation.cause, actor: caller.actor,
        state: next, previous: decided.record.state)
      let updated = SwitchRecord(key: key, state: next, revision: revision, changedAt: time)
      records[key] = updated
      changes.append(change)
      answers.append((ticket, .write(.success(WriteOutcome(decided, changed: true, updated)))))
    }
    if changes.isEmpty {
      pacer.committedNothing()
      return WriterOutput(
        catalog: nil, changes: [], answers: answers, oldestRetained: oldestRetained)
    }
    do {
      let started = monotonicSeconds()
      try store.commit(changes)
      pacer.committed(
        Set(writes.map { $0.0.connection }), seconds: monotonicSeconds() - started)
      for change in changes where change.user == nil { changedSinceCheckpoint.insert(change.key) }
      users.committed()
      if oldestRetained == nil { oldestRetained = changes[0].revision }
      return WriterOutput(
        catalog: nil, changes: changes, answers: answers, oldestRetained: oldestRetained)
    } catch {
      for record in undo.reversed() { records[record.key] = record }
      users.rollBack()
      revision = firstRevision
      log.rateLimited(.error, cause: "commit", "a commit failed, nothing changed: \(error)")
      if writes.count == 1 {
        let failure = RPCError.storageFailure("\(error)")
        return WriterOutput(
          catalog: nil, changes: [], answers: [(writes[0].0, .write(.failure(failure)))],
          oldestRetained: oldestRetained)
      }
      var merged = WriterOutput(catalog: nil, changes: [], answers: [])
      for write in writes {
        let alone = commitGroup([write])
        merged.changes += alone.changes
        merged.answers += alone.answers
      }
      merged.oldestRetained = oldestRetained
      return merged
    }
  }

  // MARK: Configuration

  /// Re-reads the configuration directory and applies it; the output
  /// carries the answer (when asked by `reload`) and the record `status` shows.
  private func reload(_ ticket: Ticket?) -> WriterOutput {
    let time = wallClockMilliseconds()
    let loaded = ConfigLoader.load(directory: configDirectory)
    for diagnostic in loaded.diagnostics where diagnostic.severity == .warning {
      log.warning("\(diagnostic)")
    }
    guard let next = loaded.catalog else {
      for error in loaded.errors { log.error("reload refused: \(error)") }
      return reloadFailed(
        ticket, .invalidConfig(loaded.errors),
        ReloadRecord(time: time, result: .refused, errors: loaded.errors))
    }
    let restartRequired = Rules.settingsNeedingRestart(from: startSettings, to: next.settings)
    do {
      let applied = try apply(next)
      var output = WriterOutput(
        catalog: applied.update, changes: applied.changes, answers: [],
        oldestRetained: oldestRetained)
      let summary = ReloadSummary(
        switches: next.switches.count, policies: next.policyCount,
        restartRequired: restartRequired)
      if let ticket { output.answers = [(ticket, .reload(.success(summary)))] }
      output.reload = ReloadRecord(time: time, result: .applied)
      log.notice(
        "reloaded \(configDirectory): \(summary.switches) switches, \(summary.policies) policies, "
          + "\(output.changes.count) changed by policy")
      if !restartRequired.isEmpty {
        log.warning(
          "reload: \(restartRequired.joined(separator: ", ")) changed; "
            + "that takes effect only when switchd restarts")
      }
      return output
    } catch {
      log.error("reload failed, the running configuration stays: \(error)")
      return reloadFailed(
        ticket, .storageFailure("\(error)"),
        ReloadRecord(time: time, result: .failed, errors: ["\(error)"]))
    }
  }

  private func reloadFailed(
    _ ticket: Ticket?, _ error: RPCError, _ record: ReloadRecord
  ) -> WriterOutput {
    var output = WriterOutput(
      catalog: nil, changes: [], answers: ticket.map { [($0, .reload(.failure(error)))] } ?? [])
    output.reload = record
    return output
  }

  /// Makes `next` the configuration: creates rows for new switches at their
  /// default, and applies the policies as changes (one revision per switch
  /// whose State changes). On failure the old configuration stays in force;
  /// rows already inserted for new switches hold only their defaults.
  private func apply(_ next: Catalog) throws -> (update: CatalogUpdate, changes: [Change]) {
    let time = wallClockMilliseconds()
    var newRecords: [SwitchRecord] = []
    var working = records
    for key in next.sortedKeys where records[key] == nil {
      guard let definition = next.switches[key] else { continue }
      let record = SwitchRecord(key: key, state: SwitchState(checked: definition.defaultChecked))
      newRecords.append(record)
      working[key] = record
    }
    var changes: [Change] = []
    var nextRevision = revision
    for key in next.sortedKeys {
      guard let current = working[key] else { continue }
      guard let definition = next.switches[key] else { continue }
      let target = Rules.applyPolicy(next.policies[key], to: current.state, definition: definition)
      if target == current.state { continue }
      nextRevision += 1
      changes.append(
        Change(
          revision: nextRevision, time: time, key: key, cause: .policy, actor: .policy,
          state: target, previous: current.state))
      working[key] = SwitchRecord(key: key, state: target, revision: nextRevision, changedAt: time)
    }
    if !newRecords.isEmpty { try store.insertNew(newRecords) }
    if !changes.isEmpty {
      try store.commit(changes)
      for change in changes { changedSinceCheckpoint.insert(change.key) }
    }
    records = working
    revision = nextRevision
    catalog = next
    if oldestRetained == nil, let first = changes.first { oldestRetained = first.revision }
    let update = CatalogUpdate(
      catalog: next, access: AccessRules.resolve(next.settings, log: log), newRecords: newRecords)
    return (update, changes)
  }

  // MARK: Checkpoints and retention

  /// Writes the rows of the switches changed since the last checkpoint. A
  /// failure only means a longer replay at the next start: it is retried later.
  private func checkpoint() {
    do {
      try store.checkpoint(
        changedSinceCheckpoint.compactMap { records[$0] }, userRows: users.rowsToCheckpoint,
        at: revision)
      changedSinceCheckpoint.removeAll(keepingCapacity: true)
      users.checkpointed()
      checkpointed = revision
    } catch {
      log.rateLimited(.warning, cause: "checkpoint", "updating the switch rows failed: \(error)")
    }
  }

  /// Prunes the log once it exceeds `HistoryRetention` by a margin, so
  /// pruning runs now and then in chunks, not after every commit.
  private func prune() -> WriterOutput? {
    let retention = catalog.settings.historyRetention
    guard let oldest = oldestRetained else { return nil }
    let kept = revision - oldest + 1
    let margin = Int64(min(1000, max(1, retention / 10)))
    guard kept > Int64(retention) + margin else { return nil }
    do {
      if revision > checkpointed { checkpoint() }  // the rows must hold what goes
      _ = try store.prune(keep: retention)
      oldestRetained = try store.oldestRetainedRevision()
      return WriterOutput(catalog: nil, changes: [], answers: [], oldestRetained: oldestRetained)
    } catch {
      log.rateLimited(.warning, cause: "prune", "pruning the change log failed: \(error)")
      return nil
    }
  }
}
