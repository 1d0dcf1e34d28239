/// How long a timed value or hold lasts (SEMANTICS.md rules 21–22): `for`
/// seconds from its commit, or `until` a time.
public enum Lasting: Equatable, Sendable {
  case seconds(Int64)
  /// Milliseconds since the epoch.
  case until(Int64)
  /// A tried change (rule 20): reverted after `seconds` on the boot clock
  /// unless confirmed, and when its connection closes first if `revertOnDisconnect`.
  case confirmWithin(seconds: Int64, revertOnDisconnect: Bool)

  /// `for` at most, and how far ahead `until` may be: a year (PROTOCOL.md).
  public static let longestSeconds: Int64 = 31_536_000

  /// The deadline of a change committed at `time` (milliseconds): `for`
  /// becomes a time when the change commits, so the wall clock decides from then on.
  public func deadline(committedAt time: Int64) -> Int64 {
    switch self {
    case .seconds(let seconds), .confirmWithin(let seconds, _): return time + seconds * 1000
    case .until(let until): return until
    }
  }

  /// `confirmWithin` at most (PROTOCOL.md).
  public static let longestTrialSeconds: Int64 = 3600
}

/// The rules of deadlines: what a timed write sets, and what ends when.
/// Pure: the time is always a parameter, so tests inject the clock.
extension Rules {
  /// `next` (what `operation` leaves the switch in) with its time fields
  /// set: a value write that changes the value starts its timer (with
  /// `lasting`) or ends it (without); a `lock` or `disable` starts or ends
  /// the hold's; a hold that is no longer the administrator's has no end of
  /// its own (a policy's lifts with its file or schedule).
  /// (`next` is consumed, as in `settledDeadlines`.)
  static func timed(
    _ next: consuming SwitchState, from state: SwitchState, _ operation: Operation,
    lasting: Lasting?, at time: Int64, boot: BootMoment?, caller: Caller
  ) -> SwitchState {
    var next = next
    let deadline = lasting?.deadline(committedAt: time)
    switch operation {
    case .set, .toggle, .reset:
      guard next.checked != state.checked else { break }
      if case .confirmWithin(let seconds, let onDisconnect) = lasting, let boot {
        next.expiresAt = nil
        next.pendingUntil = deadline
        next.pending = TriedChange(
          maker: caller.actor, makerIsAdministrator: caller.has(.administrator),
          bootDeadline: boot.deadline(after: seconds), bootID: boot.id,
          revertOnDisconnect: onDisconnect)
      } else {
        next.expiresAt = deadline
        // After `expiresAt`: the flag means nothing (and is not kept) without it.
        next.expiryByAdministrator = deadline != nil && caller.has(.administrator)
      }
    case .lock:
      next.readOnlyUntil = deadline
      if next.checked != state.checked { next.expiresAt = nil }
    case .disable:
      next.disabledUntil = deadline
    case .unlock, .enable, .apply, .expire, .confirm, .revert:
      break
    }
    return settledDeadlines(consume next)
  }

  /// The time fields that no longer mean anything in `next`: a hold that
  /// is gone has no end (a policy's is its schedule's, set by
  /// `applyPolicy`, and stays while the policy holds). The value's timer is
  /// not among them: a write of the value and a `lock` with one set or end
  /// it themselves (`timed`), so one given the same deadline again keeps
  /// it (`until` the same time), and a tried change, the one other thing
  /// that moves a value, has none.
  /// `next` is consumed: the State handed back is it, not a copy (a copy
  /// and a destroy of every write's State, callgrind).
  public static func settledDeadlines(_ next: consuming SwitchState) -> SwitchState {
    // Nothing to clear (nearly every write): no copy made and set back.
    guard next.hasDeadlines else { return next }
    var next = next
    if next.heldBy == nil { next.readOnlyUntil = nil }
    if next.disabledBy == nil { next.disabledUntil = nil }
    return next
  }

  /// The state after the earliest deadline of `state` that has passed at
  /// `now`, with the kind of change it is; nil when none has. One deadline
  /// a call, so each is one change, in deadline order (a disable's end
  /// first when two fall together: the value's end is then judged unheld).
  ///
  /// A timed value's end is judged as a write by its maker would be
  /// (`holdWinsOverUndo`): if the switch is disabled by then, or held so
  /// that its maker may not write it, the hold wins and only the timer
  /// ends (SEMANTICS.md, after rule 22).
  public static func expired(
    _ state: SwitchState, key: String, policy: PolicyRule?, at now: Int64
  ) -> SwitchState? {
    // A policy's hold ends with its schedule's window, not here (`nextDeadline`).
    let due = [
      (state.disabledBy == .admin ? state.disabledUntil : nil, 0),
      (state.heldBy == .admin ? state.readOnlyUntil : nil, 1), (state.expiresAt, 2),
    ].compactMap { deadline, order in deadline.flatMap { $0 <= now ? ($0, order) : nil } }
    guard let first = due.min(by: { ($0.0, $0.1) < ($1.0, $1.1) }) else { return nil }
    var next = state
    switch first.1 {
    case 0:
      next.disabledUntil = nil
      if next.disabledBy == .admin {
        next.disabled = false
        next.disabledBy = nil
        next.disabledReason = nil
      }
    case 1:
      next.readOnlyUntil = nil
      if next.heldBy == .admin {
        next.readOnly = false
        next.heldBy = nil
        next.readOnlyReason = nil
        // As `unlock`: a user-scope lock's fixed value ends with it (`next`
        // then gives each user their own value back).
        next.valueFixed = false
      }
    default:
      let byAdministrator = next.expiryByAdministrator
      next.expiresAt = nil
      if !holdWinsOverUndo(
        key: key, state: state, policy: policy, makerIsAdministrator: byAdministrator)
      {
        next.checked.toggle()
      }
    }
    return next
  }

