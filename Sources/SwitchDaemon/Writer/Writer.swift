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
  private let store: SwitchStore
  private let configDirectory: String
  let log: Log
  var catalog: Catalog
  /// The settings the daemon started with: its socket and database stay
  /// these until it restarts, whatever a reload reads.
  private let startSettings: DaemonSettings
  var records: [String: SwitchRecord]
  /// Every user's own values of user-scope switches (`Writer+Users.swift`).
  var users = WriterUserValues()
  var revision: Int64
  var oldestRetained: Int64?
  /// The revision the switch rows hold (`SwitchStore.checkpoint`), and the
  /// keys changed since: their rows are what the next checkpoint writes.
  private var checkpointed: Int64
  private var changedSinceCheckpoint: Set<String> = []
  /// How long a group may wait for writes that are surely coming.
  private var pacer = GroupCommitPacer()
  /// How many changes may wait in the log before the rows are brought up to
  /// date: what a start replays at most (about a millisecond's work).
  static let checkpointInterval: Int64 = 1024
  /// Apply commands under way (Writer+Apply.swift) and the threads that run them.
  var applying = ApplyBook()
  let pool: ApplyPool
  /// Where the newest revision is kept beside the database (the lock file).
  var announced: AnnouncedRevision?
  /// Set once a commit found the database file moved: said once in the log.
  private var reportedFilesMoved = false

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
    let store = try SwitchStore(path: databasePath)
    if let previous = announced?.previous {
      let found = try store.currentRevision()
      if found < previous {
        log.warning(
          "the database \(databasePath) is at revision \(found), but switchd announced revision "
            + "\(previous) before: it was restored from an older backup, replaced or emptied. "
            + "Revisions \(found + 1)-\(previous) will be used again for new changes; a watcher "
            + "that resumes with a \"since\" beyond \(found) is refused and must read again")
      }
    }
    var records: [String: SwitchRecord] = [:]
    for record in try store.loadSwitches() { records[record.key] = record }
    // After a crash the rows lag the log; bring them up to date once, so from
    // here on the writer knows every key changed since the checkpoint.
    if try store.checkpointRevision() < store.currentRevision() { try store.checkpoint() }
    let userValues = try store.loadUserValues()
    let writer = Writer(
      store: store, configDirectory: configDirectory, catalog: catalog, records: records,
      revision: try store.currentRevision(), oldestRetained: try store.oldestRetainedRevision(),
      checkpointed: try store.checkpointRevision(), log: log, pool: ApplyPool(results: jobs))
    writer.users.values = userValues
    // Every switch with a command is applied: the machine may have booted,
    // or switchd crashed between a command and its commit.
    _ = try writer.apply(catalog, access: access, reconcilingEvery: true)
    writer.announced = announced?.record
    writer.announced?.record(writer.revision)
    return writer
  }

  private init(
    store: SwitchStore, configDirectory: String, catalog: Catalog,
    records: [String: SwitchRecord], revision: Int64, oldestRetained: Int64?, checkpointed: Int64,
    log: Log, pool: ApplyPool
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
  }

  /// The switches as the writer holds them (for the loop's first copy).
  var snapshot: (records: [String: SwitchRecord], revision: Int64, oldest: Int64?) {
    (records, revision, oldestRetained)
  }

  /// Serves jobs until `.stop`, handing each output to `deliver`.
  func run(jobs: BlockingQueue<WriterJob>, deliver handOff: (WriterOutput) -> Void) {
    func deliver(_ output: WriterOutput) {
      // Recorded before the loop announces it (the record may lag, never lead).
      if !output.changes.isEmpty { announced?.record(revision) }
      handOff(output)
    }
    if let output = applyBookOutput() { deliver(output) }
    while true {
      let batch = applying.takeHeldBack() ?? takeGroup(from: jobs)
      var items: [GroupItem] = []
      var stopping = false
      func flushItems() {
        if items.isEmpty { return }
        deliver(commitGroup(items))
        items.removeAll(keepingCapacity: true)
      }
      for job in batch {
        // Behind a reload or stop that waits for commands, everything waits
        // but the commands' results and the writes that need no command.
        if applying.isHoldingBack, !job.isApplied, !mayPassHeldBack(job) {
          applying.heldBack.append(job)
          continue
        }
        switch job {
        case .write(let ticket, let key, let operation, let caller):
          items.append(
            .write(WriteRequest(ticket: ticket, key: key, operation: operation, caller: caller)))
        case .applied(let result):
          guard let item = applying.resume(result) else { break }
          if case .reload(let parked, let failures) = item {
            flushItems()
            deliver(
              finishReload(
                parked.ticket, parked.next, parked.access, ran: (parked.applied, failures)))
            items.append(.release(parked.id))
          } else {
            items.append(item)
          }
        case .reload(let ticket, let read):
          flushItems()
          if !applying.busy.isEmpty {
            applying.heldBack.append(job)
            continue
          }
          deliver(reload(ticket, read))
        case .stop:
          flushItems()
          if !applying.busy.isEmpty {
            applying.heldBack.append(job)
            continue
          }
          stopping = true
        }
      }
      flushItems()
      if let output = applyBookOutput() { deliver(output) }
      if stopping {
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

  /// Whether `job` may go on while a reload or stop waits for commands
  /// (rule 16: writes of switches without a command never wait for one):
  /// a write that no command can be run for under the running
  /// configuration, from a connection with nothing held back (so that each
  /// connection's writes keep their order). It is decided as if it had come
  /// before the reload, which has not been answered yet.
  private func mayPassHeldBack(_ job: WriterJob) -> Bool {
    guard case .write(let ticket, let key, let operation, _) = job,
      !applying.heldBack.contains(where: { $0.connection == ticket.connection })
    else { return false }
    if writesUserValue(key, operation) { return true }
    return catalog.dependencies.reach(of: key).allSatisfy { catalog.switches[$0]?.apply == nil }
  }

  /// Whether `operation` writes the caller's own value of `key` (a
  /// user-scope switch): it never runs a command nor touches dependents.
  private func writesUserValue(_ key: String, _ operation: Operation) -> Bool {
    operation.changesValue && catalog.switches[key]?.scope == .user
  }

  static func writers(of jobs: [WriterJob]) -> Set<UInt64> {
    var connections = Set<UInt64>()
    for case .write(let ticket, _, _, _) in jobs { connections.insert(ticket.connection) }
    return connections
  }

  /// Decides every item against the current copy, then commits all the
  /// changes in one transaction. If the commit fails, the copy is restored
  /// and each item is tried alone, so every answer tells the truth.
  /// A write whose apply command must run first is parked (Writer+Apply.swift)
  /// and comes back in a later group.
  private func commitGroup(_ items: [GroupItem]) -> WriterOutput {
    let time = wallClockMilliseconds()
    var changes: [Change] = []
    var answers: [(Ticket, WriterOutput.Answer)] = []
    // What each change replaced, in order; restored newest first, so the oldest wins.
    var undo: [SwitchRecord] = []
    // The items this group settled (answered or committed), to retry alone.
    var settled: [GroupItem] = []
    let firstRevision = revision

    func record(_ change: Change, replacing old: SwitchRecord) -> SwitchRecord {
      undo.append(old)
      let updated = SwitchRecord(
        key: change.key, state: change.state, revision: change.revision, changedAt: time)
      records[change.key] = updated
      changes.append(change)
      return updated
    }

    func process(_ item: GroupItem, resumed: Bool = false) {
      var finished: UInt64?
      switch item {
      case .write(let write):
        if writesUserValue(write.key, write.operation) {
          // A user's own value: no apply command and no dependents (both
          // are for system switches), so it never waits.
          if let change = writeUserValue(
            write.ticket, write.key, write.operation, write.caller, time: time, &answers)
          {
            changes.append(change)
          }
          settled.append(item)
          return
        }
        // A write back from its command holds its keys; one from the queue
        // was let go; with no command under way nothing can hold it.
        if !resumed && write.applied == nil && !applying.isIdle {
          let touching = catalog.dependencies.reach(of: write.key)
          guard applying.mayDecide(write, touching: touching) else {
            applying.wait(write, touching: touching)
            return
          }
        }
        finished = write.applied?.id
        let key = write.key
        let decision = Rules.decide(
          write.operation, key: key, definition: catalog.switches[key], record: records[key],
          policy: catalog.policies[key], caller: write.caller)
        switch decision {
        case .failure(let refusal):
          answers.append((write.ticket, .write(.failure(RPCError(refusal)))))
        case .success(let decided):
          let planned =
            decided.next.map {
              Rules.plannedChanges(
                of: key, to: $0, cause: write.operation.cause, catalog: catalog, records: records)
            } ?? []
          switch applyStage(write, decided, planned) {
          case .parked:
            return
          case .failed(let reason):
            answers.append(
              (write.ticket, .write(.failure(.applyFailed(key: key, reason: reason)))))
          case .proceed(let plans) where plans.isEmpty:
            answers.append((write.ticket, .write(.success(WriteOutcome(decided, changed: false)))))
          case .proceed(let plans):
            // The switch and the dependents it disables or enables: one revision each.
            for plan in plans {
              guard let old = records[plan.key] else { continue }
              revision += 1
              _ = record(
                Change(
                  revision: revision, time: time, key: plan.key, cause: plan.cause,
                  actor: write.caller.actor, state: plan.state, previous: plan.previous),
                replacing: old)
            }
            answers.append(
              (write.ticket, .write(.success(WriteOutcome(decided, changed: true, records[key])))))
          }
        }
      case .system(let system, let failure):
        finished = system.id
        if let old = records[system.key],
          let change = systemChange(system, failure: failure, revision: revision + 1, time: time)
        {
          revision += 1
          _ = record(change, replacing: old)
        }
      case .reload:
        return  // carried out by `run`, never in a group
      case .release(let id):
        applying.release(id)
        while let next = applying.nextReady() { process(.write(next), resumed: true) }
        return
      }
      settled.append(item)
      // The writes that waited for this one's keys, in order.
      if let finished {
        applying.release(finished)
        while let next = applying.nextReady() { process(.write(next), resumed: true) }
      }
    }

    for item in items { process(item) }
    if changes.isEmpty {
      pacer.committedNothing()
      return WriterOutput(
        catalog: nil, changes: [], answers: answers, oldestRetained: oldestRetained)
    }
    do {
      let started = monotonicSeconds()
      try store.commit(changes)
      pacer.committed(
        Set(settled.compactMap(\.connection)), seconds: monotonicSeconds() - started)
      for change in changes where change.user == nil { changedSinceCheckpoint.insert(change.key) }
      users.committed()
      if oldestRetained == nil { oldestRetained = changes[0].revision }
      return WriterOutput(
        catalog: nil, changes: changes, answers: answers, oldestRetained: oldestRetained)
    } catch {
      for old in undo.reversed() { records[old.key] = old }
      users.rollBack()
      revision = firstRevision
      logCommitFailure(error)
      if settled.count == 1 {
        let failure = RPCError.storageFailure("\(error)")
        var tickets: [(Ticket, WriterOutput.Answer)] = []
        if case .write(let write) = settled[0] {
          tickets = [(write.ticket, .write(.failure(failure)))]
        }
        return WriterOutput(
          catalog: nil, changes: [], answers: tickets, oldestRetained: oldestRetained)
      }
      // Parked writes keep their place; answers of writes that needed no
      // commit stand (they are settled again alone, with the same answer).
      var merged = WriterOutput(catalog: nil, changes: [], answers: [])
      for item in settled {
        let alone = commitGroup([item])
        merged.changes += alone.changes
        merged.answers += alone.answers
      }
      merged.oldestRetained = oldestRetained
      return merged
    }
  }

  /// A failed commit in the log; a database file that was moved, once,
  /// since every commit after it fails the same way.
  private func logCommitFailure(_ error: any Error) {
    guard case .filesMoved = error as? StoreError else {
      log.rateLimited(.error, cause: "commit", "a commit failed, nothing changed: \(error)")
      return
    }
    if reportedFilesMoved { return }
    reportedFilesMoved = true
    log.error(
      "\(error); writes after revision \(revision) are refused, reads go on from memory")
  }

  // MARK: Configuration

  /// Applies a configuration the config reader read (`ConfigReader`: the
  /// files are never read here, where a slow one would hold up every write);
  /// the output carries the answer (when asked by `reload`) and the record
  /// `status` shows.
  private func reload(_ ticket: Ticket?, _ read: ConfigurationRead) -> WriterOutput {
    let time = wallClockMilliseconds()
    guard case .valid(let next, let access) = read else {
      guard case .refused(let errors) = read else { fatalError("unreachable") }
      return reloadFailed(
        ticket, .invalidConfig(errors), ReloadRecord(time: time, result: .refused, errors: errors))
    }
    let first = commandsFirst(next)
    if !first.steps.isEmpty {
      // Its commands run first; the change then commits in one group.
      let id = applying.newID()
      var applied: [String: Bool] = [:]
      for step in first.steps { applied[step.key] = step.state.isOnAndInEffect }
      applying.park(
        id,
        .reload(
          ParkedReload(id: id, ticket: ticket, next: next, access: access, applied: applied)),
        keys: first.keys)
      pool.submit(ApplyTask(id: id, steps: first.steps, undo: [], eachOwn: true))
      return WriterOutput(catalog: nil, changes: [], answers: [], oldestRetained: oldestRetained)
    }
    return finishReload(ticket, next, access, ran: nil)
  }

  /// Makes a valid configuration `next` the running one and answers the
  /// reload; `ran`: the commands that ran first (effective value and
  /// failure by key), if any.
  private func finishReload(
    _ ticket: Ticket?, _ next: Catalog, _ access: AccessRules,
    ran: (applied: [String: Bool], failures: [String: String])?
  ) -> WriterOutput {
    let time = wallClockMilliseconds()
    let restartRequired = Rules.settingsNeedingRestart(from: startSettings, to: next.settings)
    do {
      let applied = try apply(next, access: access, reconcilingEvery: false, ran: ran)
      var output = WriterOutput(
        catalog: applied.update, changes: applied.changes, answers: [],
        oldestRetained: oldestRetained)
      let summary = ReloadSummary(
        switches: next.switches.count, policies: next.policyCount,
        restartRequired: restartRequired)
      if let ticket {
        // Answered once the commands it started have run, so that the
        // caller then reads what the policies and new commands made.
        if applied.parked.isEmpty {
          output.answers = [(ticket, .reload(.success(summary)))]
        } else {
          applying.reloadAnswer = (ticket, .reload(.success(summary)), Set(applied.parked))
        }
      }
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
  /// default, and applies the policies and dependencies as changes (one
  /// revision per switch whose State changes). On failure the old
  /// configuration stays in force; rows already inserted for new switches
  /// hold only their defaults.
  ///
  /// A switch with an apply command is parked (its command runs, then its
  /// change commits, `invalid` if the command failed) when a policy or a
  /// dependency changes its effective value, when its command is new or
  /// changed, and, with `reconcilingEvery` (the start), always. A switch
  /// whose command is gone is no longer `invalid`.
  private func apply(
    _ next: Catalog, access: AccessRules, reconcilingEvery: Bool,
    ran: (applied: [String: Bool], failures: [String: String])? = nil
  ) throws -> (update: CatalogUpdate, changes: [Change], parked: [UInt64]) {
    let time = wallClockMilliseconds()
    var newRecords: [SwitchRecord] = []
    var working = records
    for key in next.sortedKeys where records[key] == nil {
      guard let definition = next.switches[key] else { continue }
      let record = SwitchRecord(key: key, state: SwitchState(checked: definition.defaultChecked))
      newRecords.append(record)
      working[key] = record
    }
    // The loop takes these too, so that both copies of a switch stay alike.
    var defaulted: [SwitchRecord] = []
    for (key, definition) in next.switches {
      guard var record = working[key] else { continue }
      let state = Rules.withCurrentDefault(record.state, definition: definition)
      if state == record.state { continue }
      record.state = state
      working[key] = record
      defaulted.append(record)
    }
    var changes: [Change] = []
    var nextRevision = revision
    var toApply:
      [(key: String, command: ApplyCommand, target: SwitchState?, state: SwitchState, cause: Cause)] =
        []
    var plans: [String: PlannedChange] = [:]
    for plan in Rules.plannedChanges(applying: next, records: working) { plans[plan.key] = plan }
    for key in next.dependencies.order {
      guard let current = working[key]?.state else { continue }
      var target = plans[key]?.state ?? current
      let cause = plans[key]?.cause ?? .reconcile
      let definition = next.switches[key]
      if let command = definition?.apply {
        if let effective = ran?.applied[key], effective == target.isOnAndInEffect {
          // Its command ran before this configuration change (`commandsFirst`).
          target = target.applied(failure: ran?.failures[key])
        } else if reconcilingEvery
          || Rules.needsApply(
            definition, replacing: catalog.switches[key], from: current, to: target)
        {
          toApply.append((key, command, target == current ? nil : target, target, cause))
          continue
        }
      } else if target.invalid {
        target = target.applied(failure: nil)
      }
      if target == current { continue }
      nextRevision += 1
      changes.append(
        Change(
          revision: nextRevision, time: time, key: key, cause: cause,
          actor: cause == .reconcile ? .reconcile : .policy, state: target, previous: current))
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
    // Their rows take the default too, so that a later `Scope=system` reads,
    // also after a restart, the value this configuration showed.
    if !defaulted.isEmpty {
      for record in defaulted { changedSinceCheckpoint.insert(record.key) }
      checkpoint()
    }
    if oldestRetained == nil, let first = changes.first { oldestRetained = first.revision }
    let parked = toApply.map {
      parkSystemApply(
        $0.key, command: $0.command, state: $0.state, target: $0.target, cause: $0.cause,
        counted: true)
    }
    let update = CatalogUpdate(
      catalog: next, access: access,
      newRecords: newRecords + defaulted)
    return (update, changes, parked)
  }

  /// The apply commands a reload to `next` must run before it commits: of
  /// each switch with a command whose State the policies and dependencies
  /// change, when its effective value changes or its command is new. Also
  /// every key the change touches, to hold while they run.
  private func commandsFirst(_ next: Catalog) -> (steps: [ApplyStep], keys: [String]) {
    let plans = Rules.plannedChanges(applying: next, records: records)
    var steps: [ApplyStep] = []
    for plan in plans {
      guard let definition = next.switches[plan.key], let command = definition.apply,
        Rules.needsApply(
          definition, replacing: catalog.switches[plan.key], from: plan.previous, to: plan.state)
      else { continue }
      steps.append(ApplyStep(key: plan.key, command: command, state: plan.state, cause: .policy))
    }
    return (steps, steps.isEmpty ? [] : plans.map(\.key))
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
