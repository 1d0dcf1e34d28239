import Glibc
import SwitchCore
import SwitchProtocol
import SwitchSystem

// Drift (SEMANTICS.md rule 19), carried out by the writer with the rules of
// `Drift`: it tells them when an apply of a switch starts and ends, hands
// them each reading, and turns their verdict into a re-application (a
// system apply with `SWITCH_CAUSE=drift` that changes no State), an adopted
// value (a write, cause `external`, actor `system`, dependents following)
// or an `invalid` change (cause `drift`).
extension Writer {
  /// An apply of `key` starts, making `value` real.
  func driftApplyStarted(_ key: String, value: Bool, reapplication: Bool = false) {
    guard catalog.switches[key]?.readBack != nil else { return }
    Drift.applyStarted(
      &drift[key, default: Drift.Memory()], value: value, reapplication: reapplication)
  }

  /// The apply commands of `keys` have ended, now (on the read-back clock).
  func noteApplyEnded(_ keys: [String]) {
    let now = ReadBackClock.now()
    for key in keys where drift[key] != nil { applyEndTimes[key] = now }
  }

  /// The applies of `keys` ended and their outcome is committed: what a
  /// reading kept while they ran says now. Returns the changes to commit.
  func driftApplyEnded(_ keys: [String]) -> [GroupItem] {
    var items: [GroupItem] = []
    for key in keys where applying.busy[key] == nil {
      // Taken whatever follows: a reason or a time kept would be read at a
      // later apply of the switch.
      let failure = adoptionFailures.removeValue(forKey: key)
      let endedAt = applyEndTimes.removeValue(forKey: key) ?? ReadBackClock.now()
      guard let readBack = catalog.switches[key]?.readBack, let record = records[key],
        drift[key] != nil
      else { continue }
      if let reason = failure {
        let verdict = Drift.adoptionFailed(
          &drift[key, default: Drift.Memory()], state: record.state, reason: reason)
        if let item = carryOut(verdict, key: key) { items.append(item) }
        continue
      }
      let verdict = Drift.applyEnded(
        &drift[key, default: Drift.Memory()], state: record.state, reapplyFailure: nil,
        readBack: readBack, now: endedAt)
      if let item = carryOut(verdict, key: key) { items.append(item) }
      if let memory = drift[key], Drift.needsSettling(memory, state: record.state) {
        after(Drift.settleMilliseconds, post: .settled(key: key))
      }
    }
    return items
  }

  /// A reading of `key` (nil: unknown, nothing to judge): the change it
  /// makes, if any; a re-application is parked or scheduled here.
  func judgeReading(
    _ key: String, _ state: Bool?, source: Drift.Source, at time: Int64
  ) -> GroupItem? {
    guard let state, let readBack = catalog.switches[key]?.readBack, let record = records[key]
    else { return nil }
    let verdict = Drift.reading(
      &drift[key, default: Drift.Memory()], value: state, source: source, state: record.state,
      readBack: readBack, now: time)
    return carryOut(verdict, key: key)
  }

  /// `changes` are committed: the switches with read-back whose State
  /// changed with no apply (a kept tried change, a hold, its end) have
  /// their last reading judged again (`Drift.stateChanged`). Returns the
  /// changes to commit. (`run` calls it only while a switch has read-back.)
  func driftStateChanged(_ changes: [Change]) -> [GroupItem] {
    var items: [GroupItem] = []
    // By index, each read in place: a `for` copied every change out.
    for index in changes.indices {
      guard changes[index].user == nil, changes[index].cause != .external,
        changes[index].cause != .drift,
        changes[index].previous.isOnAndInEffect == changes[index].state.isOnAndInEffect
      else { continue }
      let key = changes[index].key
      guard drift[key] != nil, applying.busy[key] == nil,
        let readBack = catalog.switches[key]?.readBack, let record = records[key]
      else { continue }
      let verdict = Drift.stateChanged(
        &drift[key, default: Drift.Memory()], state: record.state, readBack: readBack,
        now: ReadBackClock.now())
      if let item = carryOut(verdict, key: key) { items.append(item) }
    }
    return items
  }

