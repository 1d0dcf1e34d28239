import Testing

@testable import SwitchCore

/// The switch kinds of rule 19, each with its effective value off.
enum DriftedSwitch: String, CaseIterable, CustomTestStringConvertible {
  case free
  case heldByPolicy
  case heldByAdmin
  case disabledByAdmin
  case disabledByDependency

  var testDescription: String { rawValue }

  /// Off, and held or disabled as the kind says (a disabled one is checked:
  /// its effective value is off all the same).
  var state: SwitchState {
    switch self {
    case .free: return SwitchState(checked: false)
    case .heldByPolicy:
      return SwitchState(checked: false, readOnly: true, readOnlyReason: "Corp.", heldBy: .policy)
    case .heldByAdmin: return SwitchState(checked: false, readOnly: true, heldBy: .admin)
    case .disabledByAdmin: return SwitchState(checked: true, disabled: true, disabledBy: .admin)
    case .disabledByDependency:
      return SwitchState(
        checked: true, disabled: true, disabledReason: "Airplane mode is on",
        disabledBy: .dependency)
    }
  }
}

private let adopt = ReadBack(watch: ["/bin/watch"])
private let reassert = ReadBack(watch: ["/bin/watch"], onDrift: .reassert)
private let start: Int64 = 1_000_000

/// A reading of `value` by the watch at `now`, on a memory that already saw nothing.
private func watchReading(
  _ memory: inout Drift.Memory, _ value: Bool, _ state: SwitchState,
  readBack: ReadBack = adopt, at now: Int64 = start
) -> Drift.Verdict {
  Drift.reading(&memory, value: value, source: .watch, state: state, readBack: readBack, now: now)
}

struct DriftTests {
  // MARK: kind × observed × apply running

  @Test(arguments: DriftedSwitch.allCases, [false, true])
  func anApplyRunningMakesEveryReadingExpected(kind: DriftedSwitch, observed: Bool) {
    var memory = Drift.Memory()
    Drift.applyStarted(&memory, value: false)
    #expect(watchReading(&memory, observed, kind.state) == .expected)
    #expect(memory.observed == observed)
    #expect(memory.reapplicationCount == 0)
  }

  @Test(arguments: DriftedSwitch.allCases)
  func aSystemThatAgreesIsNotDrift(kind: DriftedSwitch) {
    var memory = Drift.Memory()
    #expect(watchReading(&memory, false, kind.state) == .agrees)
    #expect(memory.observed == false)
  }

  @Test(arguments: DriftedSwitch.allCases)
  func aSystemThatDisagreesIsReappliedOrAdopted(kind: DriftedSwitch) {
    var memory = Drift.Memory()
    let verdict = watchReading(&memory, true, kind.state)
    if kind == .free {
      var adopted = kind.state
      adopted.checked = true
      #expect(verdict == .adopt(adopted))
      #expect(memory.reapplicationCount == 0)
    } else {
      #expect(verdict == .reapply(afterMilliseconds: 0, systemValue: true))
      #expect(memory.reapplicationCount == 1)
      #expect(memory.lastReapplied == Drift.Reapplied(time: start, systemValue: true))
    }
  }

