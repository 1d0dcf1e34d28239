import Testing

@testable import SwitchCore

/// Rule 17 as a function of States: which switches a dependency disables,
/// with which reason, and what an administrator's or a policy's disable does.
@Suite struct DependenciesTests {
  /// airplane-mode; wifi and bluetooth conflict with it; hotspot requires
  /// wifi (a chain through wifi); vpn is on its own.
  static let catalog = Catalog(switches: [
    SwitchDefinition(key: "airplane-mode", label: "Airplane mode", defaultChecked: false),
    SwitchDefinition(
      key: "wifi", label: "Wi-Fi", defaultChecked: true, conflicts: ["airplane-mode"]),
    SwitchDefinition(
      key: "bluetooth", label: "Bluetooth", defaultChecked: false, conflicts: ["airplane-mode"]),
    SwitchDefinition(key: "hotspot", label: "Hotspot", defaultChecked: true, requires: ["wifi"]),
    SwitchDefinition(key: "vpn", label: nil, defaultChecked: true),
  ])
  static var dependencies: Dependencies { catalog.dependencies }

  static func on() -> SwitchState { SwitchState(checked: true) }
  static func off() -> SwitchState { SwitchState(checked: false) }
  static func byDependency(_ checked: Bool, _ reason: String) -> SwitchState {
    SwitchState(checked: checked, disabled: true, disabledReason: reason, disabledBy: .dependency)
  }
  static func byAdmin(_ checked: Bool, _ reason: String? = nil) -> SwitchState {
    SwitchState(checked: checked, disabled: true, disabledReason: reason, disabledBy: .admin)
  }

  @Test func eachSwitchComesAfterTheSwitchesItLists() {
    let order = Self.dependencies.order
    #expect(Set(order) == Set(Self.catalog.sortedKeys))
    func index(_ key: String) -> Int { order.firstIndex(of: key) ?? -1 }
    #expect(index("airplane-mode") < index("wifi"))
    #expect(index("airplane-mode") < index("bluetooth"))
    #expect(index("wifi") < index("hotspot"))
    // Without dependencies the order is the sorted one.
    let plain = Catalog(switches: [
      SwitchDefinition(key: "b", label: "B", defaultChecked: false),
      SwitchDefinition(key: "a", label: "A", defaultChecked: false),
    ])
    #expect(plain.dependencies.order == ["a", "b"])
  }

  @Test func aConflictDisablesWhileTheOtherSwitchIsInEffect() {
    var states = ["airplane-mode": Self.on(), "wifi": Self.on()]
    #expect(Self.dependencies.blocker(of: "wifi") { states[$0] } == "Airplane mode is on")
    // Airplane mode off, or on but disabled, is not in effect.
    states["airplane-mode"] = Self.off()
    #expect(Self.dependencies.blocker(of: "wifi") { states[$0] } == nil)
    states["airplane-mode"] = Self.byAdmin(true)
    #expect(Self.dependencies.blocker(of: "wifi") { states[$0] } == nil)
    #expect(Self.dependencies.blocker(of: "vpn") { states[$0] } == nil)
  }

  @Test func aRequirementDisablesWhileTheOtherSwitchIsNotInEffect() {
    var states = ["wifi": Self.off()]
    #expect(Self.dependencies.blocker(of: "hotspot") { states[$0] } == "Wi-Fi is off")
    states["wifi"] = Self.byDependency(true, "Airplane mode is on")
    #expect(Self.dependencies.blocker(of: "hotspot") { states[$0] } == "Wi-Fi is disabled")
    states["wifi"] = Self.on()
    #expect(Self.dependencies.blocker(of: "hotspot") { states[$0] } == nil)
  }

  @Test func aReasonNamesASwitchWithoutALabelByItsKey() {
    let catalog = Catalog(switches: [
      SwitchDefinition(key: "vpn", label: nil, defaultChecked: true),
      SwitchDefinition(key: "mail", label: "Mail", defaultChecked: true, requires: ["vpn"]),
    ])
    #expect(catalog.dependencies.blocker(of: "mail") { _ in Self.off() } == "vpn is off")
  }

