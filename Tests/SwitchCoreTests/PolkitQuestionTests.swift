import Testing

@testable import SwitchCore

/// What polkit is asked under `Authorization=polkit` (docs/semantics.md
/// "polkit"): which calls ask, which actions in which order, the details,
/// and the rights a peer has before polkit answers.
@Suite struct PolkitQuestionTests {
  static let access = AccessRules(
    daemonUID: 998, adminGroup: 50, writers: .humanAccounts, authorization: .polkit)

  static func peer(_ uid: UInt32, groups: [UInt32] = []) -> Caller {
    Caller.peer(uid: uid, gid: uid, pid: 4242, groups: groups, access: access)
  }

  static let free = SwitchState(checked: true)

  static func question(
    _ operation: Operation, state: SwitchState = free, scope: Scope = .system,
    caller: Caller = peer(1000), current: Bool = true
  ) -> PolkitQuestion? {
    PolkitQuestion.changing(
      operation, key: "wifi", scope: scope, state: state, current: current, defaultChecked: false,
      caller: caller)
  }

  static func details(_ q: PolkitQuestion?) -> [String] {
    q?.details.map { "\($0.name)=\($0.value)" } ?? []
  }

  @Test func underPolkitOnlyRootAndTheDaemonsUIDHaveRightsBeforeAsking() {
    for owner: UInt32 in [0, 998] {
      let caller = Self.peer(owner)
      #expect(caller.isAdmin && caller.mayWrite && !caller.asksPolkit)
      #expect(Self.question(.toggle(ifRevision: nil), caller: caller) == nil)
      #expect(
        PolkitQuestion.administering(method: "lock", key: "wifi", checked: nil, caller: caller)
          == nil)
    }
    // The admin group and the human-account range decide nothing under polkit.
    let member = Self.peer(1000, groups: [50])
    #expect(!member.isAdmin && !member.mayWrite && member.asksPolkit)
    let builtin = Caller.peer(
      uid: 1000, gid: 1000, pid: 1, groups: [50],
      access: AccessRules(daemonUID: 998, adminGroup: 50))
    #expect(builtin.isAdmin && !builtin.asksPolkit)
  }

  @Test func aWriteOfASystemSwitchAsksWriteWithTheValueItWouldSet() {
    let set = Self.question(.set(checked: false, ifRevision: nil))
    #expect(set?.actions == [.write])
    #expect(Self.details(set) == ["key=wifi", "checked=false", "user=1000", "method=set"])
    #expect(set?.checked == false)
    #expect(Self.details(Self.question(.toggle(ifRevision: nil))).contains("checked=false"))
    #expect(
      Self.details(Self.question(.toggle(ifRevision: nil), current: false)).contains("checked=true")
    )
    #expect(Self.details(Self.question(.reset)).contains("checked=false"))  // the default
  }

  @Test func aReadOnlySwitchAsksAdministerFirstUnlessNothingCouldWriteIt() {
    let held = SwitchState(checked: true, readOnly: true, heldBy: .admin)
    #expect(Self.question(.toggle(ifRevision: nil), state: held)?.actions == [.administer, .write])
    // A fixed value or a disabled switch: nobody writes it; write decides
    // PermissionDenied before the rules say ReadOnly or Disabled.
    let fixed = SwitchState(checked: true, readOnly: true, heldBy: .policy, valueFixed: true)
    #expect(Self.question(.toggle(ifRevision: nil), state: fixed)?.actions == [.write])
    let disabled = SwitchState(checked: true, readOnly: true, disabled: true)
    #expect(Self.question(.toggle(ifRevision: nil), state: disabled)?.actions == [.write])
  }

  @Test func oneOwnValueAsksNothingAnotherUsersAsksAdminister() {
    #expect(Self.question(.toggle(ifRevision: nil), scope: .user) == nil)
    let other = Self.peer(1000).acting(as: 1001)
    let q = Self.question(.toggle(ifRevision: nil), scope: .user, caller: other)
    #expect(q?.actions == [.administer])
    #expect(Self.details(q).contains("user=1001"))
    // Naming oneself is not acting as another.
    #expect(
      Self.question(
        .toggle(ifRevision: nil), scope: .user, caller: Self.peer(1000).acting(as: 1000))
        == nil)
  }

  @Test func administratorsMethodsAskAdministerWithEveryDetail() {
    let q = PolkitQuestion.administering(
      method: "reload", key: nil, checked: nil, caller: Self.peer(1000),
      purpose: "reload switchd's configuration")
    #expect(q?.actions == [.administer])
    // A call that names no switch says what it is in the agent's prompt
    // (the action's message would read "administer switches ()").
    #expect(
      Self.details(q) == [
        "key=", "checked=", "user=1000", "method=reload",
        "polkit.message=Authentication is required to reload switchd's configuration.",
      ])
    // These calls set no value: the grant is not bound to one.
    #expect(q?.checked == nil)
    let lock = Self.question(.lock(reason: nil, checked: false))
    #expect(lock?.actions == [.administer])
    // One that names a switch keeps the action's message, which names it.
    #expect(Self.details(lock).count == 4)
    let backup = PolkitQuestion.administering(
      method: "backup", key: nil, checked: nil, caller: Self.peer(1000),
      purpose: "back up switchd's database")
    #expect(
      Self.details(backup).last
        == "polkit.message=Authentication is required to back up switchd's database.")
  }

  @Test func aReadAsAnotherUserAsksAdministerOneOfOnesOwnNothing() {
    let caller = Self.peer(1000)
    let other = PolkitQuestion.reading(
      method: "get", key: "notes", named: .user(1001), caller: caller)
    #expect(other?.actions == [.administer])
    #expect(
      Self.details(other) == [
        "key=notes", "checked=", "user=1001", "method=get",
        "polkit.message=Authentication is required to read user 1001's value of the switch notes.",
      ])
    let everyone = PolkitQuestion.reading(
      method: "watch", key: nil, named: .everyone, caller: caller)
    #expect(
      Self.details(everyone) == [
        "key=", "checked=", "user=*", "method=watch",
        "polkit.message=Authentication is required to read every user's switches.",
      ])
    for named: Viewpoint? in [nil, .user(1000)] {
      #expect(PolkitQuestion.reading(method: "list", key: nil, named: named, caller: caller) == nil)
    }
    #expect(
      PolkitQuestion.reading(method: "get", key: nil, named: .everyone, caller: Self.peer(0))
        == nil)
  }

  @Test func aGrantIsForTheCallItWasAskedFor() {
    let asking = Self.peer(1000)
    let writer = asking.granted(.write)
    #expect(writer.mayWrite && !writer.isAdmin && !writer.asksPolkit)
    let admin = asking.granted(.administer)
    #expect(admin.mayWrite && admin.isAdmin)
    #expect(asking.asksPolkit && !asking.mayWrite)  // the connection's own rights are unchanged
  }

  @Test func aGrantForOneValueNeverGivesTheOther() {
    // Asked while wifi was on (toggle → off), granted after someone turned
    // it off: the toggle would turn it on, which polkit never authorized.
    let granted = Self.peer(1000).granted(.write, checked: false)
    let definition = SwitchDefinition(key: "wifi", label: "Wi-Fi", defaultChecked: true)
    let nowOff = SwitchRecord(key: "wifi", state: SwitchState(checked: false), revision: 2)
    let toggled = Rules.decide(
      .toggle(ifRevision: nil), key: "wifi", definition: definition, record: nowOff, policy: nil,
      caller: granted)
    guard case .failure(.permissionDenied(_, _, let why)) = toggled else {
      Issue.record("a toggle to the value polkit did not authorize went through: \(toggled)")
      return
    }
    #expect(why.contains("polkit authorized turning it off"))
    let nowOn = SwitchRecord(key: "wifi", state: SwitchState(checked: true), revision: 3)
    guard
      case .success = Rules.decide(
        .toggle(ifRevision: nil), key: "wifi", definition: definition, record: nowOn,
        policy: nil, caller: granted)
    else {
      Issue.record("the authorized toggle was refused")
      return
    }
  }

  @Test func readsSayWhatTheHoldsAllowNotWhatPolkitWouldAnswer() {
    let caller = Self.peer(1000)
    #expect(
      Rules.writability(key: "wifi", state: Self.free, policy: nil, caller: caller) == .writable)
    let held = SwitchState(checked: true, readOnly: true, heldBy: .admin)
    guard
      case .refused(.readOnly) = Rules.writability(
        key: "wifi", state: held, policy: nil, caller: caller)
    else {
      Issue.record("a held switch must read as read-only")
      return
    }
  }
}
