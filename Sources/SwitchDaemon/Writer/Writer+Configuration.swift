import SwitchCore
import SwitchProtocol
import SwitchStore
import SwitchSystem

// Configuration changes: a reload the config reader read, and the start's, as changes.
extension Writer {
  /// Applies a configuration the config reader read (`ConfigReader`: the
  /// files are never read here, where a slow one would hold up every write);
  /// the output carries the answer (when asked by `reload`) and the record
  /// `status` shows.
  func reload(_ ticket: Ticket?, _ read: ConfigurationRead) -> WriterOutput {
    let time = wallClockMilliseconds()
    let next: Catalog
    let access: AccessRules
    let before = (configured, scheduleChangesAt)
    switch read {
    case .valid(let configured, let configuredAccess):
      // Keys kept from the running configuration keep their Strings.
      next = inEffectNow(configured.sharingKeys(with: catalog), configuredAccess)
      access = configuredAccess
    case .scheduled:
      guard let configured, scheduleIsDue else {
        return WriterOutput(catalog: nil, changes: [], answers: [], oldestRetained: oldestRetained)
      }
      next = inEffectNow(configured.catalog, configured.access)
      access = configured.access
    case .refused(let errors):
      return reloadFailed(
        ticket, .invalidConfig(errors), ReloadRecord(time: time, result: .refused, errors: errors))
    }
    let scheduled = read.isScheduled
    let first = commandsFirst(next)
    if !first.steps.isEmpty {
      // Its commands run first; the change then commits in one group.
      let id = applying.newID()
      var applied: [String: Bool] = [:]
      for step in first.steps { applied[step.key] = step.state.isOnAndInEffect }
      for (key, value) in applied { applyStarted(key, value: value) }
      applying.park(
        id,
        .reload(
          ParkedReload(
            id: id, ticket: ticket, next: next, access: access, applied: applied,
            scheduled: scheduled, before: before)),
        keys: first.keys)
      pool.submit(ApplyTask(id: id, steps: first.steps, undo: [], eachOwn: true))
      return WriterOutput(catalog: nil, changes: [], answers: [], oldestRetained: oldestRetained)
    }
    return finishReload(ticket, next, access, ran: nil, scheduled: scheduled, restoring: before)
  }