  /// The settling time after an apply of `key` is over: its last reading
  /// judged again.
  func judgeSettled(_ key: String) -> GroupItem? {
    guard let readBack = catalog.switches[key]?.readBack, let record = records[key],
      drift[key] != nil
    else { return nil }
    let verdict = Drift.settled(
      &drift[key, default: Drift.Memory()], state: record.state, readBack: readBack,
      now: ReadBackClock.now())
    return carryOut(verdict, key: key)
  }

  /// Posts `job` to the writer after `milliseconds`, from a thread that
  /// only waits: the writer never does.
  private func after(_ milliseconds: Int64, post job: WriterJob) {
    guard let jobs else { return }
    SwitchSystem.startThread(named: "drift timer") {
      usleep(useconds_t(min(milliseconds, Drift.maximumBackoffMilliseconds) * 1000))
      jobs.push(job)
    }
  }

  /// Does what `verdict` says for `key`; a State change comes back as an item.
  private func carryOut(_ verdict: Drift.Verdict, key: String) -> GroupItem? {
    switch verdict {
    case .agrees, .expected, .stillInvalid:
      return nil
    case .adopt(let state):
      // Rate-limited per switch: a system that flaps (a watch at 10 Hz) made
      // a line each time, ~1 KB/s (the soak audit); each adoption is a
      // change in the log all the same.
      log.rateLimited(
        .notice, cause: "\(key) drifted",
        "\(key) was turned \(state.checked ? "on" : "off") outside switchd: adopted")
      let system = Caller(actor: .system, isAdmin: true, mayWrite: true)
      // Connection 0 and slot 0: nobody is answered.
      let ticket = Ticket(connection: 0, slot: 0, part: 0, id: .null)
      var write = WriteRequest(
        ticket: ticket, key: key, operation: .set(checked: state.checked, ifRevision: nil),
        caller: system)
      write.external = true
      return .write(write)
    case .invalidate(let state), .clear(let state):
      if state.invalid {
        log.warning("\(key) is marked invalid: \(state.invalidReason ?? "")")
      } else {
        log.notice("\(key) agrees with the system again")
      }
      let id = applying.newID()
      return .system(
        SystemApply(id: id, key: key, target: nil, cause: .drift, counted: false),
        failure: state.invalid ? state.invalidReason : nil)
    case .reapply(let wait, let systemValue):
      log.rateLimited(
        .notice, cause: "\(key) drifted",
        "\(key) was turned \(systemValue ? "on" : "off") outside switchd: re-applying"
          + (wait > 0 ? " in \(ApplyCommand.seconds(Int(wait)))s" : ""))
      let generation = drift[key]?.reapplyGeneration ?? 0
      if wait == 0 {
        reapplyIfStillDrifted(key, generation: generation)
      } else {
        after(wait, post: .reapplyDue(key: key, generation: generation))
      }
      return nil
    }
  }

  /// Runs `key`'s apply command again with its effective value, unless an
  /// apply of it runs already or the system came back by itself; shown
  /// (`status`, `why`) once it runs. `generation`: the decision it carries
  /// out; a timer of one called off since does nothing.
  func reapplyIfStillDrifted(_ key: String, generation: Int) {
    guard var memory = drift[key], memory.reapplyScheduled,
      memory.reapplyGeneration == generation
    else { return }
    // A switch freed meanwhile follows the system instead (rule 19); one
    // whose value is unknown now waits for the next reading.
    guard applying.busy[key] == nil, let definition = catalog.switches[key],
      let command = definition.apply, let record = records[key],
      let observed = memory.observed, observed != record.state.isOnAndInEffect,
      let readBack = definition.readBack, !Drift.adopts(record.state, readBack)
    else {
      Drift.reapplicationCalledOff(&memory)
      drift[key] = memory
      return
    }
    if readBackReports[key] != nil {
      readBackReports[key]?.reapplied += 1
      readBackReports[key]?.lastReapplied = wallClockMilliseconds()
      readBackReports[key]?.systemHad = observed
      readBackReportsChanged = true
    }
    _ = parkSystemApply(
      key, command: command, state: record.state, target: nil, cause: .drift, counted: false,
      reapplied: true)
  }
}
