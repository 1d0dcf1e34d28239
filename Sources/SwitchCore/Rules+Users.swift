/// The rules of user-scope switches (docs/semantics.md rules 11–12): each
/// user writes their own value; holds and disables are the switch's.
extension Rules {
  /// Decides a `set`, `toggle` or `reset` of a user's own value of a
  /// user-scope switch: the user is `caller.subject` and `own` their value
  /// (nil: never set). Order of checks as for any write: UnknownSwitch →
  /// PermissionDenied for naming another user → Disabled → ReadOnly →
  /// Conflict; then a no-op is detected. Writing one's own value needs no
  /// `Writers` membership. While a hold fixes the value nobody writes it,
  /// administrators included; under a hold that does not, an administrator may.
  ///
  /// `lasting` (`for`/`until`) makes the new value that user's timed value
  /// (rule 21), ending at its deadline from `time`; a write that changes
  /// the value without one ends the user's timer. `.expire` is that end,
  /// carried out by switchd's timer as the user (`expireOwn`).
  ///
  /// Thrown, not returned as a `Result`: the writer's path, where a Result
  /// was copied out and destroyed on every write of a user's value (~0.2k
  /// instructions, callgrind).
  public static func nextUserValue(
    _ operation: Operation, key: String, definition: SwitchDefinition?, record: SwitchRecord?,
    own: UserValue?, policy: PolicyRule?, caller: Caller, lasting: Lasting? = nil,
    at time: Int64 = 0, boot: BootMoment? = nil
  ) throws(Refusal) -> UserDecision {
    guard let definition, let record else { throw .unknownSwitch(key: key) }
    let user = caller.subject
    if operation == .expire {
      return expireOwn(definition, record, policy, user: user, own: own, at: time)
    }
    if operation.settlesTrial {
      if !caller.mayActAs(user) { throw actingAsRefusal(key: key, user: user) }
      return try settleOwnTried(
        operation, key: key, definition, record, policy, user: user, own: own, caller: caller
      ).get()
    }
    if !operation.changesValue {
      if !caller.mayActAs(user) { throw actingAsRefusal(key: key, user: user) }
      // Not a value: `decide` takes these, for every user at once, with
      // its own order of checks (`apply` changes nothing a hold guards).
      _ = try decide(
        operation, key: key, definition: definition, record: record, policy: policy,
        caller: caller
      ).get()
      return UserDecision(user: user, next: nil)
    }
    if let refusal = writeRefusal(
      key: key, state: record.state, policy: policy, caller: caller, scope: .user)
    {
      throw refusal
    }
    // Nobody writes a value that is being tried (rule 20): confirm or revert it first.
    if own?.pending != nil { throw .pending(key: key) }
    // What this user reads, without a copy of the record (a write of a
    // user's value made three, callgrind).
    let seen = Visibility.value(record, own: own, defaultChecked: definition.defaultChecked)
    let current = seen.checked
    let next: Bool
    switch operation {
    case .set(let checked, let ifRevision):
      if let refusal = conflict(key: key, ifRevision: ifRevision, revision: seen.revision) {
        throw refusal
      }
      next = checked
    case .toggle(let ifRevision):
      if let refusal = conflict(key: key, ifRevision: ifRevision, revision: seen.revision) {
        throw refusal
      }
      next = !current
    default:
      // reset: the operations that change no value were taken by `decide` above.
      next = definition.defaultChecked
    }
    if let refusal = authorizedValueRefusal(key: key, next: next, caller: caller) {
      throw refusal
    }
    guard next != current else {
      return UserDecision(user: user, next: nil)
    }
    if case .confirmWithin(let seconds, let onDisconnect) = lasting, let boot {
      var decision = UserDecision(user: user, next: next)
      decision.pendingUntil = time + seconds * 1000
      decision.pending = TriedChange(
        maker: caller.actor, makerIsAdministrator: caller.isAdmin,
        bootDeadline: boot.deadline(after: seconds), bootID: boot.id,
        revertOnDisconnect: onDisconnect)
      return decision
    }
    return UserDecision(
      user: user, next: next, expiresAt: lasting?.deadline(committedAt: time),
      expiryByAdministrator: caller.isAdmin)
  }