  /// Makes a valid configuration `next` the running one and answers the
  /// reload; `ran`: the commands that ran first (effective value and
  /// failure by key), if any, under the parked job `owner`; `before`: what
  /// the reload replaced, put back if it fails to commit.
  func finishReload(
    _ ticket: Ticket?, _ next: Catalog, _ access: AccessRules,
    ran: (applied: [String: Bool], failures: [String: String])?, scheduled: Bool = false,
    heldBy owner: UInt64? = nil, restoring before: ConfiguredBefore
  ) -> WriterOutput {
    let time = wallClockMilliseconds()
    let restartRequired = Rules.settingsNeedingRestart(from: startSettings, to: next.settings)
    do {
      let applied = try apply(
        next, access: access, reconcilingEvery: false, ran: ran, heldBy: owner)
      // Only a reload that stored something says the disk works (one
      // that changed nothing proves nothing, the third review).
      let stored = !applied.changes.isEmpty || !applied.update.newRecords.isEmpty
      if failedCommits > 0 && stored { logCommitsWorkAgain() }
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
      if scheduled {
        log.notice("a policy schedule's window started or ended: \(output.changes.count) changed")
        return output
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
      // Counted as a commit's: a scheduled edge put back below waits the
      // pause before it is tried again (`rearmDeadlines`), not a moment.
      failedCommits += 1
      (configured, scheduleChangesAt) = (before.configured, before.changesAt)
      deadlines.moved = true
      // Its commands ran for values the running configuration does not
      // give: they run again for the ones it does. Not for a schedule's
      // edge: put back above, it is tried again for the same values, and
      // undone between tries the system would flip at each (as a
      // deadline's ending, `isRetriedEnding`; the third review).
      if let ran, !scheduled {
        reapplyStored(
          ran.applied.keys, heldBy: owner, because: "the reload its command ran for was not stored")
      }
      return reloadFailed(
        ticket, .storageFailure("\(error)"),
        ReloadRecord(time: time, result: .failed, errors: ["\(error)"]))
    }
  }

  func reloadFailed(
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
  /// whose command is gone is no longer `invalid`. `owner`: the reload's
  /// parked job, which holds the switches its commands ran for.
  func apply(
    _ next: Catalog, access: AccessRules, reconcilingEvery: Bool,
    ran: (applied: [String: Bool], failures: [String: String])? = nil, heldBy owner: UInt64? = nil
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
      let definition = next.switches[key]
      // The commands run first (`commandsFirst`) are known by what they applied.
      let ranFirst = ran?.applied[key].map { (effective: $0, failure: ran?.failures[key]) }
      let step = Rules.configurationStep(
        current: current, plan: plans[key], key: key, definition: definition,
        replacing: catalog.switches[key], reconcilingEvery: reconcilingEvery, ran: ranFirst)
      switch step {
      case .unchanged:
        continue
      case .applyFirst(let state, let changesState, let cause):
        guard let command = definition?.apply else { continue }
        toApply.append((key, command, changesState ? state : nil, state, cause))
      case .change(let plan):
        nextRevision += 1
        let change = Change(
          revision: nextRevision, time: time, key: key, cause: plan.cause,
          actor: .configuration(plan.cause), state: plan.state, previous: plan.previous)
        changes.append(change)
        working[key] = change.record
      }
    }
    if !newRecords.isEmpty { try store.insertNew(newRecords, declaredAt: time) }
    if !changes.isEmpty {
      try store.commit(changes)
    }
    records = working
    revision = nextRevision
    let previous = catalog
    catalog = next
    rebuildDeadlines()
    reconfigureReadBack(from: previous)
    // Their rows take the default too, so that a later `Scope=system` reads,
    // also after a restart, the value this configuration showed.
    if !defaulted.isEmpty {
      for record in defaulted { rowsWithoutRevision.insert(record.key) }
      checkpoint()
    }
    if oldestRetained == nil, let first = changes.first { oldestRetained = first.revision }
    var parked = toApply.map {
      parkSystemApply(
        $0.key, command: $0.command, state: $0.state, target: $0.target, cause: $0.cause,
        counted: true)
    }
    // After its own commands are parked: a switch they hold is theirs. A
    // switch the reload's job holds is this reload's to run (the review: it
    // was skipped as another's, and its system stayed behind).
    if !systemAhead.isEmpty {
      for key in systemAhead.keys where next.switches[key]?.apply == nil {
        systemAhead[key] = nil  // gone, or no command left to run
      }
      // Its answer waits for these too, as for its own.
      parked += reapplyWhereSystemIsAhead(changes, heldBy: owner)
    }
    let update = CatalogUpdate(
      catalog: next, access: access,
      newRecords: newRecords + defaulted)
    return (update, changes, parked)
  }

  /// The apply commands a reload to `next` must run before it commits: of
  /// each switch with a command whose State the policies and dependencies
  /// change, when its effective value changes or its command is new. Also
  /// the keys to hold while they run: every key the change touches, and
  /// every switch whose command is new or changed, which `apply` runs once
  /// the reload commits (unheld, a write of it ran the old command while
  /// the reload's waited, and then the new one ran beside it: two commands
  /// of one switch at once, a review).
  func commandsFirst(_ next: Catalog) -> (steps: [ApplyStep], keys: [String]) {
    let plans = Rules.plannedChanges(applying: next, records: records)
    var steps: [ApplyStep] = []
    for plan in plans {
      guard let definition = next.switches[plan.key], let command = definition.apply,
        Rules.needsApply(
          definition, replacing: catalog.switches[plan.key], from: plan.previous, to: plan.state)
      else { continue }
      steps.append(ApplyStep(key: plan.key, command: command, state: plan.state, cause: .policy))
    }
    if steps.isEmpty { return ([], []) }
    var keys = Set(plans.map(\.key))
    for (key, definition) in next.switches
    where Rules.commandIsNew(definition, replacing: catalog.switches[key]) {
      keys.insert(key)
    }
    return (steps, keys.sorted())
  }
}
