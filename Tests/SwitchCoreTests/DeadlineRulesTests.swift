import Testing

@testable import SwitchCore

/// The rules of time (SEMANTICS.md rules 21–22 and the paragraph after
/// them) with an injected clock: what a timed write sets, and what each
/// deadline does when it passes.
@Suite struct DeadlineRulesTests {
  static let definition = SwitchDefinition(key: "wifi", label: "Wi-Fi", defaultChecked: true)
  static let admin = Caller(actor: .peer(uid: 0, gid: 0, pid: 3), isAdmin: true, mayWrite: true)
  static let now: Int64 = 1_800_000_000_000

  static func decide(
    _ operation: Operation, _ state: SwitchState, lasting: Lasting? = nil, at time: Int64 = now
  ) throws -> SwitchState? {
    let record = SwitchRecord(key: "wifi", state: state, revision: 1, changedAt: 0)
    return try Rules.decide(
      operation, key: "wifi", definition: definition, record: record, policy: nil,
      caller: admin, lasting: lasting, at: time
    ).get().next
  }

  static func expired(
    _ state: SwitchState, at time: Int64, policy: PolicyRule? = nil
  ) -> SwitchState? {
    Rules.expired(state, key: "wifi", policy: policy, at: time)
  }

  @Test func forBecomesATimeWhenTheChangeCommits() throws {
    let next = try Self.decide(
      .set(checked: false, ifRevision: nil), SwitchState(checked: true), lasting: .seconds(3600))
    #expect(next?.checked == false)
    #expect(next?.expiresAt == Self.now + 3_600_000)
    let until = try Self.decide(
      .toggle(ifRevision: nil), SwitchState(checked: true), lasting: .until(Self.now + 5))
    #expect(until?.expiresAt == Self.now + 5)
  }

  @Test func aTimedWriteThatChangesNothingIsANoOp() throws {
    let next = try Self.decide(
      .set(checked: true, ifRevision: nil), SwitchState(checked: true), lasting: .seconds(60))
    #expect(next == nil)
  }

  @Test func aLaterWriteOfTheValueEndsTheTimerAndOneThatChangesNothingLeavesIt() throws {
    let timed = SwitchState(checked: false, expiresAt: Self.now + 1000)
    let changed = try Self.decide(.set(checked: true, ifRevision: nil), timed)
    #expect(changed?.checked == true)
    #expect(changed?.expiresAt == nil)
    #expect(try Self.decide(.set(checked: false, ifRevision: nil), timed) == nil)
    // A write that changes the value with the same deadline again starts
    // a timer of its own, which ends then.
    let again = try Self.decide(
      .set(checked: true, ifRevision: nil), timed, lasting: .until(Self.now + 1000))
    #expect(again?.checked == true)
    #expect(again?.expiresAt == Self.now + 1000)
    // A hold changes no value: the timer runs on under it.
    let locked = try Self.decide(.lock(reason: nil, checked: nil), timed)
    #expect(locked?.expiresAt == Self.now + 1000)
  }

  @Test func theValueFromBeforeComesBackAtTheDeadlineNotBefore() {
    let timed = SwitchState(checked: false, expiresAt: Self.now)
    #expect(Self.expired(timed, at: Self.now - 1) == nil)
    let back = Self.expired(timed, at: Self.now)
    #expect(back == SwitchState(checked: true))
  }

  @Test func aHoldThatCameSinceWinsTheTimerEndsAndTheValueStays() {
    var disabled = SwitchState(checked: false, expiresAt: Self.now)
    disabled.disabled = true
    disabled.disabledBy = .policy
    let ended = Self.expired(disabled, at: Self.now)
    #expect(ended?.checked == false)
    #expect(ended?.expiresAt == nil)
    #expect(ended?.disabled == true)
    var held = SwitchState(checked: false, readOnly: true, heldBy: .admin, expiresAt: Self.now)
    held.readOnlyReason = "IT"
    #expect(Self.expired(held, at: Self.now)?.checked == false)
  }

