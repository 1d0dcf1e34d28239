import Glibc
import SwitchProtocol
import SwitchTestSupport
import Testing

/// Issue 12, items 6 and 7 from the outside, as several uids through
/// `UserRelay`s: who may change system switches (and sees so before trying),
/// who administers a daemon, whose actors a caller sees, and the
/// per-user connection limit.
@Suite struct AccessEndToEndTests {
  /// Another human account than `humanUID`.
  static let otherHumanUID = humanUID + 1

  static func actorIDs(_ change: JSONValue?) -> [Int64?] {
    ["uid", "gid", "pid"].map { change?["actor"]?[$0]?.int64Value }
  }

  @Test(.needsRoot("relays drop to a system account and a human account"))
  func systemAccountsAreRefusedSystemSwitchesAndSeeItBeforeTrying() throws {
    let daemon = try DaemonFixture()
    for uid: UInt32 in [systemUID, 33] {  // nobody and www-data
      let systemRelay = try UserRelay(daemon, uid: uid)
      let system = try systemRelay.client()
      let caller = try system.result("status")["caller"]
      #expect(caller?["administrator"]?.boolValue == false, "uid \(uid)")
      #expect(caller?["writesSystemSwitches"]?.boolValue == false, "uid \(uid)")
      #expect(try system.result("get", keyParam("wifi"))["writable"]?.boolValue == false)
      let listed = try system.result("list")["switches"]?.arrayValue ?? []
      #expect(!listed.isEmpty && listed.allSatisfy { $0["writable"]?.boolValue == false })
      for (method, params) in [
        ("toggle", keyParam("wifi")), ("set", #"{"key":"wifi","checked":false}"#),
        ("reset", keyParam("bluetooth")),
      ] {
        let error = try system.error(method, params)
        expectErrorObject(error, -32004, "PermissionDenied", key: nil, "uid \(uid) \(method)")
        #expect(
          error["message"]?.stringValue?.contains(
            "only human accounts (uid \(humanUID)–") == true, "\(error.jsonText)")
      }
    }
    let humanRelay = try UserRelay(daemon)
    let human = try humanRelay.client()
    let caller = try human.result("status")["caller"]
    #expect(caller?["administrator"]?.boolValue == false)
    #expect(caller?["writesSystemSwitches"]?.boolValue == true)
    #expect(try human.result("get", keyParam("wifi"))["writable"]?.boolValue == true)
    let toggled = try human.result("toggle", keyParam("wifi"))
    #expect(toggled["changed"]?.boolValue == true)
    #expect(toggled["switch"]?["writable"]?.boolValue == true)
    expectErrorObject(try human.error("lock", keyParam("wifi")), -32004, "PermissionDenied")
    // Only the human's toggle changed anything.
    #expect(try daemon.client().result("status")["revision"]?.int64Value == 1)
  }

