/// The switch rules of docs/semantics.md as plain functions over values.
///
/// Order of checks (docs/protocol.md): PermissionDenied for the method →
/// InvalidParams → UnknownSwitch → PermissionDenied for writing or for
/// naming another user → Disabled → ReadOnly → Conflict; only then is a
/// no-op detected.
public enum Rules {
  /// The first check of the order: whether `caller` may call a method that
  /// needs `privilege` at all. Only administrator methods are refused here;
  /// the Writers group is checked by `decide`, after UnknownSwitch.
  public static func mayCall(_ privilege: Privilege, caller: Caller) -> Bool {
    privilege != .administrator || caller.has(.administrator)
  }

  /// Decides what `operation` does to a switch.
  /// - Returns: the decision, with the switch it was made on, or the refusal.
  public static func decide(
    _ operation: Operation, key: String, definition: SwitchDefinition?, record: SwitchRecord?,
    policy: PolicyRule?, caller: Caller, lasting: Lasting? = nil, at time: Int64 = 0,
    boot: BootMoment? = nil
  ) -> Result<Decision, Refusal> {
    guard let definition, let record else { return .failure(.unknownSwitch(key: key)) }
    return decide(
      operation, key: key, declared: definition, record: record, policy: policy, caller: caller,
      lasting: lasting, at: time, boot: boot)
  }

  /// The same for a declared switch and its record (the writer's: it has
  /// both in hand, and copies of the optionals went through generic value
  /// witnesses, callgrind).
  public static func decide(
    _ operation: Operation, key: String, declared definition: SwitchDefinition,
    record: SwitchRecord, policy: PolicyRule?, caller: Caller, lasting: Lasting? = nil,
    at time: Int64 = 0, boot: BootMoment? = nil
  ) -> Result<Decision, Refusal> {
    Result { () throws(Refusal) in
      Decision(
        definition: definition, record: record, policy: policy,
        next: try next(
          operation, key: key, declared: definition, record: record, policy: policy,
          caller: caller, lasting: lasting, at: time, boot: boot))
    }
  }

  /// What `decide` decides for a declared switch: the State the call
  /// leaves it in (nil: it changes nothing), the refusal thrown. The
  /// writer makes the `Decision` around it in place: one made here was
  /// copied out on its way back (callgrind).
  public static func next(
    _ operation: Operation, key: String, declared definition: borrowing SwitchDefinition,
    record: borrowing SwitchRecord, policy: borrowing PolicyRule?, caller: borrowing Caller,
    lasting: Lasting? = nil, at time: Int64 = 0, boot: BootMoment? = nil
  ) throws(Refusal) -> SwitchState? {
    if operation == .expire {
      // A hold that ends lifts as `unlock` or `enable` would (rule 22): on a
      // user-scope switch that gives each user their own value back.
      guard let ended = expired(record.state, key: key, policy: policy, at: time) else {
        return nil
      }
      return settle(ended, from: record.state, operation, definition)
    }
    let next = try nextState(
      operation, key: key, definition: definition, record: record, policy: policy, caller: caller)
    // A write that changes nothing is a no-op with or without a time
    // (PROTOCOL.md), but for the end of a hold: a `lock` or `disable`
    // without a time makes an administrator's timed hold permanent again
    // (docs/semantics.md), which `timed` does, and is a change of its own.
    guard let next else {
      switch (operation, lasting) {
      case (.lock, nil), (.disable, nil):
        let permanent = timed(
          record.state, from: record.state, operation, lasting: nil, at: time, boot: boot,
          caller: caller)
        return permanent == record.state ? nil : permanent
      default:
        return nil
      }
    }
    return timed(
      consume next, from: record.state, operation, lasting: lasting, at: time, boot: boot,
      caller: caller)
  }

