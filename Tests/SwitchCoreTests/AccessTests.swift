import Testing

@testable import SwitchCore

/// Who administers, who writes system switches, and who sees whose actor:
/// the table "Who may do what" of docs/semantics.md, decided by `Caller.peer`.
@Suite struct AccessTests {
  /// A daemon run by uid 1500, admin group 40, no Writers group, Debian's range.
  static let rules = AccessRules(daemonUID: 1500, adminGroup: 40)

  static func peer(
    _ uid: UInt32, gid: UInt32? = nil, groups: [UInt32] = [], _ access: AccessRules = rules
  ) -> Caller {
    Caller.peer(uid: uid, gid: gid ?? uid, pid: 9, groups: groups, access: access)
  }

  @Test func rootTheDaemonsOwnUidAndAdminGroupMembersAdminister() {
    for admin in [
      Self.peer(0), Self.peer(1500), Self.peer(33, groups: [40]), Self.peer(65534, gid: 40),
    ] {
      #expect(admin.isAdmin && admin.mayWrite, "\(admin.actor)")
    }
    let daemonRunByRoot = AccessRules(daemonUID: 0)
    #expect(!Self.peer(1500, daemonRunByRoot).isAdmin)
    #expect(!Self.peer(1000).isAdmin)
  }

  @Test func withoutWritersOnlyHumanAccountsWriteSystemSwitches() {
    for uid: UInt32 in [1000, 1001, 60000] {
      let human = Self.peer(uid)
      #expect(human.mayWrite && !human.isAdmin, "uid \(uid)")
    }
    for uid: UInt32 in [1, 33, 999, 60001, 65534] {
      let system = Self.peer(uid)
      #expect(!system.mayWrite, "uid \(uid)")
      #expect(
        system.writeRequirement
          == "only human accounts (uid 1000–60000) and administrators may change system switches")
    }
  }

  @Test func anotherLoginDefsRangeMovesTheLine() {
    var rules = Self.rules
    rules.humanUIDs = LoginDefs.humanUIDs(Array("UID_MIN 500\nUID_MAX 999\n".utf8))
    #expect(Self.peer(500, rules).mayWrite && Self.peer(999, rules).mayWrite)
    #expect(!Self.peer(1000, rules).mayWrite && !Self.peer(499, rules).mayWrite)
    #expect(Self.peer(1000, rules).writeRequirement.contains("(uid 500–999)"))
  }

  @Test func aWritersGroupDecidesInsteadOfTheRange() {
    var rules = Self.rules
    rules.writers = .members(50, name: "staff")
    #expect(Self.peer(33, groups: [50], rules).mayWrite)  // a system account, but a member
    #expect(Self.peer(7, gid: 50, rules).mayWrite)  // primary group
    let human = Self.peer(1000, rules)
    #expect(!human.mayWrite)
    #expect(human.writeRequirement == "only members of the group staff may change system switches")
    #expect(Self.peer(1500, rules).mayWrite && Self.peer(0, rules).mayWrite)
    // A Writers group that does not exist restricts to administrators.
    rules.writers = WritersGroup.resolve("no-such-group") { _ in nil }
    #expect(rules.writers == .missing(name: "no-such-group") && rules.writers.warning != nil)
    #expect(!Self.peer(1000, rules).mayWrite && !Self.peer(7, groups: [50], rules).mayWrite)
    #expect(
      Self.peer(1000, rules).writeRequirement == "only administrators may change system switches")
    #expect(Self.peer(7, groups: [40], rules).mayWrite)
    #expect(WritersGroup.resolve(nil) { _ in 1 } == .humanAccounts)
    #expect(WritersGroup.resolve("") { _ in 1 } == .humanAccounts)
    #expect(WritersGroup.resolve("staff") { _ in 50 } == .members(50, name: "staff"))
  }

  /// A user named by a watch, not connected: rights by the members the
  /// rules keep (primary group or listed), decided as for a peer.
  @Test func aNamedUsersRightsComeFromTheKeptMembers() {
    var rules = Self.rules
    rules.writers = .members(50, name: "staff")
    rules.members = [40: [33], 50: [7, 1001]]
    #expect(rules.groupsWithRights == [40, 50])
    let admin = Caller.user(33, access: rules)
    #expect(admin.isAdmin && admin.mayWrite && admin.uid == 33)
    let writer = Caller.user(1001, access: rules)
    #expect(!writer.isAdmin && writer.mayWrite)
    let outsider = Caller.user(1000, access: rules)
    #expect(!outsider.isAdmin && !outsider.mayWrite)
    #expect(outsider.writeRequirement == Self.peer(1000, rules).writeRequirement)
    #expect(Caller.user(0, access: rules).isAdmin && Caller.user(1500, access: rules).isAdmin)
    // Without Writers= it is the uid range, as for a peer.
    #expect(Caller.user(1000, access: Self.rules).mayWrite)
    #expect(!Caller.user(33, access: AccessRules(daemonUID: 0)).mayWrite)
  }

  @Test func theRefusalAndWritableFollowFromTheSameRule() {
    let system = Self.peer(33)
    let decision = Rules.decide(
      .toggle(ifRevision: nil), key: "wifi",
      definition: SwitchDefinition(key: "wifi", label: "Wi-Fi", defaultChecked: false),
      record: SwitchRecord(key: "wifi", state: SwitchState(checked: false)), policy: nil,
      caller: system)
    guard case .failure(let refusal) = decision else {
      Issue.record("a system account toggled a system switch")
      return
    }
    #expect(
      refusal.message
        == "You may not change wifi: only human accounts (uid 1000–60000) and administrators "
        + "may change system switches.")
    let free = SwitchState(checked: false)
    #expect(
      Rules.writability(key: "wifi", state: free, policy: nil, caller: system)
        == .refused(refusal))
    #expect(
      Rules.writability(key: "wifi", state: free, policy: nil, caller: Self.peer(1000))
        == .writable)
  }

  @Test func actorsOfOtherUsersAreHiddenFromNonAdministrators() {
    let mine = Actor.peer(uid: 1000, gid: 1000, pid: 4)
    let theirs = Actor.peer(uid: 1001, gid: 1001, pid: 5)
    let user = Self.peer(1000)
    #expect(user.seesActor(mine))  // another process of the same uid included
    #expect(!user.seesActor(theirs))
    #expect(user.seesActor(.policy))
    #expect(!Self.peer(33).seesActor(mine))
    for admin in [Self.peer(0), Self.peer(1500), Self.peer(33, groups: [40])] {
      #expect(admin.seesActor(mine) && admin.seesActor(theirs))
    }
  }
}

