import Testing

@testable import SwitchCore

/// The one function that turns a decided write, or a new configuration, into
/// the set of changes to commit together (rule 17): what the apply commands
/// of issue 13 run before.
@Suite struct PlannedChangesTests {
  static let catalog = Catalog(
    switches: [
      SwitchDefinition(key: "airplane-mode", label: "Airplane mode", defaultChecked: false),
      SwitchDefinition(
        key: "wifi", label: "Wi-Fi", defaultChecked: true, conflicts: ["airplane-mode"]),
      SwitchDefinition(
        key: "bluetooth", label: "Bluetooth", defaultChecked: false, conflicts: ["airplane-mode"]),
      SwitchDefinition(key: "vpn", label: "VPN", defaultChecked: true),
    ],
    policies: [PolicyRule(key: "bluetooth", disabled: true, reason: "Not here.")])

  static func records(_ states: [String: SwitchState]) -> KeyTable<SwitchRecord> {
    var records: KeyTable<SwitchRecord> = [:]
    for (key, state) in states { records[key] = SwitchRecord(key: key, state: state) }
    return records
  }

  static let byAirplane = SwitchState(
    checked: true, disabled: true, disabledReason: "Airplane mode is on", disabledBy: .dependency)

  @Test func aWriteIsTheSwitchThenEachDependentItChanges() {
    let records = Self.records([
      "airplane-mode": SwitchState(checked: false), "wifi": SwitchState(checked: true),
      "bluetooth": SwitchState(
        checked: false, disabled: true, disabledReason: "Not here.", disabledBy: .policy),
      "vpn": SwitchState(checked: true),
    ])
    let planned = Rules.plannedChanges(
      of: "airplane-mode", from: records["airplane-mode"]!.state, to: SwitchState(checked: true),
      cause: .set, catalog: Self.catalog,
      records: records)
    #expect(
      planned == [
        PlannedChange(
          key: "airplane-mode", cause: .set, state: SwitchState(checked: true),
          previous: SwitchState(checked: false)),
        PlannedChange(
          key: "wifi", cause: .dependency, state: Self.byAirplane,
          previous: SwitchState(checked: true)),
      ])
    let alone = Rules.plannedChanges(
      of: "vpn", from: records["vpn"]!.state, to: SwitchState(checked: false), cause: .toggle,
      catalog: Self.catalog,
      records: records)
    #expect(alone.map(\.key) == ["vpn"])
  }

  @Test func enableWhileTheDependencyHoldsShowsTheDependencyInOneChange() {
    let disabled = SwitchState(
      checked: true, disabled: true, disabledReason: "Mine.", disabledBy: .admin)
    let records = Self.records([
      "airplane-mode": SwitchState(checked: true), "wifi": disabled,
    ])
    let planned = Rules.plannedChanges(
      of: "wifi", from: disabled, to: SwitchState(checked: true), cause: .enable,
      catalog: Self.catalog,
      records: records)
    #expect(
      planned == [
        PlannedChange(key: "wifi", cause: .enable, state: Self.byAirplane, previous: disabled)
      ])
  }

  /// "vpn" lists nothing and nothing lists it: its write is its own change
  /// alone (`Dependencies.isAlone`, the way most writes take), none when it
  /// changes nothing, and a dependency's disable a reload left on it (its
  /// dependency gone) is lifted as the general way lifts it.
  @Test func aSwitchAloneIsItsOwnChangeAndLosesAStaleDependencysDisable() {
    #expect(Self.catalog.dependencies.isAlone("vpn"))
    #expect(!Self.catalog.dependencies.isAlone("airplane-mode"))
    #expect(!Self.catalog.dependencies.isAlone("wifi"))
    let on = SwitchState(checked: true)
    let off = SwitchState(checked: false)
    let records = Self.records(["vpn": on])
    #expect(
      Rules.plannedChanges(
        of: "vpn", from: on, to: off, cause: .toggle, catalog: Self.catalog, records: records)
        == [PlannedChange(key: "vpn", cause: .toggle, state: off, previous: on)])
    #expect(
      Rules.plannedChanges(
        of: "vpn", from: on, to: on, cause: .set, catalog: Self.catalog, records: records
      )
      .isEmpty)
    let stale = SwitchState(
      checked: true, disabled: true, disabledReason: "Gone is off", disabledBy: .dependency)
    #expect(
      Rules.plannedChanges(
        of: "vpn", from: stale, to: stale, cause: .set, catalog: Self.catalog,
        records: Self.records(["vpn": stale]))
        == [PlannedChange(key: "vpn", cause: .set, state: on, previous: stale)])
  }

  @Test func aConfigurationIsOneChangePerSwitchWithPolicyBeforeDependency() {
    // At start: airplane mode on, nothing settled yet.
    let records = Self.records([
      "airplane-mode": SwitchState(checked: true), "wifi": SwitchState(checked: true),
      "bluetooth": SwitchState(checked: true), "vpn": SwitchState(checked: true),
    ])
    let planned = Rules.plannedChanges(applying: Self.catalog, records: records)
    #expect(planned.map(\.key) == ["bluetooth", "wifi"])
    #expect(planned.map(\.cause) == [.policy, .dependency])
    // The policy's disable wins over the dependency.
    #expect(planned.first?.state.disabledBy == .policy)
    #expect(planned.last?.state == Self.byAirplane)
  }
}
