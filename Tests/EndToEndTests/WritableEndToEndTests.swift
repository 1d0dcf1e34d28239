import SwitchProtocol
import Testing

/// `writable` on every Switch, computed for the caller of the call that
/// returned it (in a watch snapshot, for the watch's caller), so that a
/// settings page greys out what this person cannot switch.
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