  /// Whether a hold stands against the undo of a timed value or a tried
  /// change, judged as a write by its maker would be when it comes
  /// (SEMANTICS.md, after rule 22): a disabled switch refuses everyone; a
  /// read-only one refuses a maker who was not an administrator, and an
  /// administrator when the hold fixes the value (a policy's `Checked=`, a
  /// user-scope `lock` with `checked`). Whether the maker was an
  /// administrator is kept with the deadline: nobody can be asked at its end.
  static func holdWinsOverUndo(
    key: String, state: SwitchState, policy: PolicyRule?, makerIsAdministrator: Bool
  ) -> Bool {
    let fixed = state.valueFixed || (state.heldBy == .policy && policy?.fixesValue == true)
    return holdRefusal(
      key: key, state: state, policy: policy, readOnlyRefuses: !makerIsAdministrator || fixed)
      != nil
  }
}

extension Rules {
  /// The change an ending whose apply command failed makes: the timer ends
  /// and the value stays as it is, `invalid` with the command's reason
  /// (SEMANTICS.md, after rule 22: the undo is a write like any other, but
  /// a deadline cannot be refused and tried again for ever).
  public static func failedEnding(
    _ state: SwitchState, next: SwitchState, reason: String
  ) -> SwitchState {
    var kept = state
    kept.expiresAt = next.expiresAt
    kept.readOnlyUntil = next.readOnlyUntil
    kept.disabledUntil = next.disabledUntil
    kept.pendingUntil = next.pendingUntil
    kept.pending = next.pending
    return kept.applied(failure: reason)
  }
}

/// Where the boot clock is: CLOCK_BOOTTIME in milliseconds and the boot's
/// id (`/proc/sys/kernel/random/boot_id`). A tried change's deadline runs on
/// it, so setting the wall clock neither shortens nor stretches the window,
/// and a tried change from another boot is reverted at once.
public struct BootMoment: Equatable, Sendable {
  public var milliseconds: Int64
  public var id: String

  public init(milliseconds: Int64, id: String) {
    self.milliseconds = milliseconds
    self.id = id
  }

  /// The boot-clock deadline `seconds` from this moment, a millisecond past
  /// the sum: the boot clock is read after the group's wall time and both
  /// are cut to whole milliseconds, so at the sum the wall clock may still
  /// read 1 ms before the `pendingUntil` the answer gave (an audit: the
  /// revert came before the time the switch showed). It closes that
  /// rounding only: a wall clock slewed by NTP meanwhile still differs.
  public func deadline(after seconds: Int64) -> Int64 { milliseconds + seconds * 1000 + 1 }
}

/// A tried change waiting for `confirm` (rule 20): kept in the State, so in
/// the database with the change that made it.
public struct TriedChange: Equatable, Hashable, Sendable {
  /// Who made it: who may confirm or revert it (any connection of its uid,
  /// or an administrator), and the actor of the revert nobody stopped.
  public var maker: Actor
  /// Whether the maker was an administrator: the revert is judged as a
  /// write by its maker would be (SEMANTICS.md, after rule 22).
  public var makerIsAdministrator: Bool
  /// On the boot clock of `bootID`, in milliseconds.
  public var bootDeadline: Int64
  public var bootID: String
  public var revertOnDisconnect: Bool

  public init(
    maker: Actor, makerIsAdministrator: Bool, bootDeadline: Int64, bootID: String,
    revertOnDisconnect: Bool
  ) {
    self.maker = maker
    self.makerIsAdministrator = makerIsAdministrator
    self.bootDeadline = bootDeadline
    self.bootID = bootID
    self.revertOnDisconnect = revertOnDisconnect
  }

  /// Whether switchd must revert it now: its deadline passed, or the
  /// machine restarted since (nobody could confirm).
  public func isDue(at boot: BootMoment) -> Bool {
    bootID != boot.id || bootDeadline <= boot.milliseconds
  }
}

extension Rules {
  /// Who may settle `pending` (rule 20): its maker, any connection of the
  /// same uid, or an administrator; nil when `caller` may.
  public static func settlingRefusal(
    _ operation: Operation, key: String, _ pending: TriedChange, caller: Caller
  ) -> Refusal? {
    if caller.has(.administrator) { return nil }
    if case .peer(let maker, _, _) = pending.maker, caller.uid == maker { return nil }
    return .permissionDenied(
      key: key, action: operation.verb,
      requirement: "only the caller that made the change or an administrator may")
  }

  /// `confirm` or `revert` of a tried change (rule 20): by its maker (any
  /// connection of the same uid) or an administrator; nothing pending is a
  /// no-op. A revert puts the value from before back, unless the switch was
  /// disabled since, or held so that its maker may not write it
  /// (`holdWinsOverUndo`): then the hold wins and only the trial ends.
  static func settleTried(
    _ operation: Operation, key: String, state: SwitchState, policy: PolicyRule?, caller: Caller
  ) -> Result<SwitchState?, Refusal> {
    guard let pending = state.pending else { return .success(nil) }
    if let refusal = settlingRefusal(operation, key: key, pending, caller: caller) {
      return .failure(refusal)
    }
    var next = state
    next.pending = nil
    next.pendingUntil = nil
    if operation == .revert
      && !holdWinsOverUndo(
        key: key, state: state, policy: policy, makerIsAdministrator: pending.makerIsAdministrator)
    {
      next.checked.toggle()
    }
    return .success(next)
  }
}
