/// Who made a change: a peer from SO_PEERCRED, a policy file, or switchd
/// itself applying stored values at start or reload.
public enum Actor: Equatable, Hashable, Sendable {
  case peer(uid: UInt32, gid: UInt32, pid: Int32)
  case policy
  case reconcile
}

/// What made a change: the method, a policy applied at start or reload,
/// another switch's change that disabled or enabled this one (`dependency`,
/// rule 17), or an apply at start or reload that set or cleared `invalid`
/// (`reconcile`).
public enum Cause: Sendable, CaseIterable {
  case set
  case toggle
  case reset
  case lock
  case unlock
  case disable
  case enable
  case policy
  case dependency
  case apply
  case reconcile
}

/// One committed change of one switch: one revision, one event.
public struct Change: Equatable, Sendable {
  public var revision: Int64
  /// Milliseconds since the epoch.
  public var time: Int64
  public var key: String
  public var cause: Cause
  public var actor: Actor
  public var state: SwitchState
  public var previous: SwitchState
  /// The uid whose value of a user-scope switch changed; nil for a system
  /// switch and for a switch-level change (a hold, a policy) of a user-scope one.
  public var user: UInt32?

  public init(
    revision: Int64, time: Int64, key: String, cause: Cause, actor: Actor, state: SwitchState,
    previous: SwitchState, user: UInt32? = nil
  ) {
    self.user = user
    self.revision = revision
    self.time = time
    self.key = key
    self.cause = cause
    self.actor = actor
    self.state = state
    self.previous = previous
  }

  /// The State fields this change altered, in wire order.
  public var fields: [StateField] { state.changedFields(from: previous) }
}