  /// The state `operation` leaves a declared switch in; nil when it changes nothing.
  static func nextState(
    _ operation: Operation, key: String, definition: SwitchDefinition, record: SwitchRecord,
    policy: PolicyRule?, caller: Caller
  ) throws(Refusal) -> SwitchState? {
    if operation.privilege == .administrator && !caller.has(.administrator) {
      throw .permissionDenied(
        key: key, action: operation.verb, requirement: "only an administrator may")
    }
    let state = record.state
    switch operation {
    case .set, .toggle, .reset:
      if let refusal = writeRefusal(key: key, state: state, policy: policy, caller: caller) {
        throw refusal
      }
      // Nobody writes a value that is being tried (rule 20): confirm or revert it first.
      if state.pending != nil { throw .pending(key: key) }
      var next = state
      switch operation {
      case .set(let checked, let ifRevision):
        if let refusal = conflict(key: key, ifRevision: ifRevision, revision: record.revision) {
          throw refusal
        }
        next.checked = checked
      case .toggle(let ifRevision):
        if let refusal = conflict(key: key, ifRevision: ifRevision, revision: record.revision) {
          throw refusal
        }
        next.checked.toggle()
      default:
        next.checked = definition.defaultChecked
      }
      if let refusal = authorizedValueRefusal(key: key, next: next.checked, caller: caller) {
        throw refusal
      }
      return next == state ? nil : next

    case .lock(let reason, let checked):
      // Nobody changes a disabled switch, its hold included; an
      // administrator's lock does not lift a policy's hold.
      if let refusal = holdRefusal(
        key: key, state: state, policy: policy, readOnlyRefuses: state.heldBy == .policy)
      {
        throw refusal
      }
      // A lock that sets the value writes it: refused while the value is
      // tried (rule 20), as `set` is. Let through, the revert would put
      // back the opposite of the lock's value, not the value from before.
      if let checked, checked != state.checked, state.pending != nil {
        throw .pending(key: key)
      }
      var next = state
      next.readOnly = true
      next.heldBy = .admin
      next.readOnlyReason = reason ?? (state.heldBy == .admin ? state.readOnlyReason : nil)
      if let checked { next.checked = checked }
      return settle(next, from: state, operation, definition)

    case .unlock:
      if let refusal = holdRefusal(
        key: key, state: state, policy: policy, readOnlyRefuses: state.heldBy == .policy)
      {
        throw refusal
      }
      var next = state
      next.readOnly = false
      next.heldBy = nil
      next.readOnlyReason = nil
      return settle(next, from: state, operation, definition)

    case .disable(let reason):
      // An administrator's disable takes over from a dependency's (it wins,
      // rule 17); `enable` gives the switch back to the dependency.
      if state.disabledBy == .policy {
        throw disabled(key: key, state: state, policy: policy)
      }
      var next = state
      next.disabled = true
      next.disabledBy = .admin
      next.disabledReason = reason ?? (state.disabledBy == .admin ? state.disabledReason : nil)
      return settle(next, from: state, operation, definition)

    case .enable:
      // Enable lifts an administrator's disable only: a policy's is lifted by
      // its file, a dependency's when the other switch changes (rule 17).
      if state.disabledBy == .policy || state.disabledBy == .dependency {
        throw disabled(key: key, state: state, policy: policy)
      }
      var next = state
      next.disabled = false
      next.disabledBy = nil
      next.disabledReason = nil
      return settle(next, from: state, operation, definition)

    case .apply:
      // Changes no value, so neither a hold nor a disable refuses it; what
      // it may change (`invalid`) is known only once the command has run.
      // InvalidParams comes before PermissionDenied for writing (the order of checks).
      if definition.apply == nil { throw .noApplyCommand(key: key) }
      if !caller.has(operation.privilege) {
        throw .permissionDenied(
          key: key, action: "apply", requirement: caller.writeRequirement)
      }
      return nil

    case .expire:
      return nil  // taken by `decide`, which knows the time

    case .confirm, .revert:
      // Naming another user is refused first, whatever the switch's scope
      // and whether anything is pending (PROTOCOL.md, "Acting as a user").
      if let refusal = actingAsRefusal(key: key, caller: caller) { throw refusal }
      return try settleTried(
        operation, key: key, state: state, policy: policy, caller: caller
      ).get()
    }
  }

  /// Whether a change from `before` to `after` must run the switch's apply
  /// command before it commits (SEMANTICS.md rule 14): the switch has one
  /// and the effective value (`checked` and not `disabled`) changes.
  public static func needsApply(
    _ definition: SwitchDefinition?, from before: SwitchState, to after: SwitchState
  ) -> Bool {
    definition?.apply != nil && before.isOnAndInEffect != after.isOnAndInEffect
  }

  /// Whether a configuration change must run the switch's apply command
  /// (rule 15): it has one, and that command is new or changed (a new
  /// timeout alone is not) or the effective value changes.
  public static func needsApply(
    _ definition: SwitchDefinition?, replacing previous: SwitchDefinition?,
    from before: SwitchState, to after: SwitchState
  ) -> Bool {
    commandIsNew(definition, replacing: previous)
      || needsApply(definition, from: before, to: after)
  }