/// `/etc/login.defs`, as shadow's `getdef` reads UID_MIN and UID_MAX.
@Suite struct LoginDefsTests {
  static func range(_ text: String) -> ClosedRange<UInt32> {
    LoginDefs.humanUIDs(Array(text.utf8))
  }

  @Test func readsTheValuesBetweenCommentsAndWhiteSpace() {
    let debian = """
      # /etc/login.defs - Configuration control definitions for the login package.
      #
      MAIL_DIR        /var/mail
      #UID_MIN 10
      UID_MIN\t\t\t 2000
      UID_MAX\t\t\t50000\r
      #SYS_UID_MIN\t\t  100
      SUB_UID_MIN\t\t   100000
      """
    #expect(Self.range(debian) == 2000...50000)
    #expect(Self.range("  UID_MIN   3000  \nUID_MAX 4000") == 3000...4000)
    #expect(Self.range("UID_MIN 10\nUID_MIN 20\nUID_MAX 30") == 20...30)  // the last wins
  }

  @Test func acceptsQuotedOctalAndHexadecimalValues() {
    #expect(Self.range("UID_MIN \"1200\"\nUID_MAX 0x1000") == 1200...4096)
    #expect(Self.range("UID_MIN 01750\nUID_MAX 60000") == 1000...60000)
  }

  @Test func missingValuesTakeTheirDefaults() {
    #expect(LoginDefs.humanUIDs(nil) == 1000...60000)
    #expect(Self.range("") == 1000...60000)
    #expect(Self.range("UID_MIN 500\n") == 500...60000)
    #expect(Self.range("UID_MAX 30000") == 1000...30000)
    #expect(Self.range("UID_MIN\nUID_MAX") == 1000...60000)
  }

  @Test func garbageIsIgnored() {
    #expect(Self.range("UID_MIN lots\nUID_MAX 9x") == 1000...60000)
    #expect(Self.range("UID_MIN -5\nUID_MAX 99999999999") == 1000...60000)
    #expect(Self.range("UID_MIN 0x\nUID_MAX 09") == 1000...60000)
    #expect(Self.range("UID_MIN=2000") == 1000...60000)
    #expect(LoginDefs.humanUIDs([0xFF, 0xFE, 0x0A, 0x00]) == 1000...60000)
    // A minimum above the maximum is a broken file: not trusted at all.
    #expect(Self.range("UID_MIN 7000\nUID_MAX 6000") == 1000...60000)
  }
}
