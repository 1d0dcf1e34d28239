import SwitchCore
import SwitchProtocol
import SwitchStore
import SwitchSystem

// Writes: taking a group, deciding each write with SwitchCore's rules, and one commit.
extension Writer {
  /// The jobs of the next group, into `batch` (empty, kept by the caller):
  /// what is queued, plus the writes of the last group's writers that are
  /// on their way (`GroupCommitPacer`).
  func takeGroup(from jobs: BlockingQueue<WriterJob>, into batch: inout [WriterJob]) {
    jobs.takeAll(into: &batch)
    Self.writers(of: batch, into: &groupBuffers.present)
    var awaited = pacer.awaited(present: groupBuffers.present)
    groupBuffers.present.empty()
    guard !awaited.isEmpty, !batch.contains(where: \.isControl) else { return }
    let deadline = monotonicSeconds() + pacer.budgetSeconds
    while !awaited.isEmpty && monotonicSeconds() < deadline {
      let start = batch.count
      // Woken when as many jobs as writers awaited are queued (a job of
      // another connection wakes it early, never late), or a reload or stop.
      jobs.takeAll(before: deadline, atLeast: awaited.count, orOne: { $0.isControl }, into: &batch)
      let more = batch[start...]
      Self.writers(of: more, into: &groupBuffers.present)
      GroupCommitPacer.sortOnce(&groupBuffers.present)
      awaited.removeAll { GroupCommitPacer.contains(groupBuffers.present, $0) }
      groupBuffers.present.empty()
      if more.contains(where: \.isControl) { break }
    }
  }

  /// Whether `job` may go on while a reload or stop waits for commands
  /// (rule 16: writes of switches without a command never wait for one):
  /// a write that no command can be run for under the running
  /// configuration, from a connection with nothing held back (so that each
  /// connection's writes keep their order). It is decided as if it had come
  /// before the reload, which has not been answered yet.
  func mayPassHeldBack(_ job: WriterJob) -> Bool {
    guard case .write(let ticket, let key, let operation, _, _) = job,
      !applying.heldBack.contains(where: { $0.connection == ticket.connection })
    else { return false }
    // Jobs come from callers (the timer's endings are not jobs).
    if operation.changesValue || operation.settlesTrial,
      catalog.switches[key]?.scope == .user
    {
      return true
    }
    return catalog.dependencies.reach(of: key).allSatisfy { catalog.switches[$0]?.apply == nil }
  }

  /// Whether `write` writes the caller's own value of a user-scope switch
  /// (`definition` is its switch's): it never runs a command nor touches
  /// dependents.
  func writesUserValue(_ write: borrowing WriteRequest, _ definition: SwitchDefinition?) -> Bool {
    // The end of a user's timed value is the timer acting as that user; a
    // user's tried change is settled (or reverted at its end) as theirs,
    // unless the switch itself has one (tried while it was a system switch:
    // a reload changed its scope), which is settled as the switch's.
    guard definition?.scope == .user else { return false }
    if write.operation.settlesTrial { return records[write.hashedKey]?.state.pending == nil }
    return write.operation.changesValue
      || (write.operation == .expire && write.caller.actingAs != nil)
  }

  /// The connections that sent `jobs`' writes (in job order, repeats
  /// kept), appended to `connections`.
  static func writers<Jobs: RandomAccessCollection<WriterJob>>(
    of jobs: Jobs, into connections: inout [UInt64]
  ) {
    connections.reserveCapacity(connections.count + jobs.count)
    for index in jobs.indices {
      if let connection = jobs[index].writerConnection { connections.append(connection) }
    }
  }

  /// The arrays a group needs only while it is taken and decided, kept
  /// from group to group, empty and with their capacity: an array made
  /// and freed per group cost ~0.4k instructions (callgrind), a sixth of a
  /// toggle's with one writer. (`changes` and `answers` are handed to the
  /// loop.)
  struct GroupBuffers {
    var undo: [Group.Replaced] = []
    var settled: [Int] = []
    var writers: [UInt64] = []
    /// `takeGroup`'s writers present.
    var present: [UInt64] = []
    /// An output's arrays the loop emptied and gave back (`outputSpares`),
    /// for the next group's changes and answers: they leave with its output.
    var spare: WriterOutput.Spare?
  }