  /// Whether a configuration gives the switch a command it did not run
  /// before: one it has, new or changed (a new timeout alone is not).
  public static func commandIsNew(
    _ definition: SwitchDefinition?, replacing previous: SwitchDefinition?
  ) -> Bool {
    guard let command = definition?.apply else { return false }
    return previous?.apply?.arguments != command.arguments
  }

  /// Disabled wins over read-only; an administrator may set what it or a
  /// policy holds, unless the policy fixes the value.
  static func valueRefusal(
    key: String, state: SwitchState, policy: PolicyRule?, caller: Caller
  ) -> Refusal? {
    let policyFixesValue = state.heldBy == .policy && policy?.fixesValue == true
    return holdRefusal(
      key: key, state: state, policy: policy,
      readOnlyRefuses: !caller.has(.administrator) || policyFixesValue)
  }

  /// Rule 5, the one place it is decided: a disabled switch refuses with
  /// `Disabled`, whatever else holds it; else a read-only one refuses with
  /// `ReadOnly` when its hold stands against this change (`readOnlyRefuses`:
  /// who is asking and what holds it decide that); else nothing does.
  /// Writes, user values, `writable`, `lock` and `unlock` all ask it.
  static func holdRefusal(
    key: String, state: SwitchState, policy: PolicyRule?, readOnlyRefuses: Bool
  ) -> Refusal? {
    if state.disabled { return disabled(key: key, state: state, policy: policy) }
    if state.readOnly && readOnlyRefuses { return readOnly(key: key, state: state, policy: policy) }
    return nil
  }

  /// Why a `set`, `toggle` or `reset` of a switch in `state` by `caller`
  /// would be refused, by the order of checks up to Conflict; nil when it
  /// would not. The writes' rules refuse with it and `writability` reports
  /// it, so a Switch object's `writableReason` is the refusal's own sentence.
  /// Anyone writes their own value of a user-scope switch; an administrator
  /// writes a user's under a hold that does not fix the value.
  static func writeRefusal(
    key: String, state: SwitchState, policy: PolicyRule?, caller: Caller, scope: Scope = .system
  ) -> Refusal? {
    switch scope {
    case .system:
      if let refusal = actingAsRefusal(key: key, caller: caller) { return refusal }
      if !caller.has(.writer) {
        return .permissionDenied(key: key, action: "change", requirement: caller.writeRequirement)
      }
      return valueRefusal(key: key, state: state, policy: policy, caller: caller)
    case .user:
      if !caller.mayActAs(caller.subject) { return actingAsRefusal(key: key, user: caller.subject) }
      return holdRefusal(
        key: key, state: state, policy: policy,
        readOnlyRefuses: !caller.isAdmin || state.valueFixed)
    }
  }

  /// `writable` and `writableReason` of `key`'s switch in `state` for
  /// `caller`: whether it may change the value now, and if not, why.
  public static func writability(
    key: String, state: SwitchState, policy: PolicyRule?, caller: Caller, scope: Scope = .system
  ) -> Writability {
    // Under polkit the right is asked at the write, never at a read: what a
    // read says is whether the switch's holds let a writer change it.
    // (Two calls, not a caller chosen first: that copied it on every read, callgrind.)
    let refusal =
      caller.asksPolkit
      ? writeRefusal(
        key: key, state: state, policy: policy, caller: caller.granted(.write), scope: scope)
      : writeRefusal(key: key, state: state, policy: policy, caller: caller, scope: scope)
    guard let refusal else { return .writable }
    return .refused(refusal)
  }

  /// A write polkit authorized for one value that would now give the other
  /// (a toggle of a switch that changed while polkit was asked): refused,
  /// so that a grant to turn something off never turns it on.
  static func authorizedValueRefusal(key: String, next: Bool, caller: Caller) -> Refusal? {
    guard let authorized = caller.authorizedValue, authorized != next else { return nil }
    return .permissionDenied(
      key: key, action: "change",
      requirement:
        "polkit authorized turning it \(authorized ? "on" : "off"), and it changed while polkit"
        + " was asked: ask again")
  }

  /// The Conflict a write with `ifRevision` meets at a switch whose
  /// revision is `revision`; nil when it names none or that one.
  static func conflict(key: String, ifRevision: Int64?, revision: Int64) -> Refusal? {
    guard let ifRevision, ifRevision != revision else { return nil }
    return .conflict(key: key, expected: ifRevision, current: revision)
  }

