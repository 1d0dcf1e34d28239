import SwitchCore
import Testing

@testable import SwitchDaemon

/// A write of a switch that lists another but is listed by none (Bluetooth
/// beside airplane mode, as Wi-Fi in the shipped files) takes the writer's
/// one-change path (`Dependencies.settledAlone`): what its dependency
/// says of it must still be in the State it commits.
@Suite struct WriterDependencyTests {
  static let switches =
    "[airplane-mode]\nLabel=Airplane mode\nDefault=off\n\n"
    + "[bluetooth]\nLabel=Bluetooth\nDefault=on\nConflicts=airplane-mode\n"

  static func write(_ key: String, _ operation: SwitchCore.Operation) -> WriterHarness.Write {
    .init(key: key, operation: operation)
  }

  @Test func aListingSwitchsOwnWriteKeepsWhatItsDependencySays() throws {
    let harness = try WriterHarness(switches: Self.switches)
    let steps = try harness.run(
      [
        // Free: a toggle is its own change alone.
        .init(writes: [Self.write("bluetooth", .toggle(ifRevision: nil))]),
        .init(writes: [Self.write("bluetooth", .toggle(ifRevision: nil))]),
        // Airplane mode on: Bluetooth follows (a switch others list).
        .init(writes: [Self.write("airplane-mode", .set(checked: true, ifRevision: nil))]),
        // An administrator's disable wins over the dependency's...
        .init(writes: [Self.write("bluetooth", .disable(reason: "Maintenance."))]),
        // ...and once lifted, the dependency shows again: not enabled.
        .init(writes: [Self.write("bluetooth", .enable)]),
        // Airplane mode off: Bluetooth applies again.
        .init(writes: [Self.write("airplane-mode", .set(checked: false, ifRevision: nil))]),
      ], asAdmin: true)
    try #require(steps.count == 6)

    #expect(steps[0].changes.map(\.key) == ["bluetooth"])
    #expect(steps[0].records["bluetooth"]?.state == SwitchState(checked: false))
    #expect(steps[1].records["bluetooth"]?.state == SwitchState(checked: true))

    let blocked = SwitchState(
      checked: true, disabled: true, disabledReason: "Airplane mode is on",
      disabledBy: .dependency)
    #expect(steps[2].changes.map(\.key) == ["airplane-mode", "bluetooth"])
    #expect(steps[2].records["bluetooth"]?.state == blocked)

    let byAdmin = SwitchState(
      checked: true, disabled: true, disabledReason: "Maintenance.", disabledBy: .admin)
    #expect(steps[3].changes.map(\.key) == ["bluetooth"])
    #expect(steps[3].records["bluetooth"]?.state == byAdmin)

    // The enable is one change, to the dependency's disable, and the answer says so.
    #expect(steps[4].changes.map(\.state) == [blocked])
    #expect(steps[4].changes.map(\.previous) == [byAdmin])
    #expect(steps[4].answered.first?.state == blocked)
    #expect(steps[4].records["bluetooth"]?.state == blocked)

    #expect(steps[5].records["bluetooth"]?.state == SwitchState(checked: true))
    #expect(steps[5].changes.map(\.key) == ["airplane-mode", "bluetooth"])
    #expect(steps[5].revision == 8)
  }
}
