import Testing

@testable import SwitchCore

/// The rules of docs/semantics.md, table-driven: every operation against every
/// kind of switch (free, admin-held, policy-held, policy-fixed, disabled by
/// admin or policy, both) for a user, a non-writer and an administrator.
@Suite struct RulesTests {
  static let definition = SwitchDefinition(key: "wifi", label: "Wi-Fi", defaultChecked: true)
  static let user = Caller(
    actor: .peer(uid: 1000, gid: 1000, pid: 1), isAdmin: false, mayWrite: true)
  static let reader = Caller(
    actor: .peer(uid: 1001, gid: 1001, pid: 2), isAdmin: false, mayWrite: false)
  static let admin = Caller(actor: .peer(uid: 0, gid: 0, pid: 3), isAdmin: true, mayWrite: true)

  enum Kind: String, CaseIterable {
    case free, adminHeld, policyHeld, policyFixed, adminDisabled, policyDisabled, heldAndDisabled
  }

  static func state(_ kind: Kind) -> (SwitchState, PolicyRule?) {
    var s = SwitchState(checked: false)
    var rule: PolicyRule?
    switch kind {
    case .free: break
    case .adminHeld:
      s.readOnly = true
      s.heldBy = .admin
      s.readOnlyReason = "held by IT"
    case .policyHeld:
      s.readOnly = true
      s.heldBy = .policy
      s.readOnlyReason = "policy"
      rule = PolicyRule(key: "wifi", readOnly: true, reason: "policy")
    case .policyFixed:
      s.readOnly = true
      s.heldBy = .policy
      s.readOnlyReason = "fixed"
      rule = PolicyRule(key: "wifi", readOnly: true, checked: false, reason: "fixed")
    case .adminDisabled:
      s.disabled = true
      s.disabledBy = .admin
      s.disabledReason = "off for now"
    case .policyDisabled:
      s.disabled = true
      s.disabledBy = .policy
      s.disabledReason = "not offered"
      rule = PolicyRule(key: "wifi", disabled: true, reason: "not offered")
    case .heldAndDisabled:
      s.readOnly = true
      s.heldBy = .admin
      s.readOnlyReason = "held"
      s.disabled = true
      s.disabledBy = .admin
      s.disabledReason = "disabled wins"
    }
    return (s, rule)
  }

  static func decide(_ op: Operation, _ kind: Kind, _ caller: Caller, revision: Int64 = 4)
    -> Result<SwitchState?, Refusal>
  {
    let (state, rule) = state(kind)
    return Rules.decide(
      op, key: "wifi", definition: definition,
      record: SwitchRecord(key: "wifi", state: state, revision: revision), policy: rule,
      caller: caller
    ).map(\.next)
  }

  /// What a user's value write gets, by kind of switch.
  @Test(arguments: Kind.allCases)
  func userValueWrites(_ kind: Kind) {
    for op in [Operation.set(checked: true, ifRevision: nil), .toggle(ifRevision: nil), .reset] {
      let result = Self.decide(op, kind, Self.user)
      switch kind {
      case .free:
        #expect((try? result.get())??.checked == true)
      case .adminHeld, .policyHeld, .policyFixed:
        guard case .failure(.readOnly(_, let reason, let holder, _)) = result else {
          Issue.record("\(op) on \(kind): \(result)")
          continue
        }
        #expect(reason != nil)
        #expect(holder == Self.state(kind).0.heldBy)
      case .adminDisabled, .policyDisabled, .heldAndDisabled:
        guard case .failure(.disabled(_, let reason, _, _)) = result else {
          Issue.record("\(op) on \(kind): \(result)")
          continue
        }
        // Disabled wins: its reason is the one given.
        #expect(reason == Self.state(kind).0.disabledReason)
      }
    }
  }

  @Test(arguments: Kind.allCases)
  func administratorValueWrites(_ kind: Kind) {
    let result = Self.decide(.set(checked: true, ifRevision: nil), kind, Self.admin)
    switch kind {
    case .free, .adminHeld, .policyHeld:
      // The holder may still set checked (SWT-25).
      #expect((try? result.get())??.checked == true)
    case .policyFixed:
      #expect(result == .failure(.readOnly(key: "wifi", reason: "fixed", heldBy: .policy)))
    case .adminDisabled, .policyDisabled, .heldAndDisabled:
      guard case .failure(.disabled) = result else {
        Issue.record("set on \(kind): \(result)")
        return
      }
    }
  }