  /// The state a switch has once `rule` (nil: no policy for it) is applied.
  /// What a policy held and no longer holds is lifted; what an administrator
  /// holds is left alone unless the policy now holds it.
  public static func applyPolicy(_ rule: PolicyRule?, to state: SwitchState) -> SwitchState {
    var next = state
    if let rule, rule.readOnly {
      next.readOnly = true
      next.heldBy = .policy
      next.readOnlyReason = rule.reason
      // A scheduled hold's end is its window's (shown; the schedule, not
      // the expiry rules, lifts it).
      next.readOnlyUntil = rule.endsAt
      if let checked = rule.checked { next.checked = checked }
    } else if state.heldBy == .policy {
      next.readOnly = false
      next.heldBy = nil
      next.readOnlyReason = nil
      next.readOnlyUntil = nil
    }
    if let rule, rule.disabled {
      next.disabled = true
      next.disabledBy = .policy
      next.disabledReason = rule.reason
      next.disabledUntil = rule.endsAt
    } else if state.disabledBy == .policy {
      next.disabled = false
      next.disabledBy = nil
      next.disabledReason = nil
      next.disabledUntil = nil
    }
    return next
  }

  /// Whether what the rules answer about a switch in `state` (`writability`,
  /// `policySource`) reads its policy rule at all: only when a policy holds
  /// or disables it. A caller that keeps the rules in a hash table can skip
  /// the look-up otherwise (every `get` and every change asks).
  public static func readsPolicy(_ state: SwitchState) -> Bool {
    state.heldBy == .policy || state.disabledBy == .policy
  }

  /// `policySource` of a switch: the section that disables it (disabled
  /// wins), else the one that holds it, else nil.
  public static func policySource(state: SwitchState, rule: PolicyRule?) -> SourceLocation? {
    if state.disabledBy == .policy, let source = rule?.disabledSource { return source }
    if state.heldBy == .policy, let source = rule?.readOnlySource { return source }
    return nil
  }
}

/// Whether one caller may change a switch's value now: `writable` and
/// `writableReason` of its Switch object (docs/protocol.md).
public enum Writability: Equatable, Sendable {
  case writable
  /// A `set`, `toggle` or `reset` would be refused with this.
  case refused(Refusal)

  /// `writableReason`: the refusal's sentence; nil while writable.
  public var reason: String? {
    guard case .refused(let refusal) = self else { return nil }
    return refusal.message
  }
}

/// What the rules decided for a write to a declared switch, with what the
/// writer needs to carry it out and answer.
public struct Decision: Equatable, Sendable {
  public var definition: SwitchDefinition
  /// The switch before the call.
  public var record: SwitchRecord
  public var policy: PolicyRule?
  /// The new state; nil when the call changes nothing.
  public var next: SwitchState?

  public init(
    definition: SwitchDefinition, record: SwitchRecord, policy: PolicyRule?, next: SwitchState?
  ) {
    self.definition = definition
    self.record = record
    self.policy = policy
    self.next = next
  }
}

extension Rules {
  /// `Disabled`, naming the policy section when a policy disables the switch.
  static func disabled(key: String, state: SwitchState, policy: PolicyRule?) -> Refusal {
    .disabled(
      key: key, reason: state.disabledReason, by: state.disabledBy,
      source: state.disabledBy == .policy ? policy?.disabledSource : nil)
  }

  /// `ReadOnly`, naming the policy section when a policy holds the switch.
  static func readOnly(key: String, state: SwitchState, policy: PolicyRule?) -> Refusal {
    .readOnly(
      key: key, reason: state.readOnlyReason, heldBy: state.heldBy,
      source: state.heldBy == .policy ? policy?.readOnlySource : nil)
  }

  /// The `switchd.conf` settings that changed from `old` to `new` and that a
  /// running daemon does not apply (it opened its socket and database at
  /// start), by their names in the file: a reload says so rather than
  /// succeeding silently.
  public static func settingsNeedingRestart(
    from old: DaemonSettings, to new: DaemonSettings
  ) -> [String] {
    var names: [String] = []
    if old.socket != new.socket { names.append("Socket") }
    if old.varlinkSocket != new.varlinkSocket { names.append("VarlinkSocket") }
    if old.socketMode != new.socketMode { names.append("SocketMode") }
    if old.database != new.database { names.append("Database") }
    return names
  }
}
