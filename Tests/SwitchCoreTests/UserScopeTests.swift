import Testing

@testable import SwitchCore

/// Rules 11–13 of docs/semantics.md: each user's own value, holds for
/// everyone, and who sees what.
@Suite struct UserScopeTests {
  static let definition = SwitchDefinition(
    key: "email.marketing", label: "Marketing emails", defaultChecked: true, scope: .user)
  static let free = SwitchRecord(key: "email.marketing", state: SwitchState(checked: true))
  // A system account: it may not write system switches, but writes its own values.
  static let alice = Caller(
    actor: .peer(uid: 1000, gid: 1000, pid: 1), isAdmin: false, mayWrite: false)
  static let bob = Caller(
    actor: .peer(uid: 1001, gid: 1001, pid: 2), isAdmin: false, mayWrite: true)
  static let admin = Caller(actor: .peer(uid: 0, gid: 0, pid: 3), isAdmin: true, mayWrite: true)

  static func decide(
    _ operation: Operation, _ caller: Caller, record: SwitchRecord = free, own: UserValue? = nil
  ) -> Result<UserDecision, Refusal> {
    Result { () throws(Refusal) in
      try Rules.nextUserValue(
        operation, key: definition.key, definition: definition, record: record, own: own,
        policy: nil, caller: caller)
    }
  }

  static func writability(_ state: SwitchState, _ caller: Caller) -> Writability {
    Rules.writability(
      key: definition.key, state: state, policy: nil, caller: caller, scope: .user)
  }

  /// `writable` and `writableReason` of a user-scope switch are what a
  /// `set` of the other value by that user would get.
  @Test func writabilityAgreesWithWhatASetOfOnesOwnValueWouldDo() {
    var locked = Self.free.state
    locked.readOnly = true
    locked.heldBy = .policy
    locked.valueFixed = true
    locked.readOnlyReason = "Fixed."
    var disabled = Self.free.state
    disabled.disabled = true
    disabled.disabledBy = .admin
    for state in [Self.free.state, locked, disabled] {
      for caller in [Self.alice, Self.bob, Self.admin, Self.alice.acting(as: 1001)] {
        let record = SwitchRecord(key: Self.definition.key, state: state, revision: 1)
        let decision = Self.decide(.set(checked: false, ifRevision: nil), caller, record: record)
        let expected: Writability
        switch decision {
        case .success: expected = .writable
        case .failure(let refusal): expected = .refused(refusal)
        }
        #expect(Self.writability(state, caller) == expected, "\(state) \(caller)")
      }
    }
  }

