/// SEMANTICS.md rules 18–19 as pure functions: what switchd does with a
/// reading of the system (`ExecCheck=`, `ExecWatch=`) given the switch's
/// State and what it remembers of its own applies. No I/O and no clock:
/// the caller passes `now` and runs what the verdict says.
///
/// switchd's own applies are never drift. Three things make that hold
/// whatever the timing of a program's output around an apply:
/// - a reading while an apply of the switch runs is expected; one that
///   disagrees after the system showed the applied value is kept and
///   judged when the apply ends;
/// - after an apply, a reading that disagrees before any reading showed
///   the applied value is taken for one written before the apply took
///   effect (a watch's late line), for `settleMilliseconds`, or when it is
///   a check started before the apply ended;
/// - while a re-application is scheduled, further drift waits for it.
public enum Drift {
  /// `DriftLimit=` counts re-applications within this window (60 s).
  public static let windowMilliseconds: Int64 = 60_000
  /// The wait before the second re-application within the window, doubled
  /// for each one after, up to `maximumBackoffMilliseconds`.
  public static let firstBackoffMilliseconds: Int64 = 1000
  public static let maximumBackoffMilliseconds: Int64 = 30_000
  /// How long after an apply an unconfirmed disagreeing watch line is
  /// taken for a late one rather than drift.
  public static let settleMilliseconds: Int64 = 2000

  /// Where a reading came from.
  public enum Source: Equatable, Sendable {
    /// A line of `ExecWatch=`.
    case watch
    /// `ExecCheck=`'s answer; `startedAt`: when the check was started.
    case check(startedAt: Int64)
  }

  /// What switchd remembers of one switch between readings: runtime only,
  /// never stored (a restart reconciles and reads again).
  public struct Memory: Equatable, Sendable {
    /// The last reading (`observed`); nil while unknown (a check that
    /// failed or printed nonsense, a watch that ended: `unknown`).
    public var observed: Bool?
    /// Where the last reading came from (nil while `observed` is): a
    /// check's start says whether it predates the last apply (`isLate`).
    public var observedSource: Source?
    /// The last reading was a check's: the check run after each apply
    /// answers for it, so it is never judged again by waiting
    /// (`needsSettling` is for a watch, which prints only changes).
    public var observedByCheck: Bool {
      if case .check = observedSource { return true }
      return false
    }
    /// Adopting the system's value failed (a dependent's apply command
    /// failed, so nothing changed): the switch is `invalid` and waits for
    /// the system to agree, or a write, instead of adopting again at every
    /// reading (each try ran the dependent's command: ~50 a second).
    public var adoptionFailed = false
    /// The effective value an apply of the switch is making real now; nil while none runs.
    public var applying: Bool?
    /// When the last apply of the switch ended; nil before any.
    public var appliedAt: Int64?
    /// A reading has shown the value of the running or last apply.
    public var confirmed = false
    /// A disagreeing reading that came during an apply after the system
    /// had shown the applied value: judged when the apply ends.
    public var pending: Bool?
    /// A re-application is decided and not started yet.
    public var reapplyScheduled = false
    /// Which decision `reapplyScheduled` is: a backoff's timer that fires
    /// for one called off since (its switch freed, the system back) must
    /// not start the next one early.
    public var reapplyGeneration = 0
    /// When each re-application within the window was decided.
    public var reapplications: [Int64] = []
    /// The last re-application: when, and what the system had turned the switch to.
    public var lastReapplied: Reapplied?
    /// Re-applications since the daemon started, for `status`.
    public var reapplicationCount = 0

    public init() {}
  }

  /// A re-application: when it was decided, and what the system had turned the switch to.
  public struct Reapplied: Equatable, Sendable {
    public var time: Int64
    public var systemValue: Bool
  }

  /// What to do about a reading.
  public enum Verdict: Equatable, Sendable {
    /// The system agrees with the effective value: nothing to do.
    case agrees
    /// Not drift (switchd's own apply, a late line, a re-application on its way).
    case expected
    /// Run the apply command again with the effective value (`SWITCH_CAUSE=drift`)
    /// after `afterMilliseconds`; no State change. `systemValue`: what the
    /// system had turned the switch to.
    case reapply(afterMilliseconds: Int64, systemValue: Bool)
    /// A writable switch follows the system: commit this State, cause
    /// `external`, actor `system` (dependents follow as for any write).
    case adopt(SwitchState)
    /// Commit this State (`invalid` set or cleared), cause `drift`, actor `system`.
    case invalidate(SwitchState)
    case clear(SwitchState)
    /// Already `invalid`: it waits for the system to agree.
    case stillInvalid
  }

