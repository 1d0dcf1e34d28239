import Testing

@testable import SwitchCore

/// Rule 21 for a user-scope switch: the timer is that user's ("my
/// notifications off for an hour"), with the clock injected.
@Suite struct UserTimerTests {
  static let definition = UserScopeTests.definition
  static let free = UserScopeTests.free
  static let alice = UserScopeTests.alice
  static let timer = Caller(actor: .timer, isAdmin: true, mayWrite: true).acting(as: 1000)
  static let now: Int64 = 1_800_000_000_000

  /// A decision with the switch and the value it was decided on, which
  /// its change is made from (as the writer passes them).
  @dynamicMemberLookup
  struct Decided {
    var decision: UserDecision
    var record: SwitchRecord = free
    var own: UserValue? = nil
    subscript<T>(dynamicMember path: KeyPath<UserDecision, T>) -> T { decision[keyPath: path] }
  }

  static func decide(
    _ operation: Operation, _ caller: Caller, record: SwitchRecord = free, own: UserValue? = nil,
    lasting: Lasting? = nil, at time: Int64 = now
  ) throws -> Decided {
    let decision = try Rules.nextUserValue(
      operation, key: definition.key, definition: definition, record: record, own: own,
      policy: nil, caller: caller, lasting: lasting, at: time)
    return Decided(decision: decision, record: record, own: own)
  }

  static func change(_ decided: Decided, revision: Int64 = 1) -> Change? {
    decided.decision.change(
      revision: revision, time: now, cause: .set, actor: alice.actor, record: decided.record,
      own: decided.own, defaultChecked: definition.defaultChecked)
  }