  /// A group being decided: its changes and answers, and what to put back
  /// if its commit fails.
  struct Group {
    let time: Int64
    let firstRevision: Int64

    /// A group at `time` whose first change will follow `firstRevision`,
    /// with the arrays `buffers` keeps (given back by `giveBack`).
    init(time: Int64, firstRevision: Int64, buffers: inout GroupBuffers) {
      self.time = time
      self.firstRevision = firstRevision
      if var spare = buffers.spare.take() {
        swap(&changes, &spare.changes)
        swap(&answers, &spare.answers)
      }
      swap(&undo, &buffers.undo)
      swap(&settled, &buffers.settled)
      swap(&writers, &buffers.writers)
    }

    /// Empties the arrays `init` took from `buffers` and puts them back.
    mutating func giveBack(to buffers: inout GroupBuffers) {
      undo.empty()
      settled.empty()
      writers.empty()
      swap(&undo, &buffers.undo)
      swap(&settled, &buffers.settled)
      swap(&writers, &buffers.writers)
    }

    var changes: [Change] = []
    var answers: [(Ticket, WriterOutput.Answer)] = []
    /// What each change of a switch replaced, in order; restored newest
    /// first, so the oldest wins.
    var undo: [Replaced] = []
    /// The items this group settled (answered or committed), to retry
    /// alone if its commit fails: each one's place among the group's items,
    /// or `-1 - k` for the k-th of `resumed`. Places, not copies: a copy of
    /// each item was made and released on every write for a failure that
    /// almost never comes (callgrind).
    var settled: [Int] = []
    /// The writes decided here once the command they waited for had run:
    /// they are not among the group's items.
    var resumed: [GroupItem] = []
    /// The connections of the settled writes, in order, for the pacer
    /// (read from the items after the commit, each was copied, callgrind).
    var writers: [UInt64] = []

    /// A write settled at `place`, sent by `writer`.
    mutating func settle(_ place: Int, writer: UInt64) {
      settled.append(place)
      writers.append(writer)
    }

    /// What a change of a switch replaced, put back if the commit fails:
    /// its State is the change's `previous`, the rest of the record is
    /// here (a copy of the whole record was kept on every write, callgrind).
    struct Replaced {
      /// The change's place in `changes`.
      var change: Int
      var revision: Int64
      var changedAt: Int64?
    }

    /// The settled item at `place` (`settled`'s), given the group's items.
    func item(at place: Int, of items: [GroupItem]) -> GroupItem {
      place >= 0 ? items[place] : resumed[-1 - place]
    }

    /// Room for `count` items' worst-free case (a change and an answer
    /// each): the arrays grow once, not doubling from empty (callgrind).
    mutating func reserveCapacity(_ count: Int) {
      changes.reserveCapacity(count)
      answers.reserveCapacity(count)
      undo.reserveCapacity(count)
      settled.reserveCapacity(count)
      writers.reserveCapacity(count)
    }
  }

  /// Decides every item against the current copy, then commits all the
  /// changes in one transaction. If the commit fails, the copy is restored
  /// and each item is tried alone, so every answer tells the truth.
  /// A write whose apply command must run first is parked (Writer+Apply.swift)
  /// and comes back in a later group.
  func commitGroup(_ items: [GroupItem]) -> WriterOutput {
    var items = items
    return commitGroup(&items)
  }

