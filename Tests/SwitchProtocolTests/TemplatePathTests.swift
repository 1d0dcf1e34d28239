import SwitchCore
import Testing

@testable import SwitchProtocol

/// A Switch object written straight from its definition (a first read, a
/// list) has the bytes of one written from its kept template, whatever
/// the switch's state, scope and the members a caller adds.
@Suite struct TemplatePathTests {
  static let definitions = [Scope.system, .user].flatMap { scope in
    [
      SwitchDefinition(
        key: "wifi", label: "Wi-Fi", description: #"Connect to "wireless" networks."#,
        defaultChecked: false, checkedIcon: "wifi", uncheckedIcon: "wifi_off",
        group: "Connectivity", order: 3, scope: scope),
      SwitchDefinition(key: "bare", label: nil, defaultChecked: true, scope: scope),
    ]
  }

  static let states = [
    SwitchState(checked: true),
    SwitchState(checked: false),
    SwitchState(checked: true, readOnly: true, readOnlyReason: "Held.", heldBy: .policy),
    SwitchState(checked: false, disabled: true, disabledReason: "Off.", disabledBy: .admin),
  ]

  static let refused = Writability.refused(
    .permissionDenied(key: "wifi", action: "change", requirement: "only administrators"))

  @Test func theDefinitionPathWritesTheTemplatePathsBytes() {
    var compared = 0
    for definition in Self.definitions {
      let template = SwitchTemplate(definition)
      for state in Self.states {
        let record = SwitchRecord(
          key: definition.key, state: state, revision: 7, changedAt: 1_796_010_000_123)
        for source in [nil, SourceLocation(file: "policy.d/50-corp.conf", line: 2)] {
          for observed in [nil, true, false] as [Bool?] {
            for writable in [nil, .writable, Self.refused] as [Writability?] {
              for user in [nil, 1000] as [UInt32?] {
                var direct = JSONWriter()
                WireEncoding.writeSwitch(
                  &direct, definition: definition, record: record, policySource: source,
                  user: user, observed: observed, writable: writable)
                var kept = JSONWriter()
                WireEncoding.writeSwitch(
                  &kept, template: template, record: record, policySource: source, user: user,
                  observed: observed, writable: writable)
                let same = direct.bytes == kept.bytes
                #expect(
                  same,
                  "\(definition.key) \(definition.scope) \(state.checked) \(source != nil) \(String(describing: observed)) \(String(describing: writable))"
                )
                compared += 1
              }
            }
          }
        }
      }
    }
    #expect(compared == 4 * 4 * 2 * 3 * 3 * 2)
  }

  /// The schema's strings read back as the definition has them: quoted,
  /// escaped, empty, and a label left out (both paths share the parts
  /// that hold each string's quotes).
  @Test func theSchemasStringsReadBackAsDeclared() throws {
    let odd = SwitchDefinition(
      key: "odd", label: "", description: "Tab\there, a \\ and \u{2028}.", defaultChecked: false,
      checkedIcon: "", uncheckedIcon: #"x"y"#, group: "G\n", order: -4)
    for definition in Self.definitions + [odd] {
      let record = SwitchRecord(key: definition.key, state: SwitchState(checked: true))
      var w = JSONWriter()
      WireEncoding.writeSwitch(
        &w, definition: definition, record: record, policySource: nil, writable: .writable)
      let object = try SwitchObject(wire: try JSONParser.parse(w.bytes, maxDepth: 8))
      #expect(object.key == definition.key)
      #expect(object.label == (definition.label ?? ""))
      #expect(object.description == definition.description)
      #expect(object.checkedIcon == definition.checkedIcon)
      #expect(object.uncheckedIcon == definition.uncheckedIcon)
      #expect(object.group == definition.group)
      #expect(object.order == definition.order)
    }
  }
}