  @Test func airplaneModeOnDisablesWifiAndBluetoothAndTheChainKeepingTheirValues() {
    let states = [
      "airplane-mode": Self.on(), "wifi": Self.on(), "bluetooth": Self.off(),
      "hotspot": Self.on(), "vpn": Self.on(),
    ]
    let changed = Self.dependencies.consequences(of: "airplane-mode") { states[$0] }
    #expect(changed.map(\.key) == ["bluetooth", "wifi", "hotspot"])
    #expect(
      changed.map(\.state) == [
        Self.byDependency(false, "Airplane mode is on"),
        Self.byDependency(true, "Airplane mode is on"),
        Self.byDependency(true, "Wi-Fi is disabled"),
      ])
  }

  @Test func airplaneModeOffBringsTheStoredValuesBack() {
    let states = [
      "airplane-mode": Self.off(), "wifi": Self.byDependency(true, "Airplane mode is on"),
      "bluetooth": Self.byDependency(false, "Airplane mode is on"),
      "hotspot": Self.byDependency(true, "Wi-Fi is disabled"),
    ]
    let changed = Self.dependencies.consequences(of: "airplane-mode") { states[$0] }
    #expect(changed.map(\.key) == ["bluetooth", "wifi", "hotspot"])
    #expect(changed.map(\.state) == [Self.off(), Self.on(), Self.on()])
  }

  /// A diamond: `b` and `c` require `a`, `d` requires both. Turning `a`
  /// off reaches `d` by two ways: it is settled once, after both, and sees
  /// their new States.
  @Test func aSwitchReachedByTwoWaysIsSettledOnceAfterBoth() {
    let diamond = Catalog(switches: [
      SwitchDefinition(key: "a", label: "A", defaultChecked: true),
      SwitchDefinition(key: "b", label: "B", defaultChecked: true, requires: ["a"]),
      SwitchDefinition(key: "c", label: "C", defaultChecked: true, requires: ["a"]),
      SwitchDefinition(key: "d", label: "D", defaultChecked: true, requires: ["c", "b"]),
    ]).dependencies
    #expect(diamond.reach(of: "a") == ["a", "b", "c", "d"])
    #expect(diamond.reach(of: "c") == ["c", "d"])
    #expect(diamond.reach(of: "d") == ["d"])
    let states = ["a": Self.off(), "b": Self.on(), "c": Self.on(), "d": Self.on()]
    let changed = diamond.consequences(of: "a") { states[$0] }
    #expect(changed.map(\.key) == ["b", "c", "d"])
    #expect(
      changed.map(\.state) == [
        Self.byDependency(true, "A is off"), Self.byDependency(true, "A is off"),
        // `Requires=` in its order: c first.
        Self.byDependency(true, "C is disabled"),
      ])
  }

  @Test func aSwitchNobodyListsHasNoConsequences() {
    #expect(!Self.dependencies.hasDependents("vpn"))
    #expect(Self.dependencies.consequences(of: "vpn") { _ in Self.on() }.isEmpty)
    // …and one whose change leaves its dependents as they were has none either.
    let states = ["airplane-mode": Self.off(), "wifi": Self.on(), "bluetooth": Self.on()]
    #expect(Self.dependencies.consequences(of: "airplane-mode") { states[$0] }.isEmpty)
  }

  @Test func anAdministratorsOrAPolicysDisableWinsOverADependency() {
    let states = ["airplane-mode": Self.on()]
    let admin = Self.byAdmin(true, "Maintenance.")
    #expect(Self.dependencies.settled(admin, of: "wifi") { states[$0] } == admin)
    let policy = SwitchState(
      checked: true, disabled: true, disabledReason: "Not here.", disabledBy: .policy)
    #expect(Self.dependencies.settled(policy, of: "wifi") { states[$0] } == policy)
    // Once that disable is lifted, the dependency shows.
    #expect(
      Self.dependencies.settled(Self.on(), of: "wifi") { states[$0] }
        == Self.byDependency(true, "Airplane mode is on"))
  }

  @Test func aDisabledDependentIsNotInEffectForItsOwnDependents() {
    // wifi disabled by an administrator: hotspot, which requires it, is disabled by dependency.
    let states = ["airplane-mode": Self.off(), "wifi": Self.byAdmin(true), "hotspot": Self.on()]
    let changed = Self.dependencies.consequences(of: "wifi") { states[$0] }
    #expect(changed.map(\.key) == ["hotspot"])
    #expect(changed.first?.state == Self.byDependency(true, "Wi-Fi is disabled"))
  }

  @Test func aReadOnlyHoldIsKeptWhileADependencyDisables() {
    let held = SwitchState(checked: true, readOnly: true, readOnlyReason: "Held.", heldBy: .admin)
    let settled = Self.dependencies.settled(held, of: "wifi") { _ in Self.on() }
    #expect(settled.readOnly && settled.heldBy == .admin && settled.readOnlyReason == "Held.")
    #expect(settled.disabledBy == .dependency && settled.checked)
  }

  @Test func aDependencyNoLongerDeclaredIsLifted() {
    let stale = Self.byDependency(true, "Airplane mode is on")
    #expect(Self.dependencies.settled(stale, of: "vpn") { _ in Self.on() } == Self.on())
  }

  @Test func aSwitchNobodyListsSettlesAloneInOneStep() {
    let airplaneOn = ["airplane-mode": Self.on()]
    let airplaneOff = ["airplane-mode": Self.off()]
    // Alone: its own State, as it is.
    #expect(
      Self.dependencies.settledAlone(Self.on(), of: HashedKey("vpn")) { _ in nil } == Self.on())
    // Listing others but listed by none: settled by what it lists.
    #expect(
      Self.dependencies.settledAlone(Self.on(), of: HashedKey("bluetooth")) {
        airplaneOn[$0.string]
      }
        == Self.byDependency(true, "Airplane mode is on"))
    #expect(
      Self.dependencies.settledAlone(Self.on(), of: HashedKey("bluetooth")) {
        airplaneOff[$0.string]
      }
        == Self.on())
    // A dependency a reload removed is lifted, as `settled` lifts it.
    let stale = Self.byDependency(true, "Airplane mode is on")
    #expect(Self.dependencies.settledAlone(stale, of: HashedKey("vpn")) { _ in nil } == Self.on())
    // Listed by others: they may follow, so not alone.
    #expect(
      Self.dependencies.settledAlone(Self.on(), of: HashedKey("airplane-mode")) { _ in nil } == nil)
    #expect(
      Self.dependencies.settledAlone(Self.on(), of: HashedKey("wifi")) { airplaneOff[$0.string] }
        == nil)
  }

  @Test func aSwitchThatSettlesAloneHasNoFollowers() {
    // Every key, from every pair of on/off for airplane mode and Wi-Fi:
    // where a switch settles alone, nothing follows it, and one that does
    // not has switches listing it. (That the writer's one-change path
    // commits what the general one would: WriterDependencyTests.)
    for key in Self.catalog.sortedKeys {
      for airplane in [Self.on(), Self.off()] {
        for wifi in [Self.on(), Self.off()] {
          for next in [Self.on(), Self.off(), Self.byDependency(true, "Airplane mode is on")] {
            let states = ["airplane-mode": airplane, "wifi": wifi]
            let lookup: (String) -> SwitchState? = { $0 == key ? next : states[$0] ?? Self.on() }
            guard
              Self.dependencies.settledAlone(
                next, of: HashedKey(key), states: { lookup($0.string) }) != nil
            else {
              #expect(Self.dependencies.hasDependents(key))
              continue
            }
            #expect(Self.dependencies.consequences(of: key, states: lookup).isEmpty)
          }
        }
      }
    }
  }
}