  @Test func aTimedOwnValueCarriesItsDeadlineIntoTheChangeAndTheValue() throws {
    let decided = try Self.decide(
      .set(checked: false, ifRevision: nil), Self.alice, lasting: .seconds(3600))
    let change = try #require(Self.change(decided))
    #expect(change.user == 1000)
    #expect(change.state.checked == false)
    #expect(change.state.expiresAt == Self.now + 3_600_000)
    #expect(change.previous.expiresAt == nil)
    #expect(change.fields.contains(.expiresAt))
    #expect(change.userValue.expiresAt == Self.now + 3_600_000)
    // The user reads their timer; a user who never set it reads none.
    let seen = Visibility.record(Self.free, own: change.userValue, definition: Self.definition)
    #expect(seen.state.expiresAt == Self.now + 3_600_000)
    #expect(
      Visibility.record(Self.free, own: nil, definition: Self.definition).state.expiresAt == nil)
  }

  @Test func aLaterWriteOfTheValueEndsTheTimerAndOneThatChangesNothingLeavesIt() throws {
    let own = UserValue(
      checked: false, revision: 1, changedAt: Self.now, expiresAt: Self.now + 1000)
    let same = try Self.decide(.set(checked: false, ifRevision: nil), Self.alice, own: own)
    #expect(same.next == nil)
    let back = try Self.decide(.toggle(ifRevision: nil), Self.alice, own: own)
    let change = try #require(Self.change(back, revision: 2))
    #expect(change.state.checked == true)
    #expect(change.state.expiresAt == nil)
    #expect(change.previous.expiresAt == Self.now + 1000)
  }

  @Test func atItsDeadlineTheValueFromBeforeComesBackOnce() throws {
    let own = UserValue(
      checked: false, revision: 1, changedAt: Self.now, expiresAt: Self.now + 1000)
    let early = try Self.decide(.expire, Self.timer, own: own, at: Self.now + 999)
    #expect(early.next == nil)
    let due = try Self.decide(.expire, Self.timer, own: own, at: Self.now + 1000)
    #expect(due.user == 1000)
    let change = try #require(Self.change(due, revision: 2))
    #expect(change.state.checked == true)
    #expect(change.state.expiresAt == nil)
    // Once ended there is nothing left to end.
    let after = try Self.decide(.expire, Self.timer, own: change.userValue, at: Self.now + 5000)
    #expect(after.next == nil)
    // Without a timer of their own, nothing happens to a user.
    #expect(try Self.decide(.expire, Self.timer, own: nil, at: Self.now + 5000).next == nil)
  }

  /// An administrator's timed value of a user's (acting as them) ends as
  /// their write would: through a lock that does not fix the value, not
  /// through one that does.
  @Test func anAdministratorsTimedValueOfAUsersComesBackThroughALockThatFixesNoValue() throws {
    let admin = UserScopeTests.admin.acting(as: 1000)
    let decided = try Self.decide(
      .set(checked: false, ifRevision: nil), admin, lasting: .seconds(1))
    let own = try #require(Self.change(decided)).userValue
    #expect(own.expiryByAdministrator && own.expiresAt == Self.now + 1000)
    var locked = Self.free.state
    locked.readOnly = true
    locked.heldBy = .admin
    var fixed = locked
    fixed.valueFixed = true
    for (state, comesBack) in [(locked, true), (fixed, false)] {
      let record = SwitchRecord(key: Self.definition.key, state: state, revision: 2)
      let due = try Self.decide(.expire, Self.timer, record: record, own: own, at: Self.now + 1000)
      let change = try #require(Self.change(due, revision: 3))
      #expect(change.userValue.checked == comesBack, "\(state)")
      #expect(change.userValue.expiresAt == nil && !change.userValue.expiryByAdministrator)
    }
  }

  /// Rule 20 on a user's own value: tried, not written by anyone while
  /// pending, settled by its maker or an administrator acting as the user;
  /// `confirm` a change of the State alone, `revert` the value back unless
  /// a hold that fixes the value came since.
  @Test func aUsersOwnValueIsTriedAndSettledByItsMakerOrAnAdministrator() throws {
    let boot = BootMoment(milliseconds: 5_000, id: "boot-a")
    let tried = try Rules.nextUserValue(
      .set(checked: false, ifRevision: nil), key: Self.definition.key,
      definition: Self.definition, record: Self.free, own: nil, policy: nil, caller: Self.alice,
      lasting: .confirmWithin(seconds: 30, revertOnDisconnect: true), at: Self.now, boot: boot)
    let own = try #require(Self.change(Decided(decision: tried))).userValue
    #expect(own.checked == false && own.pendingUntil == Self.now + 30_000 && own.expiresAt == nil)
    #expect(own.pending?.maker == Self.alice.actor && own.pending?.bootDeadline == 35_001)
    #expect(own.pending?.makerIsAdministrator == false)
    let admin = UserScopeTests.admin.acting(as: 1000)
    for caller in [Self.alice, admin] {
      #expect(
        throws: Refusal.pending(key: Self.definition.key),
        performing: { try Self.decide(.toggle(ifRevision: nil), caller, own: own) })
    }
    // Said to anyone who tries to write it, who may not settle it either.
    #expect(
      Refusal.pending(key: "chat").message
        == "chat is being tried: unless confirmed it reverts at its deadline; its maker or an"
        + " administrator may confirm or revert it sooner.")
    let bobAsAlice = UserScopeTests.bob.acting(as: 1000)
    #expect(throws: Refusal.self, performing: { try Self.decide(.confirm, bobAsAlice, own: own) })
    let confirmed = try #require(Self.change(try Self.decide(.confirm, Self.alice, own: own)))
    #expect(confirmed.state.checked == false && confirmed.fields == [.pendingUntil])
    #expect(confirmed.userValue.pending == nil)
    let reverted = try #require(Self.change(try Self.decide(.revert, admin, own: own)))
    #expect(reverted.state.checked == true && reverted.userValue.pendingUntil == nil)
    var fixed = Self.free.state
    fixed.readOnly = true
    fixed.heldBy = .admin
    fixed.valueFixed = true
    let held = SwitchRecord(key: Self.definition.key, state: fixed, revision: 2)
    let kept = try #require(Self.change(try Self.decide(.revert, admin, record: held, own: own)))
    #expect(kept.userValue.checked == false && kept.userValue.pending == nil)
    // Nothing tried: a no-op.
    #expect(try Self.decide(.confirm, Self.alice, own: confirmed.userValue).next == nil)
    // A trial an administrator made of Alice's value is theirs to settle, not hers.
    let byAdmin = try Rules.nextUserValue(
      .set(checked: false, ifRevision: nil), key: Self.definition.key,
      definition: Self.definition, record: Self.free, own: nil, policy: nil, caller: admin,
      lasting: .confirmWithin(seconds: 30, revertOnDisconnect: true), at: Self.now, boot: boot)
    let adminsTrial = try #require(Self.change(Decided(decision: byAdmin))).userValue
    #expect(adminsTrial.pending?.makerIsAdministrator == true)
    #expect(
      throws: Refusal.self,
      performing: { try Self.decide(.confirm, Self.alice, own: adminsTrial) })
  }

  @Test func underAHoldThatCameSinceOnlyTheTimerEnds() throws {
    let own = UserValue(
      checked: false, revision: 1, changedAt: Self.now, expiresAt: Self.now + 1000)
    var fixed = Self.free.state
    fixed.readOnly = true
    fixed.heldBy = .admin
    fixed.valueFixed = true
    fixed.checked = true
    var disabled = Self.free.state
    disabled.disabled = true
    disabled.disabledBy = .admin
    for state in [fixed, disabled] {
      let record = SwitchRecord(key: Self.definition.key, state: state, revision: 2)
      let due = try Self.decide(.expire, Self.timer, record: record, own: own, at: Self.now + 1000)
      let change = try #require(Self.change(due, revision: 3))
      // The user's own value stays what it was; the timer is gone.
      #expect(change.userValue.checked == false, "\(state)")
      #expect(change.userValue.expiresAt == nil)
      #expect(change.fields == [.expiresAt], "\(state)")
    }
  }
}