  /// A held switch (read-only, or disabled by anyone) is re-applied on
  /// drift; a writable one adopts the system's value unless `OnDrift=reassert`.
  public static func adopts(_ state: SwitchState, _ readBack: ReadBack) -> Bool {
    !state.readOnly && !state.disabled && readBack.onDrift == .adopt
  }

  /// An apply of the switch starts, making `value` real (a write's, a
  /// reconcile's or a re-application).
  public static func applyStarted(
    _ memory: inout Memory, value: Bool, reapplication: Bool = false
  ) {
    memory.applying = value
    // The scheduled re-application is made (`reapplication`), or another
    // apply (a write, `apply`, a reload's) comes in its place: then it is
    // not made, and not counted.
    if reapplication {
      memory.reapplyScheduled = false
    } else {
      reapplicationCalledOff(&memory)
    }
    memory.pending = nil
    memory.adoptionFailed = false
    // The system already showing the value is a confirmation: a watch
    // prints nothing when an apply changes nothing.
    memory.confirmed = memory.observed == value
  }

  /// The apply that `applyStarted` began has ended and its outcome is
  /// committed: `state` is the switch's State now. `reapplyFailure`: the
  /// reason a re-application failed (it becomes `invalid`, cause `drift`).
  public static func applyEnded(
    _ memory: inout Memory, state: SwitchState, reapplyFailure: String?, readBack: ReadBack,
    now: Int64
  ) -> Verdict {
    memory.applying = nil
    memory.appliedAt = now
    if let reapplyFailure {
      memory.pending = nil
      let reason = "re-applying failed after the system had changed it: \(reapplyFailure)"
      return state.invalid && state.invalidReason == reason
        ? .stillInvalid : .invalidate(state.applied(failure: reason))
    }
    guard let pending = memory.pending else { return .agrees }
    memory.pending = nil
    // The system showed the applied value, then changed: a competitor.
    return judge(&memory, value: pending, state: state, readBack: readBack, now: now)
  }

  /// After an apply ended: the last reading disagrees and nothing has
  /// shown the applied value yet. A watch prints only changes, so one that
  /// missed the applied value (something turned it back at once) may say
  /// nothing more: the caller judges `observed` again after
  /// `settleMilliseconds` (`settled`).
  public static func needsSettling(_ memory: Memory, state: SwitchState) -> Bool {
    guard memory.applying == nil, !memory.confirmed, !memory.observedByCheck,
      let observed = memory.observed
    else {
      return false
    }
    return observed != state.isOnAndInEffect
  }

  /// `settleMilliseconds` after an apply that `needsSettling`: the last
  /// reading is judged again, now as drift if it still disagrees.
  public static func settled(
    _ memory: inout Memory, state: SwitchState, readBack: ReadBack, now: Int64
  ) -> Verdict {
    guard needsSettling(memory, state: state), let observed = memory.observed else {
      return .agrees
    }
    if memory.reapplyScheduled { return .expected }
    return judge(&memory, value: observed, state: state, readBack: readBack, now: now)
  }

  /// A reading of the system: what to do about it. `state` is the switch's
  /// committed State.
  public static func reading(
    _ memory: inout Memory, value: Bool, source: Source, state: SwitchState,
    readBack: ReadBack, now: Int64
  ) -> Verdict {
    memory.observed = value
    memory.observedSource = source
    if let target = memory.applying {
      if value == target {
        memory.confirmed = true
        memory.pending = nil
      } else if memory.confirmed {
        memory.pending = value
      }
      return .expected
    }
    if value == state.isOnAndInEffect {
      memory.confirmed = true
      memory.adoptionFailed = false
      return state.invalid ? .clear(state.applied(failure: nil)) : .agrees
    }
    if isLate(memory, source: source, now: now) || memory.reapplyScheduled { return .expected }
    return judge(&memory, value: value, state: state, readBack: readBack, now: now)
  }

  /// The switch's State changed with no apply of it (a tried change kept,
  /// a hold put on or lifted, a policy's): the last reading is judged again
  /// under the new State, since whether a system that disagrees is adopted
  /// or re-applied depends on it, and a watch prints only changes, so no
  /// reading may come. A re-application scheduled for a switch that is now
  /// free gives way to adopting (rule 19: a writable switch follows the system).
  public static func stateChanged(
    _ memory: inout Memory, state: SwitchState, readBack: ReadBack, now: Int64
  ) -> Verdict {
    guard memory.applying == nil, let observed = memory.observed,
      observed != state.isOnAndInEffect
    else { return .agrees }
    // What may predate the last apply's effect is judged later: a watch's
    // line by `settled`, a check started before the apply ended by the
    // check run after it.
    if isLate(memory, source: memory.observedSource ?? .watch, now: now) { return .expected }
    if memory.reapplyScheduled {
      guard adopts(state, readBack) else { return .expected }
      reapplicationCalledOff(&memory)
    }
    return judge(&memory, value: observed, state: state, readBack: readBack, now: now)
  }

