import SwitchCore
import Testing

@Suite struct SchemaChangesTests {
  static func catalog(_ definitions: [SwitchDefinition]) -> Catalog {
    Catalog(switches: definitions)
  }

  static let wifi = SwitchDefinition(
    key: "wifi", label: "Wi-Fi", defaultChecked: true, group: "Connectivity", order: 0,
    source: SourceLocation(file: "switches.d/10-a.conf", line: 1))
  static let chat = SwitchDefinition(
    key: "notifications.chat", label: "Chat", defaultChecked: true, order: 1)

  @Test func addedRemovedAndRedeclaredSwitchesAreNamed() {
    var relabelled = Self.chat
    relabelled.label = "Chat notifications"
    let bluetooth = SwitchDefinition(key: "bluetooth", label: "Bluetooth", defaultChecked: false)
    let changes = SchemaChanges(
      from: Self.catalog([Self.wifi, Self.chat]), to: Self.catalog([relabelled, bluetooth]))
    #expect(changes.added == ["bluetooth"])
    #expect(changes.removed == ["wifi"])
    #expect(changes.updated == ["notifications.chat"])
    #expect(changes.filtered { $0.hasPrefix("notifications.") }?.updated == ["notifications.chat"])
    #expect(changes.filtered { $0.hasPrefix("notifications.") }?.added == [])
    #expect(changes.filtered { $0 == "email.marketing" } == nil)
  }

  @Test func aMoveToAnotherLineIsNoChangeButANewGroupOrPlaceIs() {
    var moved = Self.wifi
    moved.source = SourceLocation(file: "switches.d/20-b.conf", line: 7)
    #expect(SchemaChanges(from: Self.catalog([Self.wifi]), to: Self.catalog([moved])).isEmpty)
    var regrouped = Self.wifi
    regrouped.group = "Radios"
    #expect(
      SchemaChanges(from: Self.catalog([Self.wifi]), to: Self.catalog([regrouped])).updated
        == ["wifi"])
    var reordered = Self.wifi
    reordered.order = 3
    #expect(
      SchemaChanges(from: Self.catalog([Self.wifi]), to: Self.catalog([reordered])).updated
        == ["wifi"])
  }
}
