import Testing

@testable import SwitchCore

@Suite struct ApplyCommandTests {
  @Test(arguments: [
    ("/usr/bin/rfkill-apply wifi", ["/usr/bin/rfkill-apply", "wifi"]),
    ("  /a \t b   c  ", ["/a", "b", "c"]),
    (#"/a "two words" x"#, ["/a", "two words", "x"]),
    (#"/a "" b"#, ["/a", "", "b"]),
    (#"/a pre"fix and"post"#, ["/a", "prefix andpost"]),
    // Nothing else is special.
    (
      #"/a $HOME ${X} %n ; 'single quoted' \ | > *"#,
      ["/a", "$HOME", "${X}", "%n", ";", "'single", "quoted'", "\\", "|", ">", "*"]
    ),
    ("/a ünïcødé", ["/a", "ünïcødé"]),
  ])
  func splitsOnWhiteSpaceWithDoubleQuotesGrouping(text: String, words: [String]) {
    #expect(ApplyCommand.split(text) == .success(words))
  }

  @Test func emptyAndUnclosedAreProblems() {
    #expect(ApplyCommand.split("") == .failure(.empty))
    #expect(ApplyCommand.split("  \t ") == .failure(.empty))
    #expect(ApplyCommand.split(#"/a "open"#) == .failure(.unclosedQuote))
  }

  @Test func timeoutsArePositiveSecondsWithUpToThreeDecimals() {
    #expect(ApplyCommand.parseTimeout("10") == 10_000)
    #expect(ApplyCommand.parseTimeout("0.5") == 500)
    #expect(ApplyCommand.parseTimeout("1.25") == 1250)
    #expect(ApplyCommand.parseTimeout("86400") == 86_400_000)
    for bad in ["0", "0.0", "-1", "1.", ".5", "1.2345", "abc", "", "86401", "1e3", "1,5"] {
      #expect(ApplyCommand.parseTimeout(bad) == nil, "\(bad)")
    }
    #expect(
      ApplyCommand(arguments: ["/a"], timeoutMilliseconds: 500).timeoutReason
        == "timed out after 0.5s")
    #expect(ApplyCommand(arguments: ["/a"]).timeoutReason == "timed out after 10s")
    #expect(
      ApplyCommand(arguments: ["/a"], timeoutMilliseconds: 1050).timeoutReason
        == "timed out after 1.05s")
  }

  @Test func theSchemaReadsCommandsTimeoutsAndScope() {
    let (catalog, diagnostics) = CatalogBuilder.build(
      ConfigSources(
        daemonConf: nil,
        switchFiles: [
          (
            "switches.d/10.conf",
            """
            [bluetooth]
            Label=Bluetooth
            ApplyTimeoutSec=5
            ExecApply=/usr/libexec/switchd/rfkill-apply "blue tooth"

            [mail]
            Label=Mail
            Scope=user

            [quiet]
            Label=Quiet
            ApplyTimeoutSec=3
            """
          )
        ], policyFiles: []))
    #expect(
      catalog?.switches["bluetooth"]?.apply
        == ApplyCommand(
          arguments: ["/usr/libexec/switchd/rfkill-apply", "blue tooth"], timeoutMilliseconds: 5000)
    )
    #expect(catalog?.switches["mail"]?.scope == .user)
    #expect(catalog?.switches["mail"]?.apply == nil)
    #expect(
      diagnostics.map(\.description) == [
        "switches.d/10.conf:12: ApplyTimeoutSec= has no effect without ExecApply="
      ])
  }

  @Test func aChangeNeedsItsCommandOnlyWhenTheEffectiveValueChanges() {
    let with = SwitchDefinition(
      key: "wifi", label: "Wi-Fi", defaultChecked: false, apply: ApplyCommand(arguments: ["/a"]))
    let without = SwitchDefinition(key: "wifi", label: "Wi-Fi", defaultChecked: false)
    let on = SwitchState(checked: true)
    var disabledOn = on
    disabledOn.disabled = true
    var lockedOn = on
    lockedOn.readOnly = true
    #expect(Rules.needsApply(with, from: SwitchState(checked: false), to: on))
    #expect(Rules.needsApply(with, from: on, to: disabledOn))
    #expect(!Rules.needsApply(with, from: on, to: lockedOn))
    #expect(!Rules.needsApply(with, from: SwitchState(checked: false), to: disabledOn))
    #expect(!Rules.needsApply(without, from: SwitchState(checked: false), to: on))
  }

  @Test func aConfigurationChangeNeedsTheCommandWhenItIsNewOrTheValueChanges() {
    let with = SwitchDefinition(
      key: "wifi", label: "Wi-Fi", defaultChecked: false, apply: ApplyCommand(arguments: ["/a"]))
    var slower = with
    slower.apply?.timeoutMilliseconds = 30_000
    var other = with
    other.apply = ApplyCommand(arguments: ["/b"])
    let without = SwitchDefinition(key: "wifi", label: "Wi-Fi", defaultChecked: false)
    let on = SwitchState(checked: true)
    #expect(Rules.needsApply(with, replacing: without, from: on, to: on))
    #expect(Rules.needsApply(with, replacing: other, from: on, to: on))
    #expect(!Rules.needsApply(with, replacing: slower, from: on, to: on))
    #expect(Rules.needsApply(with, replacing: with, from: SwitchState(checked: false), to: on))
    #expect(!Rules.needsApply(without, replacing: with, from: SwitchState(checked: false), to: on))
  }
}

@Suite struct ApplyOperationRulesTests {
  static let withCommand = SwitchDefinition(
    key: "wifi", label: "Wi-Fi", defaultChecked: true, apply: ApplyCommand(arguments: ["/a"]))
  static let writer = Caller(
    actor: .peer(uid: 1000, gid: 1000, pid: 1), isAdmin: false, mayWrite: true)
  static let reader = Caller(
    actor: .peer(uid: 1001, gid: 1001, pid: 2), isAdmin: false, mayWrite: false)

  static func decide(
    _ definition: SwitchDefinition?, _ state: SwitchState, _ caller: Caller
  ) -> Result<Decision, Refusal> {
    Rules.decide(
      .apply, key: "wifi", definition: definition,
      record: definition.map { _ in SwitchRecord(key: "wifi", state: state) }, policy: nil,
      caller: caller)
  }

  @Test func applyChangesNoValueAndIsAllowedOnHeldOrDisabledSwitches() {
    var held = SwitchState(checked: true, readOnly: true, heldBy: .policy)
    held.disabled = true
    held.disabledBy = .admin
    for state in [SwitchState(checked: false), held] {
      guard case .success(let decided) = Self.decide(Self.withCommand, state, Self.writer) else {
        Issue.record("apply was refused on \(state)")
        continue
      }
      #expect(decided.next == nil)
    }
  }

  @Test func unknownThenNoCommandThenWriters() {
    #expect(
      Self.decide(nil, SwitchState(checked: true), Self.writer)
        .failureValue == .unknownSwitch(key: "wifi"))
    let plain = SwitchDefinition(key: "wifi", label: "Wi-Fi", defaultChecked: true)
    #expect(
      Self.decide(plain, SwitchState(checked: true), Self.reader).failureValue
        == .noApplyCommand(key: "wifi"))
    guard
      case .permissionDenied? = Self.decide(
        Self.withCommand, SwitchState(checked: true), Self.reader
      )
      .failureValue
    else {
      Issue.record("a reader may not apply")
      return
    }
  }
}

extension Result {
  fileprivate var failureValue: Failure? {
    if case .failure(let failure) = self { return failure }
    return nil
  }
}
