import Glibc
import SwitchProtocol
import SwitchSystem
import SwitchTestSupport
import Testing

/// `writable` on every Switch, computed for the caller of the call that
/// returned it (in a watch snapshot, for the watch's user), so that a
/// settings page greys out what this person cannot switch, and
/// `writableReason`, the sentence a write would be refused with, so that it
/// can say why.
@Suite struct WritableEndToEndTests {
  /// Held without a fixed value (an administrator may still set it), held
  /// with one (nobody may), disabled, and a free switch.
  static let policy = """
    [wifi]
    ReadOnly=yes
    Reason=Managed.

    [bluetooth]
    ReadOnly=yes
    Checked=off
    Reason=Fixed off.

    [email.marketing]
    Disabled=yes
    Reason=Not offered.
    """

  /// `key → writable` from a list of Switch objects.
  static func writable(_ switches: JSONValue?) -> [String: Bool] {
    var found: [String: Bool] = [:]
    for s in switches?.arrayValue ?? [] {
      if let key = s["key"]?.stringValue { found[key] = s["writable"]?.boolValue }
    }
    return found
  }

  static let forAdministrator: [String: Bool] = [
    "wifi": true, "bluetooth": false, "email.marketing": false, "notifications.chat": true,
    "notifications.mail": true,
  ]
  static let forUser: [String: Bool] = [
    "wifi": false, "bluetooth": false, "email.marketing": false, "notifications.chat": true,
    "notifications.mail": true,
  ]
  /// Not in the Writers group: nothing, whatever its state.
  static let forNonWriter: [String: Bool] = [
    "wifi": false, "bluetooth": false, "email.marketing": false, "notifications.chat": false,
    "notifications.mail": false,
  ]