  /// The same, for a caller that keeps the array: each item is moved out
  /// to be decided and moved back, as a failed commit retries them.
  func commitGroup(_ items: inout [GroupItem]) -> WriterOutput {
    if groupBuffers.spare == nil { groupBuffers.spare = outputSpares?.takeLastIfAny() }
    var group = Group(
      time: wallClockMilliseconds(), firstRevision: revision, buffers: &groupBuffers)
    defer { group.giveBack(to: &groupBuffers) }
    group.reserveCapacity(items.count)
    // Who made each tried change, as before the group: a confirm or revert
    // forgets its maker, and a failed commit puts the trial back (a copy of
    // each table is a retain; it is copied whole only when a write changes it).
    let makersBefore = (deadlines.makers, deadlines.userMakers)
    for index in items.indices {
      // Reading `items[index]` copied the item, a retain for each reference
      // in it, and released the copy after (callgrind); a swap moves it.
      var item = items.moveOut(at: index, leaving: .release(0))
      decide(item, at: index, into: &group)
      swap(&item, &items[index])
    }
    if group.changes.isEmpty {
      pacer.committedNothing()
      return WriterOutput(
        catalog: nil, changes: [], answers: group.answers, oldestRetained: oldestRetained)
    }
    do {
      let started = monotonicSeconds()
      try store.commit(group.changes)
      pacer.committed(&group.writers, seconds: monotonicSeconds() - started)
      if failedCommits > 0 { logCommitsWorkAgain() }
      if !systemAhead.isEmpty { reapplyWhereSystemIsAhead(group.changes) }
      users.committed()
      if oldestRetained == nil { oldestRetained = group.changes[0].revision }
      return WriterOutput(
        catalog: nil, changes: group.changes, answers: group.answers,
        oldestRetained: oldestRetained)
    } catch {
      for replaced in group.undo.reversed() {
        let change = group.changes[replaced.change]
        records[change.hashedKey] = SwitchRecord(
          key: change.hashedKey, state: change.previous, revision: replaced.revision,
          changedAt: replaced.changedAt)
        deadlines.note(change.key, change.previous)
      }
      for (key, user) in users.rollBack() {
        deadlines.note(key, user: user, users.value(key, user: user))
      }
      (deadlines.makers, deadlines.userMakers) = makersBefore
      revision = group.firstRevision
      logCommitFailure(error)
      return settleAlone(group.settled.map { group.item(at: $0, of: items) }, after: error)
    }
  }

  /// After a failed commit: a lone item is refused; each item of a larger
  /// group is decided and committed again alone. Parked writes keep their
  /// place; answers of writes that needed no commit stand (they are
  /// settled again alone, with the same answer).
  private func settleAlone(_ settled: [GroupItem], after error: any Error) -> WriterOutput {
    guard settled.count > 1 else {
      var output = WriterOutput(
        catalog: nil, changes: [], answers: [], oldestRetained: oldestRetained)
      switch settled.first {
      case .write(let write)?:
        output.answers = [(write.ticket, .write(.failure(.storageFailure("\(error)"))))]
        if let applied = write.applied, applied.failure == nil {
          if isRetriedEnding(write) {
            for (key, value) in applied.effective { systemAhead[key] = value }
          } else {
            reapplyStored(
              applied.effective.keys, because: "its change was not stored after its command ran")
          }
        }
      default:
        // A policy's or a dependency's change (`.system`) is not undone:
        // the configuration in force asks for the value its command ran
        // for, and the record lags until the next reload or start.
        break
      }
      return output
    }
    var merged = WriterOutput(catalog: nil, changes: [], answers: [])
    for item in settled {
      let alone = commitGroup([item])
      merged.changes += alone.changes
      merged.answers += alone.answers
    }
    merged.oldestRetained = oldestRetained
    return merged
  }

  /// Whether `write`, refused by a failed commit, is a deadline's ending
  /// that stays due and is tried again for the value its command ran for:
  /// an expiry, or the revert of a trial past its deadline or whose maker
  /// left (`DeadlineIndex.makerGone`). Undone, the system would flip at
  /// every try while the disk stays full (a review).
  private func isRetriedEnding(_ write: borrowing WriteRequest) -> Bool {
    guard write.ticket.connection == 0, !write.external else { return false }
    switch write.operation {
    case .expire: return true
    case .revert:
      guard let pending = records[write.hashedKey]?.state.pending else { return false }
      return pending.isDue(at: bootMoment) || deadlines.makerIsGone(write.key, pending)
    default: return false
    }
  }