  /// The paragraph after rule 22: the end is judged as a write by the
  /// value's maker would be. An administrator writes through a hold that
  /// does not fix the value, so their timed value comes back under it; a
  /// writer's does not, and nobody's through a disable or a fixed value.
  @Test func anAdministratorsTimedValueComesBackThroughAHoldTheyMayWriteThrough() throws {
    let writer = Caller(actor: .peer(uid: 1000, gid: 1000, pid: 7), isAdmin: false, mayWrite: true)
    let free = SwitchState(checked: true)
    let byAdmin = try #require(
      try Self.decide(.set(checked: false, ifRevision: nil), free, lasting: .seconds(1)))
    #expect(byAdmin.expiryByAdministrator)
    let byWriter = try #require(
      try Rules.decide(
        .set(checked: false, ifRevision: nil), key: "wifi", definition: Self.definition,
        record: SwitchRecord(key: "wifi", state: free, revision: 1, changedAt: 0), policy: nil,
        caller: writer, lasting: .seconds(1), at: Self.now
      ).get().next)
    #expect(byWriter.expiryByAdministrator == false)
    let due = Self.now + 1000

    func held(_ state: SwitchState, by holder: Holder) -> SwitchState {
      var held = state
      held.readOnly = true
      held.heldBy = holder
      return held
    }
    // An administrator's lock, and a policy's that names no value: the
    // administrator's value comes back, still held; the writer's stays.
    let readOnlyPolicy = PolicyRule(key: "wifi", readOnly: true)
    for (holder, policy) in [(Holder.admin, nil), (.policy, readOnlyPolicy)] {
      let back = try #require(Self.expired(held(byAdmin, by: holder), at: due, policy: policy))
      #expect(back.checked == true, "\(holder)")
      #expect(back.readOnly && back.expiresAt == nil && !back.expiryByAdministrator)
      let kept = try #require(Self.expired(held(byWriter, by: holder), at: due, policy: policy))
      #expect(kept.checked == false, "\(holder)")
      #expect(kept.expiresAt == nil)
    }
    // A policy that fixes the value holds it against an administrator too.
    let fixing = PolicyRule(key: "wifi", readOnly: true, checked: false)
    let fixed = try #require(Self.expired(held(byAdmin, by: .policy), at: due, policy: fixing))
    #expect(fixed.checked == false)
    // Nobody changes a disabled switch.
    var disabled = byAdmin
    disabled.disabled = true
    disabled.disabledBy = .admin
    #expect(Self.expired(disabled, at: due)?.checked == false)
  }

  @Test func aTimedHoldLiftsAsUnlockOrEnableWould() throws {
    let locked = try #require(
      try Self.decide(
        .lock(reason: "exam", checked: nil), SwitchState(checked: true), lasting: .seconds(10)))
    #expect(locked.readOnlyUntil == Self.now + 10_000)
    let lifted = Self.expired(locked, at: Self.now + 10_000)
    #expect(lifted == SwitchState(checked: true))

    let disabled = try #require(
      try Self.decide(.disable(reason: nil), SwitchState(checked: true), lasting: .seconds(1)))
    #expect(disabled.disabledUntil == Self.now + 1000)
    #expect(Self.expired(disabled, at: Self.now + 1000) == SwitchState(checked: true))
  }

  @Test func aLockWithoutATimeMakesTheHoldPermanentAgain() throws {
    let timed = SwitchState(
      checked: true, readOnly: true, readOnlyReason: "r", heldBy: .admin,
      readOnlyUntil: Self.now + 5)
    let permanent = try Self.decide(.lock(reason: "r2", checked: nil), timed)
    #expect(permanent?.readOnlyUntil == nil)
    // With nothing else to change too (its reason kept, or the same given).
    for reason in [nil, "r"] {
      let again = try Self.decide(.lock(reason: reason, checked: nil), timed)
      #expect(
        again == SwitchState(checked: true, readOnly: true, readOnlyReason: "r", heldBy: .admin))
    }
    // With a time, a lock of a locked switch is a no-op (PROTOCOL.md), its end kept.
    #expect(try Self.decide(.lock(reason: nil, checked: nil), timed, lasting: .seconds(60)) == nil)
    // A permanent lock locked again: nothing.
    #expect(try Self.decide(.lock(reason: nil, checked: nil), permanent!) == nil)
  }

  @Test func aDisableWithoutATimeMakesItPermanentAgain() throws {
    let timed = SwitchState(
      checked: true, disabled: true, disabledBy: .admin, disabledUntil: Self.now + 5)
    let permanent = try Self.decide(.disable(reason: nil), timed)
    #expect(permanent == SwitchState(checked: true, disabled: true, disabledBy: .admin))
    #expect(try Self.decide(.disable(reason: nil), timed, lasting: .seconds(60)) == nil)
  }

  @Test func aHoldThatIsGoneHasNoEndAndAPolicysEndIsItsSchedules() {
    let held = SwitchState(checked: true, readOnly: true, heldBy: .admin, readOnlyUntil: 5)
    var unlocked = held
    unlocked.readOnly = false
    unlocked.heldBy = nil
    #expect(Rules.settledDeadlines(unlocked).readOnlyUntil == nil)
    // A scheduled policy's hold shows its window's end, which no timer of
    // the switch's carries out: the schedule lifts it (one policy change).
    var policy = held
    policy.heldBy = .policy
    policy.disabled = true
    policy.disabledBy = .policy
    policy.disabledUntil = 5
    #expect(Rules.settledDeadlines(policy) == policy)
    #expect(policy.nextDeadline == nil)
    #expect(Self.expired(policy, at: 10) == nil)
  }

  @Test func anEndingWhoseCommandFailedEndsTheTimerAndKeepsTheValueInvalid() throws {
    let timed = SwitchState(checked: false, expiresAt: Self.now)
    let next = try #require(Self.expired(timed, at: Self.now))
    let kept = Rules.failedEnding(timed, next: next, reason: "rfkill failed")
    #expect(kept.checked == false)
    #expect(kept.expiresAt == nil)
    #expect(kept.invalid && kept.invalidReason == "rfkill failed")
    #expect(Self.expired(kept, at: Self.now + 1) == nil)
  }

  @Test func aScheduledPolicyInItsWindowSetsTheHoldsEnd() {
    let rule = PolicyRule(key: "wifi", readOnly: true, disabled: true, endsAt: 5_000)
    let state = Rules.applyPolicy(rule, to: SwitchState(checked: true))
    #expect(state.readOnlyUntil == 5_000 && state.disabledUntil == 5_000)
    let lifted = Rules.applyPolicy(PolicyRule(key: "wifi"), to: state)
    #expect(lifted == SwitchState(checked: true))
  }

  @Test func eachDeadlineIsOneChangeInDeadlineOrderADisablesEndFirstOnATie() throws {
    var state = SwitchState(checked: false, expiresAt: 100)
    state.disabled = true
    state.disabledBy = .admin
    state.disabledUntil = 100
    let first = try #require(Self.expired(state, at: 200))
    #expect(first.disabled == false)
    #expect(first.expiresAt == 100)
    // Judged unheld now: the value comes back.
    let second = try #require(Self.expired(first, at: 200))
    #expect(second == SwitchState(checked: true))
    #expect(Self.expired(second, at: 200) == nil)
    #expect(second.nextDeadline == nil)

    let earlier = SwitchState(
      checked: true, readOnly: true, heldBy: .admin, expiresAt: 50,
      readOnlyUntil: 70)
    #expect(earlier.nextDeadline == 50)
    // The value's end comes first, under the hold: only its timer ends.
    #expect(Self.expired(earlier, at: 100)?.checked == true)
    #expect(Self.expired(earlier, at: 100)?.readOnlyUntil == 70)
  }

  @Test func theExpiryDecisionIsTheOperationsNotTheCallers() throws {
    // `.expire` needs no time parameter and carries out only what has passed.
    let timed = SwitchState(checked: false, expiresAt: Self.now + 1)
    #expect(try Self.decide(.expire, timed, at: Self.now) == nil)
    #expect(try Self.decide(.expire, timed, at: Self.now + 1)?.checked == true)
    #expect(Operation.expire.cause == .expiry)
  }

  // MARK: Tried changes (rule 20)

  static let maker = Caller(
    actor: .peer(uid: 1000, gid: 1000, pid: 7), isAdmin: false, mayWrite: true)
  static let other = Caller(
    actor: .peer(uid: 1001, gid: 1001, pid: 8), isAdmin: false, mayWrite: true)
  static let boot = BootMoment(milliseconds: 5_000, id: "boot-a")

  static func decide(
    _ operation: Operation, _ state: SwitchState, by caller: Caller, lasting: Lasting? = nil
  ) -> Result<SwitchState?, Refusal> {
    let record = SwitchRecord(key: "wifi", state: state, revision: 1, changedAt: 0)
    return Rules.decide(
      operation, key: "wifi", definition: definition, record: record, policy: nil,
      caller: caller, lasting: lasting, at: now, boot: boot
    ).map(\.next)
  }

  static func tried() throws -> SwitchState {
    try #require(
      try decide(
        .set(checked: false, ifRevision: nil), SwitchState(checked: true), by: maker,
        lasting: .confirmWithin(seconds: 30, revertOnDisconnect: true)
      ).get())
  }

  @Test func aTriedChangeRecordsItsMakerAndItsDeadlineOnTheBootClock() throws {
    let state = try Self.tried()
    #expect(state.checked == false)
    #expect(state.pendingUntil == Self.now + 30_000)
    #expect(state.expiresAt == nil)
    let pending = try #require(state.pending)
    #expect(pending.maker == Self.maker.actor)
    // 30 s on the boot clock and a millisecond: at 35,000 the wall clock,
    // read before it, may show 1 ms before `pendingUntil`.
    #expect(pending.bootDeadline == 35_001)
    #expect(pending.isDue(at: BootMoment(milliseconds: 35_000, id: "boot-a")) == false)
    #expect(pending.isDue(at: BootMoment(milliseconds: 35_001, id: "boot-a")))
    // Another boot: nobody could have confirmed it.
    #expect(pending.isDue(at: BootMoment(milliseconds: 0, id: "boot-b")))
  }

  @Test func whileTriedNobodyWritesTheValueAndOnlyTheMakerOrAnAdminSettlesIt() throws {
    let state = try Self.tried()
    #expect(
      Self.decide(.toggle(ifRevision: nil), state, by: Self.maker)
        == .failure(.pending(key: "wifi")))
    #expect(Self.decide(.reset, state, by: Self.admin) == .failure(.pending(key: "wifi")))
    // A lock that would set the value writes it; one that keeps it does not.
    #expect(
      Self.decide(.lock(reason: nil, checked: true), state, by: Self.admin)
        == .failure(.pending(key: "wifi")))
    let held = try #require(
      try Self.decide(.lock(reason: nil, checked: false), state, by: Self.admin).get())
    #expect(held.checked == false && held.readOnly && held.pending != nil)
    guard case .failure(.permissionDenied) = Self.decide(.confirm, state, by: Self.other) else {
      Issue.record("another user confirmed a tried change")
      return
    }
    let kept = try #require(try Self.decide(.confirm, state, by: Self.maker).get())
    #expect(kept == SwitchState(checked: false))
    let undone = try #require(try Self.decide(.revert, state, by: Self.admin).get())
    #expect(undone == SwitchState(checked: true))
    // Nothing tried: a no-op for anyone.
    #expect(try Self.decide(.confirm, kept, by: Self.other).get() == nil)
  }

  /// `confirm` and `revert` of a system switch naming another user: only
  /// an administrator may, also when nothing is pending (the order of
  /// checks puts it before the no-op) and when the name is the maker's.
  @Test(arguments: [Operation.confirm, .revert])
  func onlyAnAdministratorSettlesATrialNamingAnotherUser(_ operation: Operation) throws {
    let state = try Self.tried()
    for (settled, by) in [(state, Self.other), (SwitchState(checked: true), Self.maker)] {
      #expect(
        Self.decide(operation, settled, by: by.acting(as: 4242))
          == .failure(Rules.actingAsRefusal(key: "wifi", user: 4242)))
    }
    #expect(
      Self.decide(operation, state, by: Self.other.acting(as: 1000))
        == .failure(Rules.actingAsRefusal(key: "wifi", user: 1000)))
    // Its own uid, named, is the caller itself; an administrator names anyone.
    #expect(try Self.decide(operation, state, by: Self.maker.acting(as: 1000)).get() != nil)
    #expect(try Self.decide(operation, state, by: Self.admin.acting(as: 4242)).get() != nil)
  }

  @Test func anAdministratorsTriedChangeRevertsThroughALockAWritersDoesNot() throws {
    let byAdmin = try #require(
      try Self.decide(
        .set(checked: false, ifRevision: nil), SwitchState(checked: true), by: Self.admin,
        lasting: .confirmWithin(seconds: 30, revertOnDisconnect: true)
      ).get())
    #expect(byAdmin.pending?.makerIsAdministrator == true)
    #expect(try Self.tried().pending?.makerIsAdministrator == false)
    for (state, comesBack) in [(byAdmin, true), (try Self.tried(), false)] {
      var locked = state
      locked.readOnly = true
      locked.heldBy = .admin
      let undone = try #require(try Self.decide(.revert, locked, by: Self.admin).get())
      #expect(undone.checked == comesBack)
      #expect(undone.readOnly && undone.pending == nil && undone.pendingUntil == nil)
    }
  }

  @Test func aRevertUnderAHoldThatCameSinceEndsTheTrialAndKeepsTheValue() throws {
    var state = try Self.tried()
    state.disabled = true
    state.disabledBy = .admin
    let undone = try #require(try Self.decide(.revert, state, by: Self.maker).get())
    #expect(undone.checked == false)
    #expect(undone.pending == nil)
    #expect(undone.pendingUntil == nil)
  }
}