  @Test func getListAndWatchSayWhatThisCallerMaySwitch() throws {
    // Writers: members of group 0; the human account is one, nobody is not.
    let daemon = try DaemonFixture(
      policies: ["50-test.conf": Self.policy], daemonConf: "[Daemon]\nAdminGroup=\nWriters=root\n")
    let human = try UserRelay(daemon, uid: 1000, gid: 1000, groups: [0])
    let system = try UserRelay(daemon, uid: systemUID)
    let cases: [(RPCClient, [String: Bool])] = [
      (try daemon.client(), Self.forAdministrator), (try human.client(), Self.forUser),
      (try system.client(), Self.forNonWriter),
    ]
    for (who, (client, expected)) in zip(["root", "uid 1000", "nobody"], cases) {
      #expect(Self.writable(try client.result("list")["switches"]) == expected, "\(who)")
      #expect(Self.writable(try client.result("watch")["switches"]) == expected, "\(who)")
      for (key, writable) in expected {
        let s = try client.result("get", #"{"key":"\#(key)"}"#)
        #expect(s["writable"]?.boolValue == writable, "\(who) \(key)")
      }
    }
  }

  /// `key → writableReason` (nil for JSON null) from a list of Switch objects.
  static func reasons(_ switches: JSONValue?) -> [String: String?] {
    var found: [String: String?] = [:]
    for s in switches?.arrayValue ?? [] {
      if let key = s["key"]?.stringValue { found[key] = s["writableReason"]?.stringValue }
    }
    return found
  }

  /// The standard schema and a user-scope switch that the policy holds
  /// without fixing its value: its users may not change it, administrators may.
  static let switchesWithAUserScopeOne =
    DaemonFixture.standardSwitches + "\n[theme.dark]\nLabel=Dark theme\nScope=user\n"
  static let policyWithAUserScopeHold =
    policy + "\n\n[theme.dark]\nReadOnly=yes\nReason=Chosen by IT.\n"

  @Test(.needsRoot("it creates users and groups (useradd, groupadd) and relays as other uids"))
  func aWatchNamingAUserSaysWhatThatUserMaySwitchAndWhy() throws {
    let writers = try switchdTestGroup("switchd-test-writable")
    let outsider = try switchdTestUser("switchd-test-woutsider")
    let listed = try switchdTestUser("switchd-test-wlisted", groups: [writers])
    let primary = try switchdTestUser("switchd-test-wprimary", primaryGroup: writers)
    let daemon = try DaemonFixture(
      switches: Self.switchesWithAUserScopeOne,
      policies: ["50-test.conf": Self.policyWithAUserScopeHold],
      daemonConf: "[Daemon]\nAdminGroup=\nWriters=switchd-test-writable\n")
    let root = try daemon.client()
    func snapshot(_ uid: UInt32) throws -> JSONValue? {
      try root.result("watch", #"{"user":\#(uid)}"#)["switches"]
    }
    let userScope = ["theme.dark": false]
    // A member by the group's list or by its primary group: a writer, no administrator.
    for member in [listed, primary] {
      #expect(
        Self.writable(try snapshot(member)) == Self.forUser.merging(userScope) { $1 },
        "uid \(member)")
    }
    let outsiderSees = try snapshot(outsider)
    #expect(Self.writable(outsiderSees) == Self.forNonWriter.merging(userScope) { $1 })
    // Root's own watch is root's: the holder may set what is held without a fixed value.
    #expect(Self.writable(try root.result("watch")["switches"])["theme.dark"] == true)

    // Each reason is the sentence that user's own write is refused with.
    let relay = try UserRelay(daemon, uid: outsider, gid: 65534)
    let outsiderClient = try relay.client()
    let reasons = Self.reasons(outsiderSees)
    for key in Self.forNonWriter.keys.sorted() + ["theme.dark"] {
      let refused = try outsiderClient.error("toggle", keyParam(key))
      #expect(reasons[key] == .some(refused["message"]?.stringValue), "\(key)")
    }
    #expect(
      reasons["notifications.chat"]
        == "You may not change notifications.chat: only members of the group "
        + "switchd-test-writable may change system switches.")
    #expect(reasons["theme.dark"] == "theme.dark is read-only: Chosen by IT.")
    let memberRelay = try UserRelay(daemon, uid: listed, gid: 65534, groups: [writers])
    let member = try memberRelay.client()
    let memberReasons = Self.reasons(try snapshot(listed))
    for key in ["wifi", "bluetooth", "email.marketing"] {
      let refused = try member.error("set", #"{"key":"\#(key)","checked":true}"#)
      #expect(memberReasons[key] == .some(refused["message"]?.stringValue), "\(key)")
    }
    #expect(memberReasons["notifications.chat"] == .some(nil))

    // Membership is read again at reload.
    _ = SystemAccounts.change([
      "/usr/sbin/usermod", "--groups", "\(writers)", "switchd-test-woutsider",
    ])
    _ = try root.result("reload")
    #expect(Self.writable(try snapshot(outsider))["notifications.chat"] == true)
  }

  @Test func aWritesAnswerAndAConflictCarryItToo() throws {
    let daemon = try DaemonFixture()
    let relay = try UserRelay(daemon, uid: 1000, gid: 1000)
    let human = try relay.client()
    let answer = try human.result("set", #"{"key":"wifi","checked":false}"#)
    #expect(answer["switch"]?["writable"]?.boolValue == true)
    _ = try daemon.client().result("lock", #"{"key":"wifi"}"#)
    let conflict = try human.error("toggle", #"{"key":"notifications.chat","ifRevision":7}"#)
    #expect(conflict["data"]?["switch"]?["writable"]?.boolValue == true)
    #expect(try human.result("get", #"{"key":"wifi"}"#)["writable"]?.boolValue == false)
    let root = try daemon.client().result("set", #"{"key":"wifi","checked":true}"#)
    #expect(root["switch"]?["writable"]?.boolValue == true)  // the holder may still set it
  }
}

/// The uid of the system user `name`, created (`useradd`) when missing, with
/// `primaryGroup` (nogroup unless told) and exactly `groups` as its
/// supplementary groups either way. For tests that need a user in the user
/// database, not only a process with its ids; names are prefixed `switchd-test-`.
func switchdTestUser(
  _ name: String, primaryGroup: UInt32 = 65534, groups: [UInt32] = []
) throws -> UInt32 {
  let supplementary = groups.map(String.init).joined(separator: ",")
  for _ in 0..<20 {
    if UserDatabase.uid(named: name) == nil {
      _ = SystemAccounts.change([
        "/usr/sbin/useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin",
        "--no-user-group", "--gid", "\(primaryGroup)", name,
      ])
    }
    // Like groupadd, these lock /etc/passwd and /etc/group; a concurrent one may fail: retry.
    let set = SystemAccounts.change([
      "/usr/sbin/usermod", "--gid", "\(primaryGroup)", "--groups", supplementary, name,
    ])
    if set.status == 0, let uid = UserDatabase.uid(named: name) { return uid }
    usleep(100_000)
  }
  throw FixtureError("cannot create the user \(name)")
}
