/// How long a timed value or hold lasts (SEMANTICS.md rules 21–22): `for`
/// seconds from its commit, or `until` a time.
public enum Lasting: Equatable, Sendable {
  case seconds(Int64)
  /// Milliseconds since the epoch.
  case until(Int64)

  /// `for` at most, and how far ahead `until` may be: a year (PROTOCOL.md).
  public static let longestSeconds: Int64 = 31_536_000

  /// The deadline of a change committed at `time` (milliseconds): `for`
  /// becomes a time when the change commits, so the wall clock decides from then on.
  public func deadline(committedAt time: Int64) -> Int64 {
    switch self {
    case .seconds(let seconds): return time + seconds * 1000
    case .until(let until): return until
    }
  }
}

/// The rules of deadlines: what a timed write sets, and what ends when.
/// Pure: the time is always a parameter, so tests inject the clock.
extension Rules {
  /// `next` (what `operation` leaves the switch in) with its time fields
  /// set: a value write that changes the value starts its timer (with
  /// `lasting`) or ends it (without); a `lock` or `disable` starts or ends
  /// the hold's; a hold that is no longer the administrator's has no end of
  /// its own (a policy's lifts with its file or schedule).
  static func timed(
    _ next: SwitchState, from state: SwitchState, _ operation: Operation, lasting: Lasting?,
    at time: Int64
  ) -> SwitchState {
    var next = next
    let deadline = lasting?.deadline(committedAt: time)
    switch operation {
    case .set, .toggle, .reset:
      if next.checked != state.checked { next.expiresAt = deadline }
    case .lock:
      next.readOnlyUntil = deadline
      if next.checked != state.checked { next.expiresAt = nil }
    case .disable:
      next.disabledUntil = deadline
    case .unlock, .enable, .apply, .expire:
      break
    }
    return settledDeadlines(next, from: state)
  }

  /// The time fields that no longer mean anything once `next` replaced
  /// `state`: a value that changed by other means ends its timer, a hold
  /// that is not the administrator's has no end.
  public static func settledDeadlines(_ next: SwitchState, from state: SwitchState) -> SwitchState {
    var next = next
    if next.checked != state.checked && next.expiresAt == state.expiresAt { next.expiresAt = nil }
    if next.heldBy != .admin { next.readOnlyUntil = nil }
    if next.disabledBy != .admin { next.disabledUntil = nil }
    return next
  }

  /// The state after the earliest deadline of `state` that has passed at
  /// `now`, with the kind of change it is; nil when none has. One deadline
  /// a call, so each is one change, in deadline order (a disable's end
  /// first when two fall together: the value's end is then judged unheld).
  ///
  /// A timed value's end is judged as a write by its maker would be: if
  /// the switch is disabled or read-only by then, the hold wins and only
  /// the timer ends (SEMANTICS.md, after rule 22).
  public static func expired(_ state: SwitchState, at now: Int64) -> SwitchState? {
    let due = [
      (state.disabledUntil, 0), (state.readOnlyUntil, 1), (state.expiresAt, 2),
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
      }
    default:
      next.expiresAt = nil
      if !next.readOnly && !next.disabled { next.checked.toggle() }
    }
    return next
  }
}