/// What the verbs do to a switch a dependency disables: nobody changes its
/// value, `enable` does not lift it, an administrator's `disable` takes over.
@Suite struct DependencyRulesTests {
  static let admin = RulesTests.admin
  static let disabledByDependency = SwitchState(
    checked: true, disabled: true, disabledReason: "Airplane mode is on",
    disabledBy: .dependency)

  static func decide(_ op: Operation, _ caller: Caller) -> Result<SwitchState?, Refusal> {
    Rules.decide(
      op, key: "wifi", definition: RulesTests.definition,
      record: SwitchRecord(key: "wifi", state: disabledByDependency, revision: 3), policy: nil,
      caller: caller
    ).map(\.next)
  }

  static let refusal = Refusal.disabled(
    key: "wifi", reason: "Airplane mode is on", by: .dependency)

  @Test(arguments: [
    Operation.set(checked: false, ifRevision: nil), .set(checked: true, ifRevision: nil),
    .toggle(ifRevision: nil), .reset, .lock(reason: nil, checked: false), .unlock, .enable,
  ])
  func nobodyChangesItAndEnableDoesNotLiftIt(_ op: Operation) {
    #expect(Self.decide(op, Self.admin) == .failure(Self.refusal))
    if op.privilege == .writer {
      #expect(Self.decide(op, RulesTests.user) == .failure(Self.refusal))
    }
  }

  @Test func theRefusalSaysWhy() {
    #expect(Self.refusal.message == "wifi is disabled: Airplane mode is on.")
  }

  @Test func anAdministratorsDisableTakesOverWithItsOwnReason() throws {
    let taken = try #require(try Self.decide(.disable(reason: "Maintenance."), Self.admin).get())
    #expect(taken.disabledBy == .admin && taken.disabledReason == "Maintenance.")
    let noReason = try #require(try Self.decide(.disable(reason: nil), Self.admin).get())
    #expect(noReason.disabledBy == .admin && noReason.disabledReason == nil)
    #expect(taken.checked)
  }
}
