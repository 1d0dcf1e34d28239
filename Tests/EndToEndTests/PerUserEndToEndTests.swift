import Glibc
import SwitchProtocol
import SwitchTestSupport
import Testing

/// Per-user switches (docs/semantics.md rules 11–13) with the real daemon,
/// root and two unprivileged uids that need not exist in /etc/passwd.
@Suite(.serialized, .needsRoot("connects as several uids with setpriv"))
struct PerUserEndToEndTests {
  static let alice: UInt32 = 1000
  static let bob: UInt32 = 1001

  static let switches = """
    [wifi]
    Label=Wi-Fi
    Default=on

    [email.marketing]
    Label=Marketing emails
    Default=on
    Scope=user

    [notifications.chat]
    Label=Chat notifications
    Default=off
    Scope=user
    """

  static func fixture(policies: [String: String] = [:]) throws -> DaemonFixture {
    try DaemonFixture(switches: switches, policies: policies)
  }

  @Test func eachUserReadsAndWritesTheirOwnValueOrTheDefault() throws {
    let daemon = try Self.fixture()
    let alice = try daemon.client(asUser: Self.alice)
    let bob = try daemon.client(asUser: Self.bob)
    let root = try daemon.client()
    let set = try alice.result("set", #"{"key":"email.marketing","checked":false}"#)
    #expect(set["changed"] == .bool(true))
    #expect(set["switch"]?["user"] == .int(1000))
    #expect(set["switch"]?["scope"]?.stringValue == "user")
    let revision = try #require(set["switch"]?["revision"]?.int64Value)

    #expect(try alice.result("get", #"{"key":"email.marketing"}"#).checked == false)
    let bobs = try bob.result("get", #"{"key":"email.marketing"}"#)
    #expect(bobs.checked == true)
    #expect(bobs["user"] == .int(1001))
    #expect(bobs["revision"] == .int(0))
    #expect(bobs["changedAt"] == .null)
    #expect(try root.result("get", #"{"key":"email.marketing"}"#).checked == true)
    // A system switch: one value, `user` null, whoever asks.
    let wifi = try bob.result("get", #"{"key":"wifi"}"#)
    #expect(wifi["scope"]?.stringValue == "system" && wifi["user"] == .null)

    // list, as each user sees it.
    func listed(_ client: RPCClient, _ params: String = "{}") throws -> [String: Bool] {
      var values: [String: Bool] = [:]
      for item in try client.result("list", params)["switches"]?.arrayValue ?? [] {
        values[item["key"]?.stringValue ?? ""] = item.checked
      }
      return values
    }
    #expect(try listed(alice)["email.marketing"] == false)
    #expect(try listed(bob)["email.marketing"] == true)

    // An administrator acts as any user; nobody else names another user.
    let asAlice = try root.result("get", #"{"key":"email.marketing","user":1000}"#)
    #expect(asAlice.checked == false && asAlice["revision"]?.int64Value == revision)
    #expect(try listed(root, #"{"user":1000}"#)["email.marketing"] == false)
    #expect(
      try bob.error("get", #"{"key":"email.marketing","user":1000}"#)["data"]?["name"]
        == .string("PermissionDenied"))
    #expect(
      try bob.error("list", #"{"user":1000}"#)["data"]?["name"] == .string("PermissionDenied"))
    #expect(try bob.result("get", #"{"key":"email.marketing","user":1001}"#).checked == true)
    #expect(
      try root.error("get", #"{"key":"email.marketing","user":"*"}"#)["data"]?["name"]
        == .string("InvalidParams"))
    // UnknownSwitch comes before naming another user.
    #expect(
      try bob.error("get", #"{"key":"nope","user":1000}"#)["data"]?["name"]
        == .string("UnknownSwitch"))
    // Setting what Bob reads changes nothing; setting another value is his own.
    let same = try root.result("set", #"{"key":"email.marketing","checked":true,"user":1001}"#)
    #expect(same["changed"] == .bool(false))
    let byRoot = try root.result("set", #"{"key":"email.marketing","checked":false,"user":1001}"#)
    #expect(byRoot["changed"] == .bool(true) && byRoot["switch"]?["user"] == .int(1001))
    #expect(try bob.result("get", #"{"key":"email.marketing"}"#).checked == false)
    #expect(
      try bob.error("set", #"{"key":"email.marketing","checked":true,"user":1000}"#)["data"]?[
        "name"] == .string("PermissionDenied"))
    // Root's own value did not change.
    #expect(try root.result("get", #"{"key":"email.marketing"}"#).checked == true)
    // A system account writes its own value, though it may not write system switches.
    let nobody = try daemon.client(asUser: 65534)
    #expect(
      try nobody.result("toggle", #"{"key":"notifications.chat"}"#)["switch"]?.checked == true)
    #expect(
      try nobody.error("toggle", #"{"key":"wifi"}"#)["data"]?["name"]
        == .string("PermissionDenied"))
  }

  @Test func nobodySeesAnotherUsersValueInWatchesReplaysOrHistory() throws {
    let daemon = try Self.fixture()
    let alice = try daemon.client(asUser: Self.alice)
    let bob = try daemon.client(asUser: Self.bob)
    let root = try daemon.client()
    let bobWatch = try bob.result("watch", #"{"keys":["email.*"]}"#)
    let start = try #require(bobWatch["revision"]?.int64Value)
    let everyone = try root.result("watch", #"{"user":"*"}"#)
    #expect(everyone["switches"]?.arrayValue?.allSatisfy { $0["user"] == .null } == true)

    _ = try alice.result("set", #"{"key":"email.marketing","checked":false}"#)
    _ = try bob.result("set", #"{"key":"email.marketing","checked":false}"#)
    // Bob's first event is his own change: Alice's was never sent to him.
    let first = try bob.nextEvent()
    #expect(first["user"] == .int(1001) && first["revision"]?.int64Value == start + 2)
    #expect(first["actor"]?["uid"] == .int(1001))
    // Every user's watch gets both, each with its user.
    let a = try root.nextEvent()
    let b = try root.nextEvent()
    #expect(a["user"] == .int(1000) && b["user"] == .int(1001))

    // A replay from `since` shows Bob what his watch would have shown.
    let replaying = try daemon.client(asUser: Self.bob)
    _ = try replaying.result("watch", "{\"since\":\(start)}")
    let replayed = try replaying.nextEvent()
    #expect(replayed["revision"]?.int64Value == start + 2)
    #expect(replayed["user"] == .int(1001))

    // History: Bob's own rows, never Alice's; an administrator's "*" sees both.
    let history = try bob.result("history", "{}")["entries"]?.arrayValue ?? []
    #expect(history.map { $0["user"] } == [.int(1001)])
    let keyHistory =
      try bob.result("history", #"{"key":"email.marketing"}"#)["entries"]?.arrayValue ?? []
    #expect(keyHistory.map { $0["user"] } == [.int(1001)])
    let all = try root.result("history", #"{"user":"*"}"#)["entries"]?.arrayValue ?? []
    #expect(all.map { $0["user"] } == [.int(1001), .int(1000)])
    let asAlice =
      try root.result("history", #"{"key":"email.marketing","user":1000}"#)["entries"]?
      .arrayValue ?? []
    #expect(asAlice.map { $0["user"] } == [.int(1000)])
    let everyUser = try bob.error("history", #"{"user":"*"}"#)
    #expect(everyUser["data"]?["name"] == .string("PermissionDenied"))
    // A sentence for a person, also when no switch is named.
    #expect(
      everyUser["message"]?.stringValue
        == "You may not follow every user's values: only an administrator may.")
    let another = try bob.error("watch", #"{"user":1000}"#)
    #expect(another["data"]?["name"] == .string("PermissionDenied"))
    #expect(
      another["message"]?.stringValue
        == "You may not act as user 1000: only an administrator may act as another user.")
    // InvalidParams comes before naming another user.
    #expect(
      try bob.error("watch", #"{"user":1000,"since":999999}"#)["data"]?["name"]
        == .string("InvalidParams"))
  }

  /// `confirm` and `revert` name a user like every other method: on a
  /// system switch too, naming another uid is an administrator's right,
  /// also when nothing is pending (a check before the no-op).
  @Test func settlingATrialAsAnotherUserIsAnAdministratorsRight() throws {
    let daemon = try Self.fixture()
    let alice = try daemon.client(asUser: Self.alice)
    let tried = try alice.result("toggle", #"{"key":"wifi","confirmWithin":60}"#)
    #expect(tried["changed"] == .bool(true))
    for method in ["confirm", "revert"] {
      for user in [0, 4242] {
        let refused = try alice.error(method, #"{"key":"wifi","user":\#(user)}"#)
        #expect(refused["data"]?["name"] == .string("PermissionDenied"))
        #expect(
          refused["message"]?.stringValue
            == "You may not act as user \(user) on wifi: only an administrator may act as another user."
        )
      }
    }
    // Her own uid, named, is herself: the trial is hers to keep.
    let kept = try alice.result("confirm", #"{"key":"wifi","user":1000}"#)
    #expect(kept["changed"] == .bool(true))
    // Nothing pending now: still refused for another uid, a no-op for her.
    let nothing = try alice.error("revert", #"{"key":"wifi","user":0}"#)
    #expect(nothing["data"]?["name"] == .string("PermissionDenied"))
    #expect(try alice.result("revert", #"{"key":"wifi"}"#)["changed"] == .bool(false))
  }

  @Test func aHoldFixesTheValueForEveryoneAndEachChoiceComesBack() throws {
    let daemon = try Self.fixture()
    let alice = try daemon.client(asUser: Self.alice)
    let bob = try daemon.client(asUser: Self.bob)
    let root = try daemon.client()
    _ = try alice.result("set", #"{"key":"email.marketing","checked":false}"#)
    let aliceWatch = try alice.result("watch", #"{"keys":["email.marketing"]}"#)
    let beforeHold = try #require(aliceWatch["revision"]?.int64Value)
    _ = try bob.result("watch", #"{"keys":["email.marketing"]}"#)

    let locked = try root.result("lock", #"{"key":"email.marketing","checked":true,"reason":"IT"}"#)
    #expect(locked["changed"] == .bool(true))
    // Alice reads the fixed value; her event says her value went off→on.
    let aliceLock = try alice.nextEvent()
    #expect(aliceLock["fields"]?.arrayValue?.first == .string("checked"))
    #expect(aliceLock["state"]?.checked == true && aliceLock["previous"]?.checked == false)
    // Bob, who never set it, read on before and after: only the hold changed.
    let bobLock = try bob.nextEvent()
    #expect(bobLock["fields"]?.arrayValue?.contains(.string("checked")) == false)
    #expect(try alice.result("get", #"{"key":"email.marketing"}"#).checked == true)
    let aliceHeld = try alice.result("get", #"{"key":"email.marketing"}"#)
    #expect(aliceHeld["writable"] == .bool(false) && aliceHeld["readOnly"] == .bool(true))
    #expect(aliceHeld["readOnlyReason"]?.stringValue == "IT")

    // Nobody writes a user's value while the hold fixes it, administrators included.
    #expect(
      try alice.error("set", #"{"key":"email.marketing","checked":false}"#)["data"]?["name"]
        == .string("ReadOnly"))
    #expect(
      try root.error("set", #"{"key":"email.marketing","checked":false,"user":1000}"#)["data"]?[
        "name"] == .string("ReadOnly"))

    _ = try root.result("unlock", #"{"key":"email.marketing"}"#)
    let aliceUnlock = try alice.nextEvent()
    #expect(aliceUnlock["cause"]?.stringValue == "unlock")
    #expect(aliceUnlock["state"]?.checked == false && aliceUnlock["previous"]?.checked == true)
    #expect(bob.notifications.isEmpty)
    let bobUnlock = try bob.nextEvent()
    #expect(bobUnlock["state"]?.checked == true)
    let aliceFree = try alice.result("get", #"{"key":"email.marketing"}"#)
    #expect(aliceFree.checked == false && aliceFree["readOnly"] == .bool(false))
    #expect(try bob.result("get", #"{"key":"email.marketing"}"#).checked == true)

    // A replay shows each of them the hold as they saw it live.
    for (uid, lockFields, unlockChecked) in [
      (Self.alice, true, false), (Self.bob, false, true),
    ] {
      let replaying = try daemon.client(asUser: uid)
      _ = try replaying.result("watch", "{\"keys\":[\"email.marketing\"],\"since\":\(beforeHold)}")
      let lock = try replaying.nextEvent()
      #expect(lock["cause"]?.stringValue == "lock")
      #expect(lock["fields"]?.arrayValue?.contains(.string("checked")) == lockFields)
      let unlock = try replaying.nextEvent()
      #expect(unlock["cause"]?.stringValue == "unlock")
      #expect(unlock["state"]?.checked == unlockChecked)
    }

    // A hold that does not fix the value: users may not write, administrators may.
    _ = try root.result("lock", #"{"key":"email.marketing"}"#)
    #expect(
      try bob.error("toggle", #"{"key":"email.marketing"}"#)["data"]?["name"]
        == .string("ReadOnly"))
    #expect(
      try root.result("toggle", #"{"key":"email.marketing","user":1001}"#)["switch"]?.checked
        == false)
    // Disabled applies to every user, and nobody changes a value.
    _ = try root.result("unlock", #"{"key":"email.marketing"}"#)
    _ = try root.result("disable", #"{"key":"email.marketing"}"#)
    #expect(
      try alice.error("toggle", #"{"key":"email.marketing"}"#)["data"]?["name"]
        == .string("Disabled"))
  }

  @Test func aPolicyCheckedFixesEveryUsersValueUntilTheFileGoes() throws {
    let daemon = try Self.fixture()
    let alice = try daemon.client(asUser: Self.alice)
    let root = try daemon.client()
    _ = try alice.result("set", #"{"key":"notifications.chat","checked":true}"#)
    try daemon.writeFile(
      "policy.d/50-corp.conf", "[notifications.chat]\nReadOnly=yes\nChecked=off\nReason=Quiet\n")
    _ = try root.result("reload")
    let held = try alice.result("get", #"{"key":"notifications.chat"}"#)
    #expect(held.checked == false && held["heldBy"]?.stringValue == "policy")
    #expect(
      try root.error("set", #"{"key":"notifications.chat","checked":true,"user":1000}"#)["data"]?[
        "name"] == .string("ReadOnly"))
    daemon.removeFile("policy.d/50-corp.conf")
    _ = try root.result("reload")
    #expect(try alice.result("get", #"{"key":"notifications.chat"}"#).checked == true)
  }

  @Test func aHoldAfterADefaultChangedShowsWhatAUserWhoNeverSetItRead() throws {
    let daemon = try Self.fixture()
    let root = try daemon.client()
    // The default goes from on to off; Bob never set the switch and reads off.
    try daemon.writeFile(
      "switches.d/10-test.conf",
      "[email.marketing]\nLabel=Marketing emails\nDefault=off\nScope=user\n")
    _ = try root.result("reload")
    let bob = try daemon.client(asUser: Self.bob)
    #expect(try bob.result("get", #"{"key":"email.marketing"}"#).checked == false)
    _ = try bob.result("watch", #"{"keys":["email.marketing"]}"#)
    let everyone = try daemon.client()
    _ = try everyone.result("watch", #"{"keys":["email.marketing"],"user":"*"}"#)

    // A hold that fixes nothing changes only the hold for him, as he read it.
    _ = try root.result("lock", #"{"key":"email.marketing","reason":"IT"}"#)
    for event in [try bob.nextEvent(), try everyone.nextEvent()] {
      #expect(event["fields"]?.arrayValue?.contains(.string("checked")) == false)
      #expect(event["previous"]?.checked == false && event["state"]?.checked == false)
    }
  }

  @Test func aUserSwitchMadeSystemAfterItsDefaultChangedReadsAndTogglesOneValue() throws {
    let daemon = try Self.fixture()
    let root = try daemon.client()
    try daemon.writeFile(
      "switches.d/10-test.conf",
      "[email.marketing]\nLabel=Marketing emails\nDefault=off\nScope=user\n")
    _ = try root.result("reload")
    try daemon.writeFile(
      "switches.d/10-test.conf", "[email.marketing]\nLabel=Marketing emails\nDefault=off\n")
    _ = try root.result("reload")
    let shown = try root.result("get", #"{"key":"email.marketing"}"#).checked
    #expect(shown != nil)
    let read = shown ?? false
    #expect(daemon.stop() == 0)
    try daemon.start()
    let again = try daemon.client()
    #expect(try again.result("get", #"{"key":"email.marketing"}"#).checked == read)
    #expect(try again.result("toggle", #"{"key":"email.marketing"}"#)["switch"]?.checked == !read)
  }

  @Test func valuesAndResumedWatchesSurviveARestartAndAKill() throws {
    let daemon = try Self.fixture()
    var alice = try daemon.client(asUser: Self.alice)
    let watched = try alice.result("watch", #"{"keys":["email.marketing"]}"#)
    let seen = try #require(watched["revision"]?.int64Value)
    alice.close()
    var bob = try daemon.client(asUser: Self.bob)
    _ = try bob.result("set", #"{"key":"email.marketing","checked":false}"#)
    let writer = try daemon.client(asUser: Self.alice)
    _ = try writer.result("set", #"{"key":"email.marketing","checked":false}"#)
    writer.close()
    bob.close()
    #expect(daemon.stop() == 0)
    try daemon.start()

    alice = try daemon.client(asUser: Self.alice)
    _ = try alice.result("watch", "{\"keys\":[\"email.marketing\"],\"since\":\(seen)}")
    let replayed = try alice.nextEvent()
    #expect(replayed["user"] == .int(1000) && replayed["revision"]?.int64Value == seen + 2)
    // Nothing else is owed: the next event is the next live change of hers.
    let root = try daemon.client()
    _ = try root.result("set", #"{"key":"email.marketing","checked":true,"user":1000}"#)
    #expect(try alice.nextEvent()["revision"]?.int64Value == seen + 3)

    // Killed without a checkpoint: every value comes back from the log.
    bob = try daemon.client(asUser: Self.bob)
    _ = try bob.result("set", #"{"key":"notifications.chat","checked":true}"#)
    daemon.crash()
    try daemon.start()
    bob = try daemon.client(asUser: Self.bob)
    #expect(try bob.result("get", #"{"key":"notifications.chat"}"#).checked == true)
    #expect(try bob.result("get", #"{"key":"email.marketing"}"#).checked == false)
    let asAlice = try daemon.client(asUser: Self.alice)
    #expect(try asAlice.result("get", #"{"key":"email.marketing"}"#).checked == true)
    #expect(try asAlice.result("get", #"{"key":"notifications.chat"}"#).checked == false)
  }

  @Test func switchctlActsAsAUser() throws {
    let daemon = try Self.fixture()
    #expect(daemon.ctl(["off", "email.marketing"], asUser: Self.alice).status == 0)
    #expect(daemon.ctl(["--user", "1000", "get", "email.marketing"]).stdout == "off\n")
    #expect(daemon.ctl(["get", "email.marketing", "--user=1001"]).stdout == "on\n")
    #expect(daemon.ctl(["--user", "root", "get", "email.marketing"]).stdout == "on\n")
    #expect(daemon.ctl(["--user", "1001", "on", "notifications.chat"]).status == 0)
    #expect(daemon.ctl(["get", "notifications.chat"], asUser: Self.bob).stdout == "on\n")
    // Someone else's value is an administrator's to read; an unknown name is a usage error.
    #expect(
      daemon.ctl(["--user", "1000", "get", "email.marketing"], asUser: Self.bob).status == 6)
    #expect(daemon.ctl(["--user", "no-such-user-here", "get", "email.marketing"]).status == 2)
    #expect(daemon.ctl(["--user", "*", "get", "email.marketing"]).status == 2)
    #expect(daemon.ctl(["--user", "1000", "lock", "email.marketing"]).status == 2)
    let history = daemon.ctl(["--json", "--user", "*", "history"])
    #expect(history.status == 0)
    #expect(history.stdout.contains("\"user\":1000") && history.stdout.contains("\"user\":1001"))
  }
}