  /// Switches whose apply commands ran for a change that then failed to
  /// commit (a full disk; a client's write, or a reload's, `finishReload`),
  /// or whose undo failed after a later command of the change failed:
  /// the system has the value the change asked for, the record the one
  /// before, and the caller was told nothing changed (SEMANTICS.md rule 8).
  /// Each command runs again for the value the switch still has, as the
  /// start's reconcile does, and a failure there marks the switch `invalid`
  /// (rule 15). A reconcile's own failed commit is not reconciled again, so
  /// this cannot loop while the disk stays full. A key another job holds
  /// (`heldBy` aside, the reload's own) is left to it: its write is decided
  /// against the record as it is now, after its command, in its order
  /// (rule 16; two commands of one switch must not run at once). (An
  /// audit: the refused write's value stayed in the system until the next
  /// write of the switch.)
  /// Returns the jobs parked (a reload's answer waits for them).
  @discardableResult
  func reapplyStored(
    _ keys: some Collection<String>, heldBy owner: UInt64? = nil, because reason: String
  ) -> [UInt64] {
    var parked: [UInt64] = []
    for key in keys.sorted() {
      if let holder = applying.busy[key], holder != owner { continue }
      guard let command = catalog.switches[key]?.apply, let record = records[key] else { continue }
      log.warning("\(key): \(reason); running its apply command again for the stored value")
      parked.append(
        parkSystemApply(
          key, command: command, state: record.state, target: nil, cause: .reconcile,
          counted: false))
    }
    return parked
  }

  /// Decides `item` and, when it frees what it held, the writes that
  /// waited for that, one at a time in the order they become ready.
  /// `place`: the item's among the group's items (`Group.settled`).
  private func decide(_ item: borrowing GroupItem, at place: Int, into group: inout Group) {
    guard let finished = decideOne(item, at: place, resumed: false, into: &group) else { return }
    applying.release(finished)
    while let next = applying.nextReady() {
      let item = GroupItem.write(next)
      group.resumed.append(item)
      if let alsoFinished = decideOne(
        item, at: -group.resumed.count, resumed: true, into: &group)
      {
        applying.release(alsoFinished)
      }
    }
  }

  /// Decides one item into `group`. Returns the id of the apply job whose
  /// keys it frees, if any.
  private func decideOne(
    _ item: borrowing GroupItem, at place: Int, resumed: Bool, into group: inout Group
  ) -> UInt64? {
    switch item {
    case .write(let write):
      // Looked up once for the whole decision (a look-up hashes the key).
      let definition = catalog.switches[write.hashedKey]
      let ownValue = writesUserValue(write, definition)
      if write.ticket.connection == 0, write.operation == .revert,
        !queuedRevertStands(write, ownValue: ownValue)
      {
        if ownValue {
          userEndingDecided(write.key, write.caller.subject)
        } else {
          endingDecided(write.key)
        }
        group.settle(place, writer: 0)
        return nil
      }
      if ownValue {
        // A user's own value: no apply command and no dependents (both
        // are for system switches), so it never waits.
        if let change = writeUserValue(write, definition, time: group.time, &group.answers) {
          group.changes.append(change)
        }
        if write.ticket.connection == 0 { userEndingDecided(write.key, write.caller.subject) }
        group.settle(place, writer: write.ticket.connection)
        return nil
      }
      // A write back from its command holds its keys; one from the queue
      // was let go; with no command under way nothing can hold it.
      if !resumed && write.applied == nil && !applying.isIdle {
        let touching = catalog.dependencies.reach(of: write.key)
        guard applying.mayDecide(write, touching: touching) else {
          applying.wait(write, touching: touching)
          return nil
        }
      }
      guard decideSystemWrite(write, definition, into: &group) else { return nil }
      if write.ticket.connection == 0 { endingDecided(write.key) }
      group.settle(place, writer: write.ticket.connection)
      return write.applied?.id
    case .system(let system, let failure):
      if let old = records[system.key],
        let change = systemChange(
          system, failure: failure, revision: revision + 1, time: group.time)
      {
        revision += 1
        record(change, replacing: old.revision, changedAt: old.changedAt, into: &group)
      }
      group.settled.append(place)
      return system.id
    case .reload:
      return nil  // carried out by `run`, never in a group
    case .release(let id):
      return id
    }
  }