  @Test func aRefusedWriteIsRefusedEvenWhenItWouldChangeNothing() {
    // The switch is off and held; setting it off is still ReadOnly.
    let result = Self.decide(.set(checked: false, ifRevision: nil), .adminHeld, Self.user)
    #expect(result == .failure(.readOnly(key: "wifi", reason: "held by IT", heldBy: .admin)))
  }

  @Test func noOpIsDetectedOnlyAfterEveryCheck() {
    #expect(Self.decide(.set(checked: false, ifRevision: nil), .free, Self.user) == .success(nil))
    #expect(Self.decide(.reset, .free, Self.user) == .success(SwitchState(checked: true)))
  }

  @Test func writersGroupComesBeforeDisabledAndReadOnly() {
    for kind in Kind.allCases {
      let result = Self.decide(.toggle(ifRevision: nil), kind, Self.reader)
      guard case .failure(.permissionDenied) = result else {
        Issue.record("\(kind): \(result)")
        continue
      }
    }
  }

  @Test func conflictComesLastAndCarriesTheCurrentRevision() {
    #expect(
      Self.decide(.toggle(ifRevision: 3), .free, Self.user)
        == .failure(.conflict(key: "wifi", expected: 3, current: 4)))
    #expect((try? Self.decide(.toggle(ifRevision: 4), .free, Self.user).get()) != nil)
    // ReadOnly is checked before Conflict.
    guard case .failure(.readOnly) = Self.decide(.toggle(ifRevision: 3), .adminHeld, Self.user)
    else {
      Issue.record("ReadOnly must come before Conflict")
      return
    }
  }

  @Test func aPolicyRefusalNamesItsSection() {
    let source = SourceLocation(file: "policy.d/50-corp.conf", line: 2)
    var (held, rule) = Self.state(.policyFixed)
    rule?.readOnlySource = source
    let refused = Rules.decide(
      .set(checked: true, ifRevision: nil), key: "wifi", definition: Self.definition,
      record: SwitchRecord(key: "wifi", state: held, revision: 4), policy: rule,
      caller: Self.admin)
    #expect(
      refused == .failure(.readOnly(key: "wifi", reason: "fixed", heldBy: .policy, source: source)))
    var (disabled, disabling) = Self.state(.policyDisabled)
    disabling?.disabledSource = source
    held = disabled
    let enable = Rules.decide(
      .enable, key: "wifi", definition: Self.definition,
      record: SwitchRecord(key: "wifi", state: held, revision: 4), policy: disabling,
      caller: Self.admin)
    #expect(
      enable
        == .failure(.disabled(key: "wifi", reason: "not offered", by: .policy, source: source)))
    // An administrator's hold names no file.
    guard
      case .failure(.readOnly(_, _, .admin, nil)) = Self.decide(
        .toggle(ifRevision: nil), .adminHeld, Self.user)
    else {
      Issue.record("an admin hold must have no policySource")
      return
    }
  }

  @Test func aDecisionCarriesTheSwitchItWasMadeOn() throws {
    let record = SwitchRecord(key: "wifi", state: SwitchState(checked: false), revision: 9)
    let decision = try Rules.decide(
      .toggle(ifRevision: nil), key: "wifi", definition: Self.definition, record: record,
      policy: nil, caller: Self.user
    ).get()
    #expect(decision.definition == Self.definition)
    #expect(decision.record == record)
    #expect(decision.next == SwitchState(checked: true))
  }

  @Test func unknownSwitchComesBeforeEverythingTheSwitchDecides() {
    let result = Rules.decide(
      .toggle(ifRevision: 1), key: "nope", definition: nil, record: nil, policy: nil,
      caller: Self.reader)
    #expect(result == .failure(.unknownSwitch(key: "nope")))
  }

  @Test(arguments: [
    Operation.lock(reason: nil, checked: nil), .unlock, .disable(reason: nil), .enable,
  ])
  func administratorVerbsAreForAdministratorsOnly(_ op: Operation) {
    guard case .failure(.permissionDenied) = Self.decide(op, .free, Self.user) else {
      Issue.record("\(op) by a user must be PermissionDenied")
      return
    }
  }

  @Test func lockWithAValueIsOneChange() throws {
    let next = try #require(
      try Self.decide(.lock(reason: "exam", checked: true), .free, Self.admin).get())
    #expect(next.checked && next.readOnly && next.heldBy == .admin)
    #expect(next.readOnlyReason == "exam")
    #expect(
      next.changedFields(from: SwitchState(checked: false)) == [
        .checked, .readOnly, .readOnlyReason, .heldBy,
      ])
  }

  @Test func lockingAgainWithoutAReasonKeepsTheReasonAndChangesNothing() {
    #expect(Self.decide(.lock(reason: nil, checked: nil), .adminHeld, Self.admin) == .success(nil))
  }

  @Test func whatAPolicyHoldsCannotBeLiftedOverTheSocket() {
    for kind in [Kind.policyHeld, .policyFixed] {
      for op in [Operation.lock(reason: "x", checked: nil), .unlock] {
        guard case .failure(.readOnly(_, _, .policy, _)) = Self.decide(op, kind, Self.admin) else {
          Issue.record("\(op) on \(kind)")
          continue
        }
      }
    }
    for op in [Operation.enable, .disable(reason: "x")] {
      guard
        case .failure(.disabled(_, _, .policy, _)) = Self.decide(op, .policyDisabled, Self.admin)
      else {
        Issue.record("\(op) on a policy-disabled switch")
        continue
      }
    }
  }

  @Test(arguments: [
    Operation.lock(reason: nil, checked: true), .lock(reason: "r", checked: nil), .unlock,
  ])
  func disabledWinsOverLockAndUnlock(_ op: Operation) {
    for kind in [Kind.adminDisabled, .policyDisabled, .heldAndDisabled] {
      guard case .failure(.disabled) = Self.decide(op, kind, Self.admin) else {
        Issue.record("\(op) on \(kind) must be Disabled")
        continue
      }
    }
  }

  @Test func enableAndUnlockClearTheirReasons() throws {
    let enabled = try #require(try Self.decide(.enable, .adminDisabled, Self.admin).get())
    #expect(!enabled.disabled && enabled.disabledBy == nil && enabled.disabledReason == nil)
    let unlocked = try #require(try Self.decide(.unlock, .adminHeld, Self.admin).get())
    // Disable keeps working on a disabled switch: it updates the reason.
    let reworded = try #require(
      try Self.decide(.disable(reason: "new"), .adminDisabled, Self.admin).get())
    #expect(reworded.disabledReason == "new")
    #expect(!unlocked.readOnly && unlocked.heldBy == nil && unlocked.readOnlyReason == nil)
    #expect(Self.decide(.unlock, .free, Self.admin) == .success(nil))
    #expect(Self.decide(.enable, .free, Self.admin) == .success(nil))
  }

  // MARK: Policy application

  @Test func applyingAPolicyHoldsFixesAndDisables() {
    let rule = PolicyRule(key: "wifi", readOnly: true, disabled: true, checked: true, reason: "r")
    let next = Rules.applyPolicy(rule, to: SwitchState(checked: false))
    #expect(
      next
        == SwitchState(
          checked: true, readOnly: true, readOnlyReason: "r", heldBy: .policy, disabled: true,
          disabledReason: "r", disabledBy: .policy))
  }

  @Test func removingAPolicyLiftsOnlyWhatItHeld() {
    let (policyHeld, _) = Self.state(.policyHeld)
    #expect(Rules.applyPolicy(nil, to: policyHeld) == SwitchState(checked: false))
    let (adminHeld, _) = Self.state(.adminHeld)
    #expect(Rules.applyPolicy(nil, to: adminHeld) == adminHeld)
    let (policyDisabled, _) = Self.state(.policyDisabled)
    #expect(Rules.applyPolicy(nil, to: policyDisabled) == SwitchState(checked: false))
  }

  @Test func checkedWithoutReadOnlyHasNoEffect() {
    let rule = PolicyRule(key: "wifi", checked: true)
    #expect(Rules.applyPolicy(rule, to: SwitchState(checked: false)) == SwitchState(checked: false))
  }

  @Test func policySourceNamesTheDisablingSectionFirst() {
    let held = SwitchCore.SourceLocation(file: "policy.d/10-a.conf", line: 2)
    let disabled = SwitchCore.SourceLocation(file: "policy.d/20-b.conf", line: 5)
    let rule = PolicyRule(
      key: "wifi", readOnly: true, disabled: true, readOnlySource: held, disabledSource: disabled)
    let state = Rules.applyPolicy(rule, to: SwitchState(checked: false))
    #expect(Rules.policySource(state: state, rule: rule)?.policySourceText == "20-b.conf:5")
    let onlyHeld = Rules.applyPolicy(
      PolicyRule(key: "wifi", readOnly: true, readOnlySource: held), to: SwitchState(checked: false)
    )
    #expect(Rules.policySource(state: onlyHeld, rule: rule)?.policySourceText == "10-a.conf:2")
    #expect(Rules.policySource(state: SwitchState(checked: true), rule: rule) == nil)
  }

  // MARK: Who may do what

  @Test func privilegesAreOneTable() {
    for cause in Cause.allCases {
      let expected: Privilege =
        [.dependency, .confirm, .revert].contains(cause)
        ? .anyone : [.set, .toggle, .reset, .apply].contains(cause) ? .writer : .administrator
      #expect(cause.privilege == expected)
    }
    #expect(Self.reader.has(.anyone) && !Self.reader.has(.writer))
    #expect(Self.user.has(.writer) && !Self.user.has(.administrator))
    #expect(Self.admin.has(.administrator))
  }

  @Test func isOnAndInEffectNeedsCheckedAndNotDisabled() {
    #expect(SwitchState(checked: true).isOnAndInEffect)
    #expect(!SwitchState(checked: false).isOnAndInEffect)
    #expect(!SwitchState(checked: true, disabled: true).isOnAndInEffect)
  }

  @Test func restartOnlySettingsAreNamed() {
    let old = DaemonSettings()
    var new = old
    #expect(Rules.settingsNeedingRestart(from: old, to: new).isEmpty)
    new.socket = "/run/other.sock"
    new.database = "/var/lib/other.db"
    new.maxConnections = 5
    #expect(Rules.settingsNeedingRestart(from: old, to: new) == ["Socket", "Database"])
    new.socketMode = 0o600
    #expect(
      Rules.settingsNeedingRestart(from: old, to: new) == ["Socket", "SocketMode", "Database"])
  }

  // MARK: Keys and patterns

  @Test(arguments: [
    ("wifi", true), ("notifications.chat", true), ("airplane-mode", true), ("a1.b2-c3", true),
    ("", false), ("Wifi", false), ("1wifi", false), ("wifi.", false), ("wi..fi", false),
    ("wi-.fi", false), ("wi fi", false), ("wifi*", false),
    (String(repeating: "a", count: 128), true),
    (String(repeating: "a", count: 129), false),
  ])
  func keySyntax(_ key: String, _ valid: Bool) {
    #expect(SwitchKey.isValid(key) == valid)
    // The one-pass scan the request decoder uses says the same, up to a quote.
    let quoted = Array(key.utf8) + Array(#"","checked":true}"#.utf8)
    let length = quoted.withUnsafeBufferPointer {
      SwitchKey.validLength($0, endingAt: UInt8(ascii: "\""))
    }
    #expect(length == (valid ? key.utf8.count : nil))
  }

  @Test func theOnePassScanAgreesWithTheKeyGrammarOnRandomBytes() {
    // Bytes drawn mostly from the key alphabet, with quotes and others
    // mixed in: wherever the scan stops, it agrees with `isValid`.
    var generator = SystemRandomNumberGenerator()
    let alphabet = Array("abz09.-\"A _\u{7F}".utf8) + [0xC3, 0x00]
    for _ in 0..<20_000 {
      let count = Int.random(in: 0...12, using: &generator)
      let bytes = (0..<count).map { _ in alphabet.randomElement(using: &generator)! }
      let length = bytes.withUnsafeBufferPointer {
        SwitchKey.validLength($0, endingAt: UInt8(ascii: "\""))
      }
      guard let quote = bytes.firstIndex(of: UInt8(ascii: "\"")) else {
        #expect(length == nil)
        continue
      }
      let key = bytes[..<quote].withUnsafeBufferPointer { SwitchKey.isValid(bytes: $0) }
      #expect(length == (key ? quote : nil), "\(bytes)")
    }
  }

  @Test func patternsMatchExactKeysAndPrefixes() throws {
    let exact = try KeyPattern.parse("wifi").get()
    #expect(exact.matches("wifi") && !exact.matches("wifi.x"))
    let prefix = try KeyPattern.parse("notifications.*").get()
    #expect(prefix.matches("notifications.chat") && !prefix.matches("notifications"))
    #expect(try KeyPattern.parse("*").get().matches("anything"))
    #expect((try? KeyPattern.parse("no*pe*").get()) == nil)
    #expect((try? KeyPattern.parse("Bad").get()) == nil)
    // A prefix no key can begin with is a typo, refused as the exact key is.
    for typo in ["Bad*", "bad key*", "é*", "wifi..*", ".wifi*", "1wifi*"] {
      #expect((try? KeyPattern.parse(typo).get()) == nil, "\(typo)")
    }
    for fine in ["w*", "notifications.*", "a-*", "wifi*"] {
      #expect((try? KeyPattern.parse(fine).get()) != nil, "\(fine)")
    }
    let longest = String(repeating: "a", count: SwitchKey.maxBytes)
    #expect(try KeyPattern.parse(longest + "*").get().matches(longest))
    #expect((try? KeyPattern.parse(longest + "a*").get()) == nil)
  }

  /// `writable` says exactly whether this caller's `set` of the other value
  /// would be taken, and `writableReason` is the sentence it would be refused with.
  @Test(arguments: Kind.allCases)
  func writabilityAgreesWithWhatASetWouldDo(kind: Kind) {
    let (state, rule) = Self.state(kind)
    for caller in [Self.user, Self.reader, Self.admin, Self.user.acting(as: 1001)] {
      let decision = Rules.decide(
        .set(checked: !state.checked, ifRevision: nil), key: "wifi", definition: Self.definition,
        record: SwitchRecord(key: "wifi", state: state, revision: 1), policy: rule, caller: caller)
      let expected: Writability
      switch decision {
      case .success: expected = .writable
      case .failure(let refusal): expected = .refused(refusal)
      }
      let writability = Rules.writability(key: "wifi", state: state, policy: rule, caller: caller)
      #expect(writability == expected, "\(kind) \(caller.actor)")
      #expect((writability == .writable) == (writability.reason == nil))
    }
  }

  /// `readsPolicy` is what lets a caller skip the policy look-up: where it
  /// says no, `writability` and `policySource` answer the same with a rule
  /// (one that would fix, hold and disable the switch, with sources) as
  /// without one.
  @Test(arguments: Kind.allCases)
  func aPolicyIsReadOnlyWhereReadsPolicySays(_ kind: Kind) {
    let (state, _) = Self.state(kind)
    let rule = PolicyRule(
      key: "wifi", readOnly: true, disabled: true, checked: true, reason: "corp",
      readOnlySource: SourceLocation(file: "policy.d/a.conf", line: 1),
      disabledSource: SourceLocation(file: "policy.d/a.conf", line: 2))
    let held = state.heldBy == .policy || state.disabledBy == .policy
    #expect(Rules.readsPolicy(state) == held, "\(kind)")
    guard !Rules.readsPolicy(state) else { return }
    for caller in [Self.user, Self.reader, Self.admin] {
      #expect(
        Rules.writability(key: "wifi", state: state, policy: rule, caller: caller)
          == Rules.writability(key: "wifi", state: state, policy: nil, caller: caller),
        "\(kind)")
    }
    #expect(Rules.policySource(state: state, rule: rule) == nil, "\(kind)")
  }

  @Test func theReasonIsTheRefusalsSentence() {
    let (held, heldRule) = Self.state(.policyHeld)
    #expect(
      Rules.writability(key: "wifi", state: held, policy: heldRule, caller: Self.user).reason
        == "wifi is read-only: policy.")
    let (both, _) = Self.state(.heldAndDisabled)
    #expect(
      Rules.writability(key: "wifi", state: both, policy: nil, caller: Self.admin).reason
        == "wifi is disabled: disabled wins.")
    let free = SwitchState(checked: false)
    #expect(
      Rules.writability(key: "wifi", state: free, policy: nil, caller: Self.reader).reason
        == "You may not change wifi: \(WritersGroup.membersRequirement).")
    #expect(
      Rules.writability(key: "wifi", state: free, policy: nil, caller: Self.user).reason == nil)
  }
}