  /// `confirm` or `revert` of a user's tried change (rule 20), as
  /// `settleTried` for a system switch: by its maker (any connection of the
  /// same uid) or an administrator; nothing pending is a no-op. `confirm`
  /// keeps the value (a change of the State only); `revert` puts the value
  /// from before back unless a hold wins (`holdWinsOverUndo`).
  static func settleOwnTried(
    _ operation: Operation, key: String, _ definition: SwitchDefinition, _ record: SwitchRecord,
    _ policy: PolicyRule?, user: UInt32, own: UserValue?, caller: Caller
  ) -> Result<UserDecision, Refusal> {
    guard let own, let pending = own.pending else {
      return .success(UserDecision(user: user, next: nil))
    }
    if let refusal = settlingRefusal(operation, key: key, pending, caller: caller) {
      return .failure(refusal)
    }
    let back =
      operation == .revert
      && !holdWinsOverUndo(
        key: key, state: record.state, policy: policy,
        makerIsAdministrator: pending.makerIsAdministrator)
    return .success(UserDecision(user: user, next: back ? !own.checked : own.checked))
  }

  /// The end of a user's timed value whose deadline passed by `time`: their
  /// value from before comes back, unless the switch is disabled by then,
  /// or held so that the value's maker may not write it (the hold wins, as
  /// for a system switch: only the timer ends, `holdWinsOverUndo`). A no-op
  /// when the timer is gone or not yet due.
  static func expireOwn(
    _ definition: SwitchDefinition, _ record: SwitchRecord, _ policy: PolicyRule?, user: UInt32,
    own: UserValue?, at time: Int64
  ) -> UserDecision {
    guard let own, let deadline = own.expiresAt, deadline <= time else {
      return UserDecision(user: user, next: nil)
    }
    let held = holdWinsOverUndo(
      key: definition.key, state: record.state, policy: policy,
      makerIsAdministrator: own.expiryByAdministrator)
    return UserDecision(user: user, next: held ? own.checked : !own.checked, expiresAt: nil)
  }

  /// Whose world a read sees: the user it names (`viewpoint`), else the
  /// caller's own. Naming another user, or every user, is an
  /// administrator's right.
  public static func viewpoint(
    _ named: Viewpoint?, caller: Caller, key: String?
  ) -> Result<Viewpoint, Refusal> {
    switch named {
    case nil:
      return .success(.user(caller.subject))
    case .user(let uid):
      return caller.mayActAs(uid)
        ? .success(.user(uid)) : .failure(actingAsRefusal(key: key, user: uid))
    case .everyone:
      guard caller.isAdmin else {
        return .failure(
          .permissionDenied(
            key: key,
            action: key == nil ? "follow every user's values" : "follow every user's values of",
            requirement: "only an administrator may"))
      }
      return .success(.everyone)
    }
  }

  /// `PermissionDenied` when the request names a user the caller may not
  /// act as (another, without being an administrator); nil otherwise.
  static func actingAsRefusal(key: String, caller: Caller) -> Refusal? {
    guard let named = caller.actingAs, !caller.mayActAs(named) else { return nil }
    return actingAsRefusal(key: key, user: named)
  }

  /// `PermissionDenied` for naming another user without being an administrator.
  public static func actingAsRefusal(key: String?, user: UInt32) -> Refusal {
    .permissionDenied(
      key: key, action: key == nil ? "act as user \(user)" : "act as user \(user) on",
      requirement: "only an administrator may act as another user")
  }

  /// The state a switch-level operation leaves; nil when it changes nothing.
  /// On a user-scope switch, `lock` with `checked` fixes the value for every
  /// user until `unlock`; where nothing fixes it, `checked` is what a user
  /// who never set it reads (the default).
  static func settle(
    _ next: SwitchState, from state: SwitchState, _ operation: Operation,
    _ definition: SwitchDefinition
  ) -> SwitchState? {
    guard definition.scope == .user else { return next == state ? nil : next }
    var next = next
    switch operation {
    case .lock(_, let checked): if checked != nil { next.valueFixed = true }
    case .unlock: next.valueFixed = false
    default: break
    }
    return settleForUsers(next, from: state, definition)
  }