  @Test(.needsRoot("switchd runs as a human account through setpriv; relays as others"))
  func theDaemonsOwnUidAdministersIt() throws {
    let owner = humanUID + 7
    let daemon = try DaemonFixture(start: false)
    #expect(runProcess(["/bin/chown", "-R", "\(owner):\(owner)", daemon.directory]).status == 0)
    try daemon.launch(
      through: ["/usr/bin/setpriv", "--reuid=\(owner)", "--regid=\(owner)", "--clear-groups"])
    try daemon.waitUntilServing()

    let ownerClientRelay = try UserRelay(daemon, uid: owner)
    let ownerClient = try ownerClientRelay.client()
    let caller = try ownerClient.result("status")["caller"]
    #expect(caller?["uid"]?.int64Value == Int64(owner))
    #expect(caller?["administrator"]?.boolValue == true)
    #expect(caller?["writesSystemSwitches"]?.boolValue == true)
    #expect(try ownerClient.result("lock", keyParam("wifi"))["changed"]?.boolValue == true)
    // The holder may set what it holds; writable says so.
    #expect(try ownerClient.result("get", keyParam("wifi"))["writable"]?.boolValue == true)

    let someoneElseRelay = try UserRelay(daemon)
    let someoneElse = try someoneElseRelay.client()
    #expect(try someoneElse.result("status")["caller"]?["administrator"]?.boolValue == false)
    let denied = try someoneElse.error("unlock", keyParam("wifi"))
    expectErrorObject(denied, -32004, "PermissionDenied")
    #expect(
      denied["message"]?.stringValue?.contains("uid \(owner) (switchd's own)") == true,
      "\(denied.jsonText)")
    #expect(try someoneElse.result("get", keyParam("wifi"))["writable"]?.boolValue == false)
    // Root administers every daemon.
    #expect(try daemon.client().result("unlock", keyParam("wifi"))["changed"]?.boolValue == true)
  }

  @Test(.needsRoot("relays drop to two human accounts and a system account"))
  func otherUsersActorsAreHiddenInEventsHistoryAndReplays() throws {
    let daemon = try DaemonFixture()
    let root = try daemon.client()
    let actorRelay = try UserRelay(daemon)
    let actor = try actorRelay.client()
    let otherRelay = try UserRelay(daemon, uid: Self.otherHumanUID)
    let other = try otherRelay.client()
    let systemRelay = try UserRelay(daemon, uid: systemUID)
    let system = try systemRelay.client()
    let watches = try [root, actor, other, system].map {
      try $0.result("watch")["watch"]?.stringValue
    }

    #expect(try actor.result("toggle", keyParam("wifi"))["changed"]?.boolValue == true)
    let shown: [Int64?] = [Int64(humanUID), Int64(humanUID), Int64(actorRelay.pid)]
    let hidden: [Int64?] = [nil, nil, nil]
    let hiddenActor = JSONValue.object([
      JSONMember("uid", .null), JSONMember("gid", .null), JSONMember("pid", .null),
    ])
    for (who, client, expected) in [
      ("root", root, shown), ("the actor", actor, shown), ("another user", other, hidden),
      ("a system account", system, hidden),
    ] {
      let events = try client.eventsUntilNow()
      #expect(events.count == 1, "\(who)")
      #expect(events.map { Self.actorIDs($0) } == [expected], "\(who)")
      if expected == hidden { #expect(events.first?["actor"] == hiddenActor, "\(who)") }
      // The rest of the event is everyone's.
      #expect(events.first?["state"]?["checked"]?.boolValue == false, "\(who)")

      let history = try client.result("history", keyParam("wifi"))["entries"]?.arrayValue ?? []
      #expect(history.map { Self.actorIDs($0) } == [expected], "history for \(who)")

      _ = try client.result("watch", #"{"keys":["wifi"],"since":0}"#)
      let replayed = try client.nextEvent()
      #expect(replayed["revision"]?.int64Value == 1, "\(who)")
      #expect(Self.actorIDs(replayed) == expected, "replay for \(who)")
    }

    // Root's own change is another user's change for a plain user; a
    // policy's actor stays marked as one for everyone.
    _ = try root.result("toggle", keyParam("bluetooth"))
    try daemon.writeFile("policy.d/50-test.conf", "[wifi]\nReadOnly=yes\n")
    _ = try root.result("reload")
    let events = try actor.eventsUntilNow().filter { $0["watch"]?.stringValue == watches[1] }
    #expect(events.compactMap { $0["key"]?.stringValue } == ["bluetooth", "wifi"])
    if events.count == 2 {
      #expect(Self.actorIDs(events[0]) == hidden)
      #expect(events[1]["actor"]?["source"]?.stringValue == "policy")
    }
    let rootEvents = try root.eventsUntilNow().filter { $0["watch"]?.stringValue == watches[0] }
    #expect(rootEvents.first.map { Self.actorIDs($0)[0] } == 0)  // bluetooth, by root
  }

  @Test(.needsRoot("relays drop to two human accounts"))
  func maxConnectionsPerUserRefusesTheNextConnectionOfThatUidOnly() throws {
    let daemon = try DaemonFixture(daemonConf: "[Daemon]\nAdminGroup=\nMaxConnectionsPerUser=2\n")
    let relay = try UserRelay(daemon)
    let first = try relay.client()
    let second = try relay.client()
    for client in [first, second] { _ = try client.result("status") }

    let third = try relay.client()
    let refusal = try third.readJSON()
    expectErrorObject(refusal["error"] ?? .null, -32008, "Overloaded")
    #expect(
      refusal["error"]?["message"]?.stringValue?.contains(
        "too many connections for uid \(humanUID) (MaxConnectionsPerUser=2)") == true,
      "\(refusal.jsonText)")
    #expect(third.readLine() == nil)  // and closed

    // Another user is not crowded out, and administrators are exempt.
    let otherRelay = try UserRelay(daemon, uid: Self.otherHumanUID)
    let other = try otherRelay.client()
    #expect(try other.result("status")["caller"]?["uid"]?.int64Value == Int64(Self.otherHumanUID))
    let roots = try (0..<4).map { _ in try daemon.client() }
    for client in roots { _ = try client.result("status") }
    let all = try pollUntil { try roots[0].result("status")["connections"]?.int64Value == 7 }
    #expect(all, "two of one user, one of another, four of root")

    // A closed connection frees its place.
    first.close()
    let freed = try pollUntil(seconds: 30) {
      let next = try relay.client()
      return (try? next.result("status"))?["caller"] != nil
    }
    #expect(freed)
  }
}