  /// The scheduled re-application will not run (the switch was freed, the
  /// system came back, an apply of it runs): it counts neither towards
  /// `DriftLimit=` nor as one made.
  public static func reapplicationCalledOff(_ memory: inout Memory) {
    guard memory.reapplyScheduled else { return }
    memory.reapplyScheduled = false
    if !memory.reapplications.isEmpty { memory.reapplications.removeLast() }
    memory.reapplicationCount = max(0, memory.reapplicationCount - 1)
  }

  /// A reading that says nothing (nil): the system's value is unknown. It
  /// is forgotten, so nothing judges a reading from before an apply as if
  /// it were the system's now (a check that printed nonsense after an
  /// apply had the earlier reading adopted: a value the system never had).
  public static func unknown(_ memory: inout Memory) {
    memory.observed = nil
    memory.observedSource = nil
  }

  /// Adopting the system's value for a writable switch failed (`reason`:
  /// a dependent's apply command failed, so nothing changed): the switch
  /// becomes `invalid`, cause `drift`, and is not adopted again until the
  /// system agrees with it or an apply of it starts.
  public static func adoptionFailed(
    _ memory: inout Memory, state: SwitchState, reason: String
  ) -> Verdict {
    memory.adoptionFailed = true
    let reason = "adopting the value the system had turned it to failed: \(reason)"
    return state.invalid && state.invalidReason == reason
      ? .stillInvalid : .invalidate(state.applied(failure: reason))
  }

  /// A disagreeing reading that may predate the last apply's effect.
  static func isLate(_ memory: Memory, source: Source, now: Int64) -> Bool {
    guard let appliedAt = memory.appliedAt, !memory.confirmed else { return false }
    switch source {
    case .watch: return now - appliedAt < settleMilliseconds
    case .check(let startedAt): return startedAt < appliedAt
    }
  }

  /// The system has drifted to `value`: adopt, re-apply, or give up.
  static func judge(
    _ memory: inout Memory, value: Bool, state: SwitchState, readBack: ReadBack, now: Int64
  ) -> Verdict {
    if adopts(state, readBack) {
      // A tried change waits to be kept or undone (rule 20), and nothing
      // else writes its value meanwhile: the system's is judged when it is
      // (`stateChanged`, or the apply of the revert). A held switch is
      // re-applied at once all the same: that writes no State.
      if state.pending != nil { return .expected }
      if memory.adoptionFailed { return .stillInvalid }
      var next = state
      next.checked = value
      memory.confirmed = true
      return .adopt(next.applied(failure: nil))
    }
    if state.invalid { return .stillInvalid }
    memory.reapplications.removeAll { now - $0 >= windowMilliseconds }
    let count = memory.reapplications.count
    if count >= readBack.driftLimit {
      return .invalidate(state.applied(failure: keepsTurningReason(value, count: count)))
    }
    memory.reapplications.append(now)
    memory.reapplyScheduled = true
    memory.reapplyGeneration += 1
    memory.lastReapplied = Reapplied(time: now, systemValue: value)
    memory.reapplicationCount += 1
    return .reapply(afterMilliseconds: backoff(after: count), systemValue: value)
  }

  /// At once for the first re-application within the window, then 1 s,
  /// 2 s, 4 s… up to 30 s.
  public static func backoff(after count: Int) -> Int64 {
    guard count > 0 else { return 0 }
    var wait = firstBackoffMilliseconds
    for _ in 1..<count where wait < maximumBackoffMilliseconds { wait *= 2 }
    return min(wait, maximumBackoffMilliseconds)
  }

  /// The `invalidReason` of a switch something keeps moving.
  public static func keepsTurningReason(_ value: Bool, count: Int) -> String {
    "something keeps turning it \(value ? "on" : "off"): re-applied \(count) times in 60 s"
  }

  /// `why`'s line for the last re-application: "re-applied at T: the system
  /// had turned it on" (`time` already formatted).
  public static func reappliedLine(time: String, systemValue: Bool) -> String {
    "re-applied at \(time): the system had turned it \(systemValue ? "on" : "off")"
  }
}