  /// The state a policy leaves a switch in, by its scope (`applyPolicy`):
  /// on a user-scope switch a policy's `Checked=` fixes the value for every user.
  public static func applyPolicy(
    _ rule: PolicyRule?, to state: SwitchState, definition: SwitchDefinition
  ) -> SwitchState {
    var next = applyPolicy(rule, to: state)
    guard definition.scope == .user else { return next }
    if let rule, rule.readOnly {
      next.valueFixed = rule.checked != nil
    } else if state.heldBy == .policy {
      next.valueFixed = false
    }
    return settleForUsers(next, from: state, definition) ?? state
  }

  /// The switch-level State of `definition`'s switch as the schema now has
  /// it: on a user-scope switch whose value no hold fixes, `checked` is the
  /// current default (what a user who never set it reads), so that the next
  /// switch-level change's `previous` is what such a user read, also after
  /// `Default=` or `Scope=` changed (a schema change, with no revision).
  public static func withCurrentDefault(
    _ state: SwitchState, definition: SwitchDefinition
  ) -> SwitchState {
    guard definition.scope == .user, !state.valueFixed else { return state }
    var settled = state
    settled.checked = definition.defaultChecked
    return settled
  }

  /// `next` with a value nothing fixes set to the default; nil when it
  /// differs from `state` in nothing a user reads (a default that changed
  /// since is a schema change, not a change of the switch).
  private static func settleForUsers(
    _ next: SwitchState, from state: SwitchState, _ definition: SwitchDefinition
  ) -> SwitchState? {
    func meaning(_ s: SwitchState) -> SwitchState {
      var s = s
      if !s.valueFixed { s.checked = false }
      return s
    }
    guard meaning(next) != meaning(state) else { return nil }
    var settled = next
    if !settled.valueFixed { settled.checked = definition.defaultChecked }
    return settled
  }
}

/// What the rules decided for a write of one user's own value: whose, and
/// their new value with its timers. Not the switch, its definition, policy
/// or the user's value before: the writer has them and passes them on, and
/// a decision that held copies of them cost a user's toggle ~0.4k
/// instructions in copies made and destroyed (callgrind).
public struct UserDecision: Equatable, Sendable {
  /// Whose value.
  public var user: UInt32
  /// Their new value; nil when the call changes nothing.
  public var next: Bool?
  /// When the new value ends (their timed value); nil: it lasts.
  public var expiresAt: Int64?
  /// Whether an administrator set that timed value (`UserValue.expiryByAdministrator`).
  public var expiryByAdministrator: Bool
  /// When the new value is tried (rule 20): its wall-clock deadline and the
  /// tried change; nil for any other write, which ends a trial.
  public var pendingUntil: Int64? = nil
  public var pending: TriedChange? = nil

  public init(
    user: UInt32, next: Bool?, expiresAt: Int64? = nil, expiryByAdministrator: Bool = false
  ) {
    self.user = user
    self.next = next
    self.expiresAt = expiresAt
    self.expiryByAdministrator = expiresAt != nil && expiryByAdministrator
  }

  /// The change this write makes, at `revision` and `time`, of the switch
  /// `record` (of `definition`) whose value the user had as `own` (nil:
  /// never set), as `nextUserValue` was given them; nil for a no-op.
  public func change(
    revision: Int64, time: Int64, cause: Cause, actor: Actor, record: borrowing SwitchRecord,
    own: UserValue?, defaultChecked: Bool
  ) -> Change? {
    guard let next else { return nil }
    // What the user read before, without a copy of the whole record.
    var previous = Visibility.state(
      record.state,
      checked: Visibility.value(record, own: own, defaultChecked: defaultChecked).checked,
      own: own)
    // Under a hold that fixes the value, only a timer's end comes here: the
    // change is of the user's own value, which stays.
    if record.state.valueFixed { previous.checked = own?.checked ?? defaultChecked }
    var state = previous
    state.checked = next
    state.setUserDeadlines(
      expiresAt: expiresAt, byAdministrator: expiryByAdministrator, pendingUntil: pendingUntil,
      pending: pending)
    // The record's key: the same key, hashed when the record was made.
    return Change(
      revision: revision, time: time, key: record.hashedKey, cause: cause, actor: actor,
      state: state, previous: previous, user: user)
  }
}