  @Test func aUserWhoNeverSetItReadsTheDefaultAndWritesTheirOwn() throws {
    let seen = Visibility.record(Self.free, own: nil, definition: Self.definition)
    #expect(seen.state.checked == true)
    let decided = try Self.decide(.set(checked: false, ifRevision: nil), Self.alice).get()
    #expect(decided.user == 1000)
    #expect(decided.next == false)
    let change = try #require(
      decided.change(
        revision: 7, time: 1, cause: .set, actor: Self.alice.actor, record: Self.free, own: nil,
        defaultChecked: Self.definition.defaultChecked))
    #expect(change.user == 1000)
    #expect(change.fields == [.checked])
    // A toggle flips what the user reads; setting what they read is a no-op.
    let own = UserValue(checked: false, revision: 7, changedAt: 1)
    #expect(try Self.decide(.toggle(ifRevision: nil), Self.alice, own: own).get().next == true)
    #expect(
      try Self.decide(.set(checked: false, ifRevision: nil), Self.alice, own: own).get().next
        == nil)
    #expect(try Self.decide(.reset, Self.alice).get().next == nil)
    #expect(try Self.decide(.reset, Self.alice, own: own).get().next == true)
  }

  @Test func namingAnotherUserIsAnAdministratorsRight() throws {
    let refused = Self.decide(.set(checked: false, ifRevision: nil), Self.bob.acting(as: 1000))
    guard case .failure(.permissionDenied) = refused else {
      Issue.record("expected PermissionDenied, got \(refused)")
      return
    }
    // Naming oneself is allowed.
    #expect(
      try Self.decide(.set(checked: false, ifRevision: nil), Self.bob.acting(as: 1001)).get()
        .user == 1001)
    let acting = try Self.decide(.set(checked: false, ifRevision: nil), Self.admin.acting(as: 1000))
      .get()
    #expect(acting.user == 1000)
    // On a system switch too, whatever its scope.
    let system = SwitchDefinition(key: "wifi", label: "Wi-Fi", defaultChecked: true)
    let onSystem = Rules.decide(
      .set(checked: false, ifRevision: nil), key: "wifi", definition: system,
      record: SwitchRecord(key: "wifi", state: SwitchState(checked: true)), policy: nil,
      caller: Self.bob.acting(as: 1000))
    guard case .failure(.permissionDenied) = onSystem else {
      Issue.record("expected PermissionDenied, got \(onSystem)")
      return
    }
  }

  @Test func aHoldThatFixesTheValueIsReadByEveryoneAndWrittenByNoOne() throws {
    let locked = try #require(
      try Rules.decide(
        .lock(reason: "corp", checked: false), key: Self.definition.key,
        definition: Self.definition, record: Self.free, policy: nil, caller: Self.admin
      ).get().next)
    #expect(locked.valueFixed)
    #expect(locked.checked == false)
    let record = SwitchRecord(key: Self.definition.key, state: locked, revision: 9)
    let own = UserValue(checked: true, revision: 3, changedAt: 1)
    #expect(Visibility.record(record, own: own, definition: Self.definition).state.checked == false)
    for caller in [Self.alice, Self.admin.acting(as: 1000)] {
      let refused = Self.decide(.set(checked: true, ifRevision: nil), caller, record: record)
      guard case .failure(.readOnly) = refused else {
        Issue.record("expected ReadOnly, got \(refused)")
        continue
      }
    }
    #expect(
      Self.writability(locked, Self.admin)
        == .refused(.readOnly(key: Self.definition.key, reason: "corp", heldBy: .admin)))
    // Unlocking gives each user their own choice back.
    let unlocked = try #require(
      try Rules.decide(
        .unlock, key: Self.definition.key, definition: Self.definition, record: record,
        policy: nil, caller: Self.admin
      ).get().next)
    #expect(!unlocked.valueFixed)
    let after = SwitchRecord(key: Self.definition.key, state: unlocked, revision: 10)
    #expect(Visibility.record(after, own: own, definition: Self.definition).state.checked == true)
    #expect(Visibility.record(after, own: nil, definition: Self.definition).state.checked == true)
  }

  /// A timed lock with `checked` ends as `unlock` would (rule 22): the
  /// value it fixed ends with it and each user reads their own again (it
  /// stayed fixed, hidden, and users' writes changed nothing they could see).
  @Test func aTimedLockThatFixedTheValueGivesEachUserTheirOwnBackAtItsEnd() throws {
    let now: Int64 = 1_800_000_000_000
    let locked = try #require(
      try Rules.decide(
        .lock(reason: nil, checked: false), key: Self.definition.key,
        definition: Self.definition, record: Self.free, policy: nil, caller: Self.admin,
        lasting: .seconds(60), at: now
      ).get().next)
    #expect(locked.valueFixed && locked.readOnlyUntil == now + 60_000)
    let record = SwitchRecord(key: Self.definition.key, state: locked, revision: 9)
    let ended = try #require(
      try Rules.decide(
        .expire, key: Self.definition.key, definition: Self.definition, record: record,
        policy: nil, caller: Self.admin, at: now + 60_000
      ).get().next)
    #expect(!ended.valueFixed && !ended.readOnly && ended.heldBy == nil)
    #expect(ended.readOnlyUntil == nil)
    // The switch-level value is the default again (what "*" watchers and
    // the next change's `previous` show), no longer the locked one.
    #expect(ended.checked == Self.definition.defaultChecked)
    let after = SwitchRecord(key: Self.definition.key, state: ended, revision: 10)
    // A user whose own value is off reads it (not the default, on); one
    // who never set theirs reads the default (not the locked off).
    let own = UserValue(checked: false, revision: 3, changedAt: 1)
    #expect(Visibility.record(after, own: own, definition: Self.definition).state.checked == false)
    #expect(Visibility.record(after, own: nil, definition: Self.definition).state.checked == true)
    // A user's write changes what they read again.
    let written = try Self.decide(
      .set(checked: true, ifRevision: nil), Self.alice, record: after, own: own
    ).get()
    #expect(written.next == true)
  }

  @Test func aHoldThatDoesNotFixTheValueLetsOnlyAdministratorsWrite() throws {
    let held = try #require(
      try Rules.decide(
        .lock(reason: nil, checked: nil), key: Self.definition.key, definition: Self.definition,
        record: Self.free, policy: nil, caller: Self.admin
      ).get().next)
    #expect(!held.valueFixed)
    let record = SwitchRecord(key: Self.definition.key, state: held, revision: 2)
    guard
      case .failure(.readOnly) = Self.decide(.toggle(ifRevision: nil), Self.alice, record: record)
    else {
      Issue.record("a user wrote under a hold")
      return
    }
    #expect(
      try Self.decide(.toggle(ifRevision: nil), Self.admin.acting(as: 1000), record: record).get()
        .next == false)
    #expect(Self.writability(held, Self.admin) == .writable)
    #expect(
      Self.writability(held, Self.alice)
        == .refused(.readOnly(key: Self.definition.key, reason: nil, heldBy: .admin)))
    // A system account writes its own value of a free user-scope switch.
    #expect(Self.writability(Self.free.state, Self.alice) == .writable)
  }

  @Test func disabledWinsForEveryUser() {
    var state = Self.free.state
    state.disabled = true
    state.disabledBy = .admin
    let record = SwitchRecord(key: Self.definition.key, state: state)
    for caller in [Self.alice, Self.admin] {
      guard case .failure(.disabled) = Self.decide(.reset, caller, record: record) else {
        Issue.record("expected Disabled")
        continue
      }
    }
  }

  /// `apply` changes no value: on a user-scope switch (which has no
  /// command) it is InvalidParams, also when the switch is disabled or held
  /// (PROTOCOL.md, `apply`), not Disabled or ReadOnly.
  @Test func applyIsNoApplyCommandWhateverTheSwitchsState() {
    #expect(Operation.apply.changesValue == false)
    #expect(Operation.reset.changesValue && !Operation.lock(reason: nil, checked: nil).changesValue)
    var disabled = Self.free.state
    disabled.disabled = true
    disabled.disabledBy = .admin
    var held = Self.free.state
    held.readOnly = true
    held.heldBy = .admin
    held.valueFixed = true
    for state in [Self.free.state, disabled, held] {
      let record = SwitchRecord(key: Self.definition.key, state: state)
      guard case .failure(.noApplyCommand) = Self.decide(.apply, Self.bob, record: record) else {
        Issue.record("expected the no-command refusal for \(state)")
        continue
      }
    }
  }

  @Test func namingAnotherUserOrEveryUserIsAnAdministratorsRight() throws {
    #expect(try Rules.viewpoint(nil, caller: Self.alice, key: nil).get() == .user(1000))
    #expect(try Rules.viewpoint(.user(1000), caller: Self.alice, key: nil).get() == .user(1000))
    #expect(try Rules.viewpoint(.user(1000), caller: Self.admin, key: nil).get() == .user(1000))
    #expect(try Rules.viewpoint(.everyone, caller: Self.admin, key: nil).get() == .everyone)
    for named in [Viewpoint.user(1001), .everyone] {
      guard case .failure(.permissionDenied) = Rules.viewpoint(named, caller: Self.alice, key: nil)
      else {
        Issue.record("expected PermissionDenied for \(named)")
        continue
      }
    }
  }

  @Test func ifRevisionIsTheRevisionTheUserSees() throws {
    let record = SwitchRecord(
      key: Self.definition.key, state: SwitchState(checked: true), revision: 5)
    let own = UserValue(checked: false, revision: 8, changedAt: 1)
    #expect(Visibility.record(record, own: own, definition: Self.definition).revision == 8)
    guard
      case .failure(.conflict(_, 5, 8)) = Self.decide(
        .set(checked: true, ifRevision: 5), Self.alice, record: record, own: own)
    else {
      Issue.record("expected a Conflict at revision 8")
      return
    }
    #expect(
      try Self.decide(.set(checked: true, ifRevision: 8), Self.alice, record: record, own: own)
        .get().next == true)
  }

  @Test func aPolicyCheckedFixesTheValueAndLiftingItDoesNot() {
    let rule = PolicyRule(key: Self.definition.key, readOnly: true, checked: false, reason: "corp")
    let fixed = Rules.applyPolicy(rule, to: Self.free.state, definition: Self.definition)
    #expect(fixed.valueFixed && fixed.checked == false && fixed.heldBy == .policy)
    let lifted = Rules.applyPolicy(nil, to: fixed, definition: Self.definition)
    #expect(!lifted.valueFixed && lifted.checked == true && !lifted.readOnly)
    // A default that changed since is not a change of the switch.
    var stale = Self.free.state
    stale.checked = false
    #expect(Rules.applyPolicy(nil, to: stale, definition: Self.definition) == stale)
  }

  @Test func nobodySeesAnotherUsersValue() throws {
    let previous = SwitchState(checked: true)
    var state = previous
    state.checked = false
    let aliceChange = Change(
      revision: 4, time: 1, key: Self.definition.key, cause: .set, actor: Self.alice.actor,
      state: state, previous: previous, user: 1000)
    #expect(Visibility.view(aliceChange, for: .user(1001), own: nil) == nil)
    #expect(Visibility.view(aliceChange, for: .user(1000), own: nil) == aliceChange)
    #expect(Visibility.view(aliceChange, for: .everyone, own: nil) == aliceChange)
  }

  static func own(_ checked: Bool, expiresAt: Int64? = nil) -> SeenOwnValue {
    SeenOwnValue(UserValue(checked: checked, revision: 1, changedAt: 0, expiresAt: expiresAt))
  }

  @Test func aSwitchLevelChangeIsShownAsEachViewerSeesIt() throws {
    var held = SwitchState(checked: false, readOnly: true, heldBy: .admin, valueFixed: true)
    held.readOnlyReason = "corp"
    let unlock = Change(
      revision: 9, time: 1, key: Self.definition.key, cause: .unlock, actor: Self.admin.actor,
      state: SwitchState(checked: true), previous: held)
    // A user whose own value is off: the fixed off stays off, the hold goes.
    let off = try #require(Visibility.view(unlock, for: .user(1000), own: Self.own(false)))
    #expect(off.state.checked == false && off.previous.checked == false)
    #expect(off.fields == [.readOnly, .readOnlyReason, .heldBy])
    // One whose own value is on, and one who never set it: on comes back.
    let on = try #require(Visibility.view(unlock, for: .user(1001), own: Self.own(true)))
    #expect(on.fields.first == .checked)
    #expect(Visibility.view(unlock, for: .user(1002), own: nil) == unlock)
    #expect(Visibility.view(unlock, for: .everyone, own: nil) == unlock)
  }

  /// A user's timer is theirs, and `get` shows it with every switch-level
  /// change: so does that change's event, before and after alike (so it is
  /// not a field the change altered). Everyone's view has no user's timer.
  @Test func aSwitchLevelChangeShowsTheViewersOwnTimer() throws {
    let lock = Change(
      revision: 9, time: 1, key: Self.definition.key, cause: .lock, actor: Self.admin.actor,
      state: SwitchState(checked: true, readOnly: true, heldBy: .admin),
      previous: SwitchState(checked: true))
    let timed = Self.own(false, expiresAt: 7_200_000)
    let seen = try #require(Visibility.view(lock, for: .user(1000), own: timed))
    #expect(seen.state.expiresAt == 7_200_000 && seen.previous.expiresAt == 7_200_000)
    #expect(seen.state.checked == false)
    #expect(seen.fields == [.readOnly, .heldBy])
    let tried = SeenOwnValue(
      userState: SwitchState(
        checked: true, pendingUntil: 5_000,
        pending: TriedChange(
          maker: Self.alice.actor, makerIsAdministrator: false, bootDeadline: 5_000,
          bootID: "b", revertOnDisconnect: true)))
    let trying = try #require(Visibility.view(lock, for: .user(1000), own: tried))
    #expect(trying.state.pendingUntil == 5_000 && trying.previous.pendingUntil == 5_000)
    #expect(Visibility.view(lock, for: .everyone, own: timed) == lock)
  }

  /// A user's own change under a hold that fixes the value (a timer's end,
  /// a confirm, a revert) shows the fixed value they read: only the timer
  /// changes for them. Without the fixed value it showed the one they keep.
  @Test func anOwnChangeUnderAFixingHoldShowsTheFixedValue() throws {
    var previous = SwitchState(
      checked: false, readOnly: true, heldBy: .admin, valueFixed: true, expiresAt: 60_000)
    previous.expiryByAdministrator = false
    var state = previous
    state.checked = true
    state.expiresAt = nil
    let expiry = Change(
      revision: 12, time: 60_000, key: Self.definition.key, cause: .expiry, actor: .timer,
      state: state, previous: previous, user: 1000)
    for viewer in [Viewpoint.user(1000), .everyone] {
      let seen = try #require(Visibility.view(expiry, for: viewer, own: nil, fixed: true))
      #expect(seen.state.checked == true && seen.previous.checked == true)
      #expect(seen.fields == [.expiresAt])
    }
    // Where no hold fixes the value, theirs is what they read.
    var free = expiry
    free.state.valueFixed = false
    free.previous.valueFixed = false
    #expect(Visibility.view(free, for: .user(1000), own: nil, fixed: true) == free)
    #expect(Visibility.view(expiry, for: .user(1001), own: nil, fixed: true) == nil)
  }

  @Test func scopeIsReadFromTheSchema() throws {
    let built = CatalogBuilder.build(
      ConfigSources(
        daemonConf: nil,
        switchFiles: [
          (
            name: "switches.d/10-a.conf",
            text: "[a]\nLabel=A\nDefault=on\nScope=user\n\n[b]\nLabel=B\nDefault=on\nScope=system\n"
          )
        ], policyFiles: []))
    let catalog = try #require(built.catalog)
    #expect(catalog.switches["a"]?.scope == .user)
    #expect(catalog.switches["b"]?.scope == .system)
  }
}