  @Test(arguments: DriftedSwitch.allCases)
  func reassertReappliesEvenAFreeSwitch(kind: DriftedSwitch) {
    var memory = Drift.Memory()
    #expect(
      watchReading(&memory, true, kind.state, readBack: reassert)
        == .reapply(afterMilliseconds: 0, systemValue: true))
  }

  @Test func adoptingClearsInvalidSinceTheSystemHasTheValue() {
    var memory = Drift.Memory()
    let state = SwitchState(checked: false, invalid: true, invalidReason: "rfkill: blocked")
    #expect(watchReading(&memory, true, state) == .adopt(SwitchState(checked: true)))
  }

  // MARK: re-application, backoff and DriftLimit=

  @Test func aFlappingCompetitorIsReappliedWithBackoffThenMadeInvalid() {
    var memory = Drift.Memory()
    let held = DriftedSwitch.heldByPolicy.state
    var now = start
    var waits: [Int64] = []
    for _ in 0..<ReadBack.defaultDriftLimit {
      guard case .reapply(let wait, true) = watchReading(&memory, true, held, at: now) else {
        Issue.record("not re-applied")
        return
      }
      waits.append(wait)
      now += wait
      // The re-application runs and the system shows it, then the competitor again.
      Drift.applyStarted(&memory, value: false, reapplication: true)
      #expect(watchReading(&memory, false, held, at: now) == .expected)
      #expect(
        Drift.applyEnded(
          &memory, state: held, reapplyFailure: nil, readBack: adopt, now: now) == .agrees)
      now += 10
    }
    #expect(waits == [0, 1000, 2000, 4000, 8000])
    let reason = "something keeps turning it on: re-applied 5 times in 60 s"
    #expect(
      watchReading(&memory, true, held, at: now) == .invalidate(held.applied(failure: reason)))
    #expect(memory.reapplicationCount == 5)
    // Committed invalid, it waits; once the system agrees it clears (cause drift).
    let invalid = held.applied(failure: reason)
    #expect(watchReading(&memory, true, invalid, at: now + 1) == .stillInvalid)
    #expect(watchReading(&memory, false, invalid, at: now + 2) == .clear(held))
  }

  @Test func theLimitCountsOnlyTheLastMinute() {
    var memory = Drift.Memory()
    let held = DriftedSwitch.heldByAdmin.state
    let readBack = ReadBack(watch: ["/bin/watch"], driftLimit: 1)
    #expect(
      watchReading(&memory, true, held, readBack: readBack)
        == .reapply(afterMilliseconds: 0, systemValue: true))
    Drift.applyStarted(&memory, value: false)
    _ = Drift.applyEnded(&memory, state: held, reapplyFailure: nil, readBack: readBack, now: start)
    _ = watchReading(&memory, false, held, readBack: readBack, at: start + 1)
    // A minute later the first re-application no longer counts.
    #expect(
      watchReading(&memory, true, held, readBack: readBack, at: start + 60_000)
        == .reapply(afterMilliseconds: 0, systemValue: true))
  }

  @Test func aScheduledReapplicationIsNotScheduledTwice() {
    var memory = Drift.Memory()
    let held = DriftedSwitch.disabledByDependency.state
    #expect(watchReading(&memory, true, held) == .reapply(afterMilliseconds: 0, systemValue: true))
    // A check says the same before the re-application started: not a second one.
    #expect(
      Drift.reading(
        &memory, value: true, source: .check(startedAt: start), state: held, readBack: adopt,
        now: start + 1) == .expected)
    #expect(memory.reapplicationCount == 1)
  }

  @Test func aFailedReapplicationMakesTheSwitchInvalidOnce() {
    var memory = Drift.Memory()
    let held = DriftedSwitch.heldByPolicy.state
    _ = watchReading(&memory, true, held)
    Drift.applyStarted(&memory, value: false)
    let reason = "re-applying failed after the system had changed it: rfkill: permission denied"
    #expect(
      Drift.applyEnded(
        &memory, state: held, reapplyFailure: "rfkill: permission denied", readBack: adopt,
        now: start) == .invalidate(held.applied(failure: reason)))
    Drift.applyStarted(&memory, value: false)
    #expect(
      Drift.applyEnded(
        &memory, state: held.applied(failure: reason), reapplyFailure: "rfkill: permission denied",
        readBack: adopt, now: start + 1) == .stillInvalid)
  }

  @Test func backoffDoublesUpToHalfAMinute() {
    #expect(
      (0..<8).map(Drift.backoff(after:)) == [0, 1000, 2000, 4000, 8000, 16_000, 30_000, 30_000])
  }

  // MARK: switchd's own applies are never drift

  @Test(arguments: DriftedSwitch.allCases)
  func theOldValueSeenDuringAnApplyIsNotDrift(kind: DriftedSwitch) {
    // The switch was on; a change to off is being applied; the watch still says on.
    var memory = Drift.Memory()
    _ = watchReading(&memory, true, SwitchState(checked: true))
    Drift.applyStarted(&memory, value: false)
    #expect(watchReading(&memory, true, kind.state) == .expected)
    #expect(
      Drift.applyEnded(
        &memory, state: kind.state, reapplyFailure: nil, readBack: adopt, now: start) == .agrees)
    // The same old line, late, just after the apply: not drift either.
    #expect(watchReading(&memory, true, kind.state, at: start + 1) == .expected)
    // The system shows the applied value: agreed, with no change.
    #expect(watchReading(&memory, false, kind.state, at: start + 2) == .agrees)
    #expect(memory.reapplicationCount == 0)
  }

  @Test(arguments: DriftedSwitch.allCases)
  func aCompetitorDuringAnApplyIsJudgedWhenItEnds(kind: DriftedSwitch) {
    var memory = Drift.Memory()
    Drift.applyStarted(&memory, value: false)
    // The system shows the applied value, then something turns it back on.
    #expect(watchReading(&memory, false, kind.state) == .expected)
    #expect(watchReading(&memory, true, kind.state) == .expected)
    let verdict = Drift.applyEnded(
      &memory, state: kind.state, reapplyFailure: nil, readBack: adopt, now: start)
    if kind == .free {
      var adopted = kind.state
      adopted.checked = true
      #expect(verdict == .adopt(adopted))
    } else {
      #expect(verdict == .reapply(afterMilliseconds: 0, systemValue: true))
    }
  }

  @Test func aCompetitorUndoneBeforeTheApplyEndsLeavesNothingToJudge() {
    var memory = Drift.Memory()
    let held = DriftedSwitch.heldByPolicy.state
    Drift.applyStarted(&memory, value: false)
    for value in [false, true, false] {
      #expect(watchReading(&memory, value, held) == .expected)
    }
    #expect(
      Drift.applyEnded(&memory, state: held, reapplyFailure: nil, readBack: adopt, now: start)
        == .agrees)
  }

  @Test func aLateLineIsDriftOnceTheSettlingTimeIsOver() {
    var memory = Drift.Memory()
    let held = DriftedSwitch.heldByAdmin.state
    Drift.applyStarted(&memory, value: false)
    _ = Drift.applyEnded(&memory, state: held, reapplyFailure: nil, readBack: adopt, now: start)
    #expect(
      watchReading(&memory, true, held, at: start + Drift.settleMilliseconds - 1) == .expected)
    #expect(
      watchReading(&memory, true, held, at: start + Drift.settleMilliseconds)
        == .reapply(afterMilliseconds: 0, systemValue: true))
  }

  @Test func aCheckStartedAfterTheApplyIsBelievedAtOnce() {
    var memory = Drift.Memory()
    let held = DriftedSwitch.heldByAdmin.state
    Drift.applyStarted(&memory, value: false)
    _ = Drift.applyEnded(&memory, state: held, reapplyFailure: nil, readBack: adopt, now: start)
    #expect(
      Drift.reading(
        &memory, value: true, source: .check(startedAt: start - 1), state: held, readBack: adopt,
        now: start + 1) == .expected)
    #expect(
      Drift.reading(
        &memory, value: true, source: .check(startedAt: start), state: held, readBack: adopt,
        now: start + 2) == .reapply(afterMilliseconds: 0, systemValue: true))
  }

  @Test func aConfirmedApplyMakesTheNextDisagreementDriftAtOnce() {
    var memory = Drift.Memory()
    let free = DriftedSwitch.free.state
    Drift.applyStarted(&memory, value: false)
    _ = watchReading(&memory, false, free)
    _ = Drift.applyEnded(&memory, state: free, reapplyFailure: nil, readBack: adopt, now: start)
    #expect(watchReading(&memory, true, free, at: start + 1) == .adopt(SwitchState(checked: true)))
  }

  @Test func anApplyOfTheValueAlreadyInPlaceIsConfirmedByTheLastReading() {
    var memory = Drift.Memory()
    let held = DriftedSwitch.heldByPolicy.state
    _ = watchReading(&memory, false, held)
    Drift.applyStarted(&memory, value: false)
    _ = Drift.applyEnded(&memory, state: held, reapplyFailure: nil, readBack: adopt, now: start)
    #expect(
      watchReading(&memory, true, held, at: start + 1)
        == .reapply(afterMilliseconds: 0, systemValue: true))
  }

  @Test func aWatchThatMissedTheAppliedValueIsJudgedAgainOnceSettled() {
    // Re-applied off; something turned it back on before the watch saw off,
    // so the watch prints nothing more.
    var memory = Drift.Memory()
    let held = DriftedSwitch.heldByPolicy.state
    #expect(watchReading(&memory, true, held) == .reapply(afterMilliseconds: 0, systemValue: true))
    Drift.applyStarted(&memory, value: false, reapplication: true)
    #expect(
      Drift.applyEnded(&memory, state: held, reapplyFailure: nil, readBack: adopt, now: start)
        == .agrees)
    #expect(Drift.needsSettling(memory, state: held))
    #expect(
      Drift.settled(&memory, state: held, readBack: adopt, now: start + Drift.settleMilliseconds)
        == .reapply(afterMilliseconds: 1000, systemValue: true))
  }

  @Test func aConfirmedApplyNeedsNoSettling() {
    var memory = Drift.Memory()
    let held = DriftedSwitch.heldByAdmin.state
    Drift.applyStarted(&memory, value: false)
    _ = watchReading(&memory, false, held)
    _ = Drift.applyEnded(&memory, state: held, reapplyFailure: nil, readBack: adopt, now: start)
    #expect(!Drift.needsSettling(memory, state: held))
    #expect(Drift.settled(&memory, state: held, readBack: adopt, now: start + 5000) == .agrees)
  }

  /// A reading that says nothing (a check that failed or printed
  /// nonsense, a watch that ended) leaves nothing to judge: the reading
  /// from before the apply is not adopted as the system's value.
  @Test func anUnknownReadingLeavesNothingToJudge() {
    var memory = Drift.Memory()
    let free = DriftedSwitch.free.state
    #expect(watchReading(&memory, false, free) == .agrees)
    Drift.applyStarted(&memory, value: true)
    let on = SwitchState(checked: true)
    _ = Drift.applyEnded(&memory, state: on, reapplyFailure: nil, readBack: adopt, now: start)
    #expect(Drift.needsSettling(memory, state: on))
    Drift.unknown(&memory)
    #expect(!Drift.needsSettling(memory, state: on))
    #expect(
      Drift.settled(&memory, state: on, readBack: adopt, now: start + Drift.settleMilliseconds)
        == .agrees)
  }

  /// A check's reading from before an apply is not judged by waiting: the
  /// check run after the apply answers (a check slower than the settling
  /// time had the old value adopted, then the new one: four changes).
  @Test func aChecksReadingIsNotJudgedByWaiting() {
    var memory = Drift.Memory()
    let on = SwitchState(checked: true)
    let check = ReadBack(check: ["/bin/check"])
    #expect(
      Drift.reading(
        &memory, value: true, source: .check(startedAt: start - 10), state: on, readBack: check,
        now: start - 5) == .agrees)
    Drift.applyStarted(&memory, value: false)
    let off = SwitchState(checked: false)
    _ = Drift.applyEnded(&memory, state: off, reapplyFailure: nil, readBack: check, now: start)
    #expect(!Drift.needsSettling(memory, state: off))
  }

  /// Adopting failed (a dependent's command): invalid once, and readings
  /// that still disagree adopt nothing until the system agrees.
  @Test func aFailedAdoptionIsNotTriedAgainAtEveryReading() {
    var memory = Drift.Memory()
    let on = SwitchState(checked: true)
    let failed = Drift.adoptionFailed(&memory, state: on, reason: "hotspot failed")
    let reason = "adopting the value the system had turned it to failed: hotspot failed"
    #expect(failed == .invalidate(on.applied(failure: reason)))
    let invalid = on.applied(failure: reason)
    #expect(watchReading(&memory, false, invalid, at: start + 1) == .stillInvalid)
    #expect(
      Drift.adoptionFailed(&memory, state: invalid, reason: "hotspot failed") == .stillInvalid)
    #expect(watchReading(&memory, true, invalid, at: start + 2) == .clear(on))
    #expect(!memory.adoptionFailed)
  }

  @Test func theReasonsSayWhatHappened() {
    #expect(
      Drift.keepsTurningReason(true, count: 5)
        == "something keeps turning it on: re-applied 5 times in 60 s")
    #expect(
      Drift.reappliedLine(time: "2026-12-02T07:00:00.000Z", systemValue: true)
        == "re-applied at 2026-12-02T07:00:00.000Z: the system had turned it on")
  }

  // MARK: a State that changes with no apply

  /// A switch in a tried change (rule 20) waits: nothing writes it until the
  /// change is kept or undone, the system's value neither.
  @Test func driftDuringATriedChangeWaitsForItToBeSettled() {
    var memory = Drift.Memory()
    var tried = SwitchState(checked: true)
    tried.pending = TriedChange(
      maker: .system, makerIsAdministrator: true, bootDeadline: 1, bootID: "b",
      revertOnDisconnect: false)
    #expect(watchReading(&memory, false, tried) == .expected)
    #expect(memory.observed == false)
    #expect(!memory.confirmed)
    // Kept: the reading is judged under the State it left.
    let kept = SwitchState(checked: true)
    guard
      case .adopt(let adopted) = Drift.stateChanged(
        &memory, state: kept, readBack: adopt, now: start)
    else {
      Issue.record("not adopted")
      return
    }
    #expect(adopted.checked == false)
  }

  /// A line that may predate the last apply's effect waits for `settled`.
  @Test func aLateLineIsLeftToSettling() {
    var memory = Drift.Memory()
    Drift.applyStarted(&memory, value: false)
    _ = Drift.applyEnded(
      &memory, state: DriftedSwitch.free.state, reapplyFailure: nil, readBack: adopt, now: start)
    memory.observed = true
    let held = DriftedSwitch.heldByAdmin.state
    #expect(Drift.stateChanged(&memory, state: held, readBack: adopt, now: start + 1) == .expected)
    #expect(
      Drift.stateChanged(
        &memory, state: held, readBack: adopt, now: start + Drift.settleMilliseconds)
        == .reapply(afterMilliseconds: 0, systemValue: true))
  }

  /// A hold put on a switch the system disagrees with re-applies it; a
  /// re-application scheduled for a held switch that is freed gives way to
  /// adopting (rule 19: a writable switch follows the system).
  @Test func aHoldPutOnOrLiftedJudgesTheLastReadingAgain() {
    var memory = Drift.Memory()
    memory.observed = true
    memory.confirmed = true
    let held = DriftedSwitch.heldByAdmin.state
    #expect(
      Drift.stateChanged(&memory, state: held, readBack: adopt, now: start)
        == .reapply(afterMilliseconds: 0, systemValue: true))
    #expect(memory.reapplyScheduled)
    #expect(memory.reapplyGeneration == 1 && memory.reapplicationCount == 1)
    // Freed before the re-application ran: adopted, and the re-application called off.
    guard
      case .adopt(let adopted) = Drift.stateChanged(
        &memory, state: DriftedSwitch.free.state, readBack: adopt, now: start)
    else {
      Issue.record("not adopted")
      return
    }
    #expect(adopted.checked == true)
    #expect(!memory.reapplyScheduled)
    // Called off, it counts neither towards DriftLimit= nor as one made.
    #expect(memory.reapplications.isEmpty && memory.reapplicationCount == 0)
    // Still held: the scheduled re-application stands.
    memory.reapplyScheduled = true
    #expect(Drift.stateChanged(&memory, state: held, readBack: adopt, now: start) == .expected)
    // Agreeing, or an apply running: nothing.
    memory.observed = false
    #expect(Drift.stateChanged(&memory, state: held, readBack: adopt, now: start) == .agrees)
    memory.observed = true
    memory.applying = false
    #expect(Drift.stateChanged(&memory, state: held, readBack: adopt, now: start) == .agrees)
  }

  /// A check's reading: only one started before the last apply ended waits
  /// for the check after it; one started after is judged (with the default
  /// CheckIntervalSec=0 no other check may come).
  @Test func aChecksReadingIsJudgedUnlessItPredatesTheApply() {
    var memory = Drift.Memory()
    Drift.applyStarted(&memory, value: true)
    _ = Drift.applyEnded(
      &memory, state: SwitchState(checked: true), reapplyFailure: nil, readBack: adopt,
      now: start)
    var tried = SwitchState(checked: true)
    tried.pending = TriedChange(
      maker: .system, makerIsAdministrator: true, bootDeadline: 1, bootID: "b",
      revertOnDisconnect: false)
    // The check after the apply disagrees during the trial: it waits.
    #expect(
      Drift.reading(
        &memory, value: false, source: .check(startedAt: start + 10), state: tried,
        readBack: adopt, now: start + 20) == .expected)
    // Kept: judged, though nothing ever showed the applied value.
    guard
      case .adopt(let adopted) = Drift.stateChanged(
        &memory, state: SwitchState(checked: true), readBack: adopt, now: start + 30)
    else {
      Issue.record("not adopted")
      return
    }
    #expect(adopted.checked == false)
    // One started before the apply ended waits for the next check.
    var early = Drift.Memory()
    Drift.applyStarted(&early, value: true)
    _ = Drift.applyEnded(
      &early, state: SwitchState(checked: true), reapplyFailure: nil, readBack: adopt, now: start)
    _ = Drift.reading(
      &early, value: false, source: .check(startedAt: start - 5), state: tried, readBack: adopt,
      now: start + 20)
    #expect(
      Drift.stateChanged(
        &early, state: SwitchState(checked: true), readBack: adopt, now: start + 30)
        == .expected)
  }

  /// A held switch is re-applied during a tried change too (a lock that
  /// keeps the value may come while one is tried): only adopting waits.
  @Test func aHeldSwitchIsReappliedDuringATriedChange() {
    var memory = Drift.Memory()
    memory.observed = false
    memory.confirmed = true
    var held = DriftedSwitch.heldByAdmin.state
    held.checked = true
    held.pending = TriedChange(
      maker: .system, makerIsAdministrator: true, bootDeadline: 1, bootID: "b",
      revertOnDisconnect: false)
    #expect(
      watchReading(&memory, false, held, at: start + 10)
        == .reapply(afterMilliseconds: 0, systemValue: false))
  }

  /// Another apply started in place of a scheduled re-application: that
  /// one is not made, and does not count towards DriftLimit=.
  @Test func anApplyInPlaceOfAScheduledReapplicationCallsItOff() {
    var memory = Drift.Memory()
    memory.observed = true
    memory.confirmed = true
    #expect(
      Drift.stateChanged(
        &memory, state: DriftedSwitch.heldByAdmin.state, readBack: adopt, now: start)
        == .reapply(afterMilliseconds: 0, systemValue: true))
    Drift.applyStarted(&memory, value: false)
    #expect(!memory.reapplyScheduled)
    #expect(memory.reapplications.isEmpty && memory.reapplicationCount == 0)
  }
}