  /// A write of a system switch (or of a switch-level state): decided with
  /// `Rules.decide`, planned with its dependents, through the apply stage.
  /// `definition` is the switch's. The switch's own record is looked up once.
  /// - Returns: false when it was parked for its command.
  private func decideSystemWrite(
    _ write: borrowing WriteRequest, _ definition: SwitchDefinition?, into group: inout Group
  ) -> Bool {
    let key = write.key
    // One look-up for the read and the write back (each hashes the key).
    guard let slot = records.index(forKey: write.hashedKey), let definition else {
      // A switch the writer does not hold: the rules say how that is refused.
      do throws(Refusal) {
        let decided = try Rules.decide(
          write.operation, key: key, definition: definition, record: nil, policy: nil,
          caller: write.caller
        ).get()
        return decidePlanned(write, decided, at: nil, into: &group)
      } catch {
        group.answers.append((write.ticket, .refused(error)))
        return true
      }
    }
    // Not optional: an optional record was copied through a generic value
    // witness. Copied out once: each read of `records[slot:]` copies it.
    let old = records[slot: slot]
    let policy = catalog.policies[write.hashedKey]
    let next: SwitchState?
    do throws(Refusal) {
      // Thrown, not a `Result`, and no `Decision` made unless a plan needs
      // one: a decision made, copied and destroyed on every write cost
      // ~0.3k of a toggle (callgrind).
      next = try Rules.next(
        write.operation, key: key, declared: definition, record: old, policy: policy,
        caller: write.caller, lasting: write.lasting, at: group.time,
        boot: write.lasting.map { _ in bootMoment })
    } catch {
      group.answers.append((write.ticket, .refused(error)))
      return true
    }
    // A switch no other follows, written without running a command (most
    // writes): its plan is its own change, as `plannedChanges` and
    // `applyStage` say for it, taken without the array they make and walk
    // per write (callgrind: ~4k of a toggle of Wi-Fi, which lists airplane
    // mode).
    if let next, write.operation != .apply, !definition.hasApply,
      let own = catalog.dependencies.settledAlone(
        next, of: write.hashedKey, states: { records[$0]?.state })
    {
      guard own != old.state else {
        group.answers.append(
          (
            write.ticket,
            .write(
              .success(
                WriteOutcome(
                  definition: definition, policy: policy, changed: false, record: old)))
          ))
        return true
      }
      revision += 1
      let change = Change(
        revision: revision, time: group.time, key: write.hashedKey,
        cause: write.external ? .external : write.operation.cause, actor: write.caller.actor,
        state: own, previous: old.state)
      let after = change.record
      record(
        consume change, replacing: old.revision, changedAt: old.changedAt, at: slot,
        into: &group)
      answerChanged(write, definition, policy, after: after, into: &group)
      return true
    }
    return decidePlanned(
      write,
      Decision(definition: definition, record: old, policy: policy, next: next),
      at: slot, into: &group)
  }

  /// A system write the rules allowed whose plan may reach its dependents
  /// or run its command: planned, through the apply stage, and recorded.
  /// `slot`: where `records` holds the switch.
  /// - Returns: false when it was parked for its command.
  private func decidePlanned(
    _ write: borrowing WriteRequest, _ decided: borrowing Decision,
    at slot: KeyTable<SwitchRecord>.Index?, into group: inout Group
  ) -> Bool {
    let key = write.key
    let planned =
      decided.next.map {
        Rules.plannedChanges(
          of: key, from: decided.record.state, to: $0,
          cause: write.external ? .external : write.operation.cause, catalog: catalog,
          records: records)
      } ?? []
    let plans: [PlannedChange]
    switch applyStage(write, decided, planned) {
    case .parked:
      return false
    case .asPlanned:
      plans = planned
    case .proceed(let verdicts):
      plans = verdicts
    // No `where` clauses: each pattern tried copied the stage's payload (callgrind).
    case .failed(let reason, let failedKey):
      guard write.operation == .expire || write.operation == .revert else {
        let error = RPCError.applyFailed(key: key, reason: reason, dependent: failedKey)
        // Nobody is answered an adopted value: the drift rules hear of it.
        if write.external { adoptionFailures[key] = error.message }
        group.answers.append((write.ticket, .write(.failure(error))))
        // Refused, "nothing changed", but an undo failed: the system may
        // hold what the change asked for (the apply audit).
        if let applied = write.applied, !applied.undoFailed.isEmpty {
          reapplyStored(
            applied.undoFailed, heldBy: applied.id, because: "undoing its command failed")
        }
        return true
      }
      // An ending cannot be refused and come again for ever: it ends, the
      // value stays, and the switch is invalid (rule 20, after rule 22).
      if let next = decided.next {
        let old = decided.record
        revision += 1
        record(
          Change(
            revision: revision, time: group.time, key: key, cause: write.operation.cause,
            actor: write.caller.actor,
            state: Rules.failedEnding(old.state, next: next, reason: reason), previous: old.state),
          replacing: old.revision, changedAt: old.changedAt, at: slot, into: &group)
      }
      group.answers.append(
        (
          write.ticket,
          .write(.success(WriteOutcome(decided, after: records[key] ?? decided.record)))
        ))
      return true
    }
    guard !plans.isEmpty else {
      group.answers.append(
        (write.ticket, .write(.success(WriteOutcome(unchanged: decided)))))
      return true
    }
    // The switch and the dependents it disables or enables: one revision
    // each. The switch's own record is the one decided on, and the one
    // it takes is the answer's.
    // The decided record, not `current`: copies of an optional record
    // went through a generic value witness (callgrind).
    var after = decided.record
    // By index: a `for plan in plans` loop copied each plan.
    for index in plans.indices {
      let own = plans[index].key == key
      // What the change replaces: the record's revision and time (its State is the plan's `previous`).
      let oldRevision: Int64
      let oldChangedAt: Int64?
      if own {
        oldRevision = decided.record.revision
        oldChangedAt = decided.record.changedAt
      } else if let other = records[plans[index].key] {
        oldRevision = other.revision
        oldChangedAt = other.changedAt
      } else {
        continue
      }
      revision += 1
      let change = Change(
        revision: revision, time: group.time, key: plans[index].key, cause: plans[index].cause,
        actor: write.caller.actor, state: plans[index].state, previous: plans[index].previous)
      if own { after = change.record }
      record(
        change, replacing: oldRevision, changedAt: oldChangedAt, at: own ? slot : nil,
        into: &group)
    }
    answerChanged(write, decided.definition, decided.policy, after: after, into: &group)
    return true
  }

