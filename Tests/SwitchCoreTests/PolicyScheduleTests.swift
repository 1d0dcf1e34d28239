import Testing

@testable import SwitchCore

private func build(switches: String, policies: [(String, String)]) -> (
  catalog: Catalog?, diagnostics: [String]
) {
  let result = CatalogBuilder.build(
    ConfigSources(
      daemonConf: nil, switchFiles: [(name: "switches.d/10-base.conf", text: switches)],
      policyFiles: policies.map { (name: $0.0, text: $0.1) }))
  return (result.catalog, result.diagnostics.map(\.description))
}

private let corp = "policy.d/50-corp.conf"
private let local = "policy.d/90-local.conf"
private let office = try! Schedule(parsing: "Mon..Fri 08:00-16:00")

struct PolicyScheduleConfigTests {
  @Test func aScheduleIsReadIntoTheRule() throws {
    let result = build(
      switches: "[wifi]\nLabel=Wi-Fi",
      policies: [(corp, "[wifi]\nReadOnly=yes\nSchedule=Mon..Fri 08:00-16:00")])
    #expect(result.diagnostics == [])
    #expect(try #require(result.catalog).policies["wifi"]?.schedule == office)
  }

  @Test func aLaterFileReplacesOrClearsTheSchedule() throws {
    let replaced = build(
      switches: "[wifi]\nLabel=Wi-Fi",
      policies: [
        (corp, "[wifi]\nDisabled=yes\nSchedule=Sat 10:00-12:00"),
        (local, "[wifi]\nSchedule=Mon..Fri 08:00-16:00"),
      ])
    #expect(try #require(replaced.catalog).policies["wifi"]?.schedule == office)
    let cleared = build(
      switches: "[wifi]\nLabel=Wi-Fi",
      policies: [
        (corp, "[wifi]\nDisabled=yes\nSchedule=Sat 10:00-12:00"), (local, "[wifi]\nSchedule="),
      ])
    let rule = try #require(cleared.catalog).policies["wifi"]
    #expect(rule?.schedule == nil)
    #expect(rule?.disabled == true)
  }

  @Test func aScheduleOnASectionThatHoldsNothingIsAWarning() throws {
    let result = build(
      switches: "[wifi]\nLabel=Wi-Fi",
      policies: [
        (corp, "[wifi]\nReadOnly=yes\nSchedule=Mon..Fri 08:00-16:00"),
        (local, "[wifi]\nReadOnly=no"),
      ])
    #expect(
      result.diagnostics == [
        "policy.d/50-corp.conf:3: Schedule= has no effect without ReadOnly=yes or Disabled=yes"
      ])
    #expect(try #require(result.catalog).policies["wifi"]?.schedule == office)
  }

  @Test func aMalformedScheduleIsAnErrorAtItsLine() {
    let result = build(
      switches: "[wifi]\nLabel=Wi-Fi",
      policies: [(corp, "[wifi]\nReadOnly=yes\nSchedule=Mon..Fri 08:00-16:00; Sat 25:00-26:00")])
    #expect(result.catalog == nil)
    #expect(
      result.diagnostics == [
        "policy.d/50-corp.conf:3: invalid Schedule=: \"25:00\" in window \"Sat 25:00-26:00\" is "
          + "not a time: use HH:MM, hours 00-23 and minutes 00-59"
      ])
  }
}

struct PolicyInEffectTests {
  let rule = PolicyRule(
    key: "wifi", readOnly: true, disabled: true, checked: false, reason: "Office hours.",
    readOnlySource: SwitchCore.SourceLocation(file: corp, line: 1),
    disabledSource: SwitchCore.SourceLocation(file: corp, line: 1), schedule: office)

  @Test func insideItsWindowsTheRuleHolds() {
    // Monday 2026-11-30, 09:00 UTC.
    let now = utc(2026, 11, 30, 9)
    let effect = rule.inEffect(at: now, in: .fixed(0))
    var holding = rule
    holding.endsAt = utc(2026, 11, 30, 16)
    #expect(effect.rule == holding)
    #expect(effect.changesAt == utc(2026, 11, 30, 16))
  }

  @Test func outsideItsWindowsTheRuleHoldsNothing() {
    let effect = rule.inEffect(at: utc(2026, 12, 5, 9), in: .fixed(0))  // Saturday
    #expect(effect.rule == PolicyRule(key: "wifi", schedule: office))
    #expect(!effect.rule.readOnly && !effect.rule.disabled && effect.rule.checked == nil)
    #expect(effect.changesAt == utc(2026, 12, 7, 8))
  }

  @Test func withoutAScheduleTheRuleAlwaysHolds() {
    var always = rule
    always.schedule = nil
    let effect = always.inEffect(at: utc(2026, 12, 5, 9), in: .fixed(0))
    #expect(effect.rule == always)
    #expect(effect.changesAt == nil)
  }
}
