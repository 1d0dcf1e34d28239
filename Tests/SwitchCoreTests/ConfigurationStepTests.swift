import Testing

@testable import SwitchCore

/// What a configuration does to one switch, and who its changes are by
/// (rules 15 and 17): decided in SwitchCore, carried out by the writer.
@Suite struct ConfigurationStepTests {
  static let command = ApplyCommand(arguments: ["/usr/libexec/switchd/rfkill-apply", "wifi"])
  static let withCommand = SwitchDefinition(
    key: "wifi", label: "Wi-Fi", defaultChecked: true, apply: command)
  static let plain = SwitchDefinition(key: "wifi", label: "Wi-Fi", defaultChecked: true)
  static let held = SwitchState(
    checked: false, readOnly: true, readOnlyReason: "IT", heldBy: .policy)

  func step(
    _ current: SwitchState, _ plan: PlannedChange?, _ definition: SwitchDefinition,
    replacing previous: SwitchDefinition? = nil, every: Bool = false,
    ran: (effective: Bool, failure: String?)? = nil
  ) -> ConfigurationStep {
    Rules.configurationStep(
      current: current, plan: plan, key: "wifi", definition: definition,
      replacing: previous ?? definition, reconcilingEvery: every, ran: ran)
  }

  @Test func aPolicyOnASwitchWithoutACommandIsCommittedByThePolicy() {
    let on = SwitchState(checked: true)
    let plan = PlannedChange(key: "wifi", cause: .policy, state: Self.held, previous: on)
    #expect(step(on, plan, Self.plain) == .change(plan))
    #expect(Actor.configuration(.policy) == .policy)
    #expect(step(on, nil, Self.plain) == .unchanged)
  }

  @Test func aCommandRunsFirstWhenTheEffectiveValueChangesOrAtTheStart() {
    let on = SwitchState(checked: true)
    let plan = PlannedChange(key: "wifi", cause: .policy, state: Self.held, previous: on)
    #expect(
      step(on, plan, Self.withCommand)
        == .applyFirst(state: Self.held, changesState: true, cause: .policy))
    // The start's reconcile runs every command, changing nothing but `invalid`.
    #expect(
      step(on, nil, Self.withCommand, every: true)
        == .applyFirst(state: on, changesState: false, cause: .reconcile))
    #expect(step(on, nil, Self.withCommand) == .unchanged)
    // A command already run for this change: its verdict is taken.
    let failed = Self.held.applied(failure: "no radio")
    #expect(
      step(on, plan, Self.withCommand, ran: (false, "no radio"))
        == .change(PlannedChange(key: "wifi", cause: .policy, state: failed, previous: on)))
  }

  @Test func aSwitchWhoseCommandIsGoneIsNoLongerInvalidAsAReconcile() {
    let broken = SwitchState(checked: true).applied(failure: "no radio")
    let fixed = PlannedChange(
      key: "wifi", cause: .reconcile, state: SwitchState(checked: true), previous: broken)
    #expect(step(broken, nil, Self.plain, replacing: Self.withCommand) == .change(fixed))
    #expect(Actor.configuration(.reconcile) == .reconcile)
  }

  @Test func aCommandsVerdictIsTheConfigurationsChangeOrAReconcile() {
    let on = SwitchState(checked: true)
    // The policy's State and `invalid`: one change, by the policy.
    #expect(
      Rules.appliedChange(
        key: "wifi", current: on, target: Self.held, cause: .policy, failure: "no radio")
        == PlannedChange(
          key: "wifi", cause: .policy, state: Self.held.applied(failure: "no radio"),
          previous: on))
    // Only `invalid` changed: a reconcile.
    #expect(
      Rules.appliedChange(key: "wifi", current: on, target: nil, cause: .policy, failure: "x")
        == PlannedChange(
          key: "wifi", cause: .reconcile, state: on.applied(failure: "x"), previous: on))
    #expect(
      Rules.appliedChange(key: "wifi", current: on, target: on, cause: .policy, failure: nil)
        == nil)
  }
}