  /// The answer to a system write that changed its switch to `after`; a
  /// tried change remembers who made it (rule 20).
  private func answerChanged(
    _ write: borrowing WriteRequest, _ definition: borrowing SwitchDefinition,
    _ policy: borrowing PolicyRule?, after: consuming SwitchRecord, into group: inout Group
  ) {
    if case .confirmWithin = write.lasting {
      deadlines.makers[write.key] = write.ticket.connection
    }
    group.answers.append(
      (
        write.ticket,
        .write(
          .success(
            WriteOutcome(definition: definition, policy: policy, changed: true, record: after)))
      ))
  }

  /// Takes a decided change into the writer's copy and the group; it
  /// replaces the record of `revision` and `changedAt` whose State is the
  /// change's `previous`. `slot`, when given, is where `records` holds the
  /// switch (no look-up). The change is moved into the group, not copied.
  private func record(
    _ change: consuming Change, replacing revision: Int64, changedAt: Int64?,
    at slot: KeyTable<SwitchRecord>.Index? = nil, into group: inout Group
  ) {
    assert(records[change.key]?.state == change.previous, "a change follows its switch's record")
    group.undo.append(
      Group.Replaced(change: group.changes.count, revision: revision, changedAt: changedAt))
    if let slot {
      records[slot: slot] = change.record
    } else {
      records[change.hashedKey] = change.record
    }
    deadlines.note(change.key, change.state)
    group.changes.append(change)
  }

  /// A failed commit in the log; a database file that was moved, once,
  /// since every commit after it fails the same way.
  func logCommitFailure(_ error: any Error) {
    failedCommits += 1
    guard case .filesMoved = error as? StoreError else {
      log.rateLimited(.error, cause: "commit", "a commit failed, nothing changed: \(error)")
      return
    }
    if reportedFilesMoved { return }
    reportedFilesMoved = true
    log.error(
      "\(error); writes after revision \(revision) are refused, reads go on from memory")
  }

  /// The first commit that works after failed ones (a disk that was full
  /// has room again), in the log that said they failed.
  func logCommitsWorkAgain() {
    let count = failedCommits == 1 ? "1 failed commit" : "\(failedCommits) failed commits"
    log.notice("writes are stored again, after \(count)")
    failedCommits = 0
    // The deadlines armed with a pause (`rearmDeadlines`) are armed again
    // without it: a revert due meanwhile comes now, not up to 30 s later.
    deadlines.moved = true
  }
}
