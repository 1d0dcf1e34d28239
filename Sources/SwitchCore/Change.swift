/// Who made a change: a peer from SO_PEERCRED, a policy file, switchd
/// itself applying stored values at start or reload, or the system that
/// switchd reads back (a drift: SEMANTICS.md rules 18–19).
public enum Actor: Equatable, Hashable, Sendable {
  case peer(uid: UInt32, gid: UInt32, pid: Int32)
  case policy
  case reconcile
  case system
  /// switchd carrying out a deadline (rules 21–22): a timed value or hold that ended.
  case timer
}

/// What made a change: the method, a policy applied at start or reload,
/// another switch's change that disabled or enabled this one (`dependency`,
/// rule 17), or an apply at start or reload that set or cleared `invalid`
/// (`reconcile`), a value adopted from the system (`external`), or
/// `invalid` set or cleared because the system kept drifting (`drift`).
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
  case external
  case drift
  /// A timed value or hold that ended at its deadline (rules 21–22).
  case expiry
  /// A tried change kept (rule 20).
  case confirm
  /// A tried change undone: asked for, not confirmed in time, or its
  /// connection closed (rule 20).
  case revert
}

/// One committed change of one switch: one revision, one event.
public struct Change: Equatable, Sendable {
  public var revision: Int64
  /// Milliseconds since the epoch.
  public var time: Int64
  /// The key, with its hash made once (where the writer decided it): the
  /// tables the change goes through on both threads and in the store look
  /// it up without hashing it again.
  public var hashedKey: HashedKey
  public var key: String { hashedKey.string }
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
    self.init(
      revision: revision, time: time, key: HashedKey(key), cause: cause, actor: actor,
      state: state, previous: previous, user: user)
  }

  public init(
    revision: Int64, time: Int64, key: HashedKey, cause: Cause, actor: Actor, state: SwitchState,
    previous: SwitchState, user: UInt32? = nil
  ) {
    self.user = user
    self.revision = revision
    self.time = time
    self.hashedKey = key
    self.cause = cause
    self.actor = actor
    self.state = state
    self.previous = previous
  }

  /// The State fields this change altered, in wire order.
  public var fields: [StateField] { state.changedFields(from: previous) }
}

extension Change {
  /// The switch as this change leaves it: what every copy of the switches
  /// (the writer's, the loop's, the store's rows) takes for a change of the
  /// switch itself (`user` nil). The one place a committed change becomes a record.
  public var record: SwitchRecord {
    SwitchRecord(key: hashedKey, state: state, revision: revision, changedAt: time)
  }

  /// The user's value as this change of it leaves it (`user` set).
  public var userValue: UserValue {
    UserValue(
      checked: state.checked, revision: revision, changedAt: time, expiresAt: state.expiresAt,
      expiryByAdministrator: state.expiryByAdministrator, pendingUntil: state.pendingUntil,
      pending: state.pending)
  }

  /// Takes the committed change `changes[index]` into a copy of the
  /// switches and the users' values: the record of the switch, or the
  /// value of its user. Read field by field where it lies: a change passed
  /// on its own was copied out of its array and released after (~0.15k of
  /// a toggle, callgrind).
  public static func adopt(
    _ changes: [Change], at index: Int, into records: inout KeyTable<SwitchRecord>,
    _ userValues: inout UserValues
  ) {
    if let user = changes[index].user {
      userValues[changes[index].hashedKey, default: [:]][user] = changes[index].userValue
    } else {
      records[changes[index].hashedKey] = changes[index].record
    }
  }
}
