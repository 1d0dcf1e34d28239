import Glibc
import SwitchProtocol
import SwitchTestSupport
import Testing

/// Issue 3 from the outside, continued: groups, reload and SIGHUP, history
/// across restarts, the schema changing under a running daemon, and the
/// exit codes of `switchctl`.
@Suite struct AdminPolicyReloadEndToEndTests {
  static let corpPolicy = """
    [bluetooth]
    ReadOnly=yes
    Checked=on
    Reason=Bluetooth is required by your organisation.

    [email.marketing]
    Disabled=yes
    Reason=Marketing email is not offered on managed devices.
    """

  // MARK: 5. Groups

  @Test(.needsRoot("it creates groups (groupadd) and relays as other uids and gids"))
  func writersGroupLimitsWhoMaySetByRealGroups() throws {
    let writers = try switchdTestGroup("switchd-test-writers")
    let daemon = try DaemonFixture(
      policies: ["50-corp.conf": "[bluetooth]\nReadOnly=yes\nReason=Held.\n"],
      daemonConf: "[Daemon]\nAdminGroup=\nWriters=switchd-test-writers\n")
    let outsiderRelay = try UserRelay(daemon)
    let outsider = try outsiderRelay.client()
    for (method, params) in [
      ("set", #"{"key":"wifi","checked":false}"#), ("toggle", keyParam("wifi")),
      ("reset", keyParam("wifi")),
      // The Writers check comes before ReadOnly.
      ("set", #"{"key":"bluetooth","checked":true}"#),
    ] {
      let error = try outsider.error(method, params)
      expectErrorObject(error, -32004, "PermissionDenied", "\(method) \(params)")
    }
    // …and after InvalidParams and UnknownSwitch.
    expectErrorObject(
      try outsider.error("set", #"{"key":"nope","checked":true}"#), -32001, "UnknownSwitch")
    expectErrorObject(
      try outsider.error("set", #"{"key":"wifi","checked":1}"#), -32602, "InvalidParams")
    // Reads are anyone's.
    #expect(try outsider.result("get", keyParam("wifi"))["checked"]?.boolValue == true)
    #expect(try outsider.result("status")["revision"]?.int64Value == 1)

    // A member by a supplementary group (SO_PEERGROUPS) may write.
    let supplementaryRelay = try UserRelay(daemon, groups: [writers])
    let supplementary = try supplementaryRelay.client()
    let set = try supplementary.result("set", #"{"key":"wifi","checked":false}"#)
    #expect(set["changed"]?.boolValue == true)
    // …but is no administrator: held is held, and administering is denied.
    expectErrorObject(
      try supplementary.error("set", #"{"key":"bluetooth","checked":true}"#), -32002, "ReadOnly")
    expectErrorObject(
      try supplementary.error("lock", keyParam("wifi")), -32004, "PermissionDenied")

    // A member by its primary group may write too.
    let primaryRelay = try UserRelay(daemon, gid: writers)
    let primary = try primaryRelay.client()
    #expect(try primary.result("toggle", keyParam("wifi"))["changed"]?.boolValue == true)

    // Root is an administrator, and administrators write.
    let root = try daemon.client()
    #expect(try root.result("toggle", keyParam("wifi"))["changed"]?.boolValue == true)

    let entries = try root.result("history", #"{"key":"wifi"}"#)["entries"]?.arrayValue ?? []
    #expect(entries.compactMap { $0["revision"]?.int64Value } == [4, 3, 2])
    if entries.count == 3 {
      #expect(entries[2]["actor"]?["uid"]?.int64Value == Int64(humanUID))
      #expect(entries[2]["actor"]?["gid"]?.int64Value == Int64(humanUID))
      #expect(entries[2]["actor"]?["pid"]?.int64Value == Int64(supplementaryRelay.pid))
      #expect(entries[1]["actor"]?["gid"]?.int64Value == Int64(writers))
      #expect(entries[1]["actor"]?["pid"]?.int64Value == Int64(primaryRelay.pid))
      #expect(entries[0]["actor"]?["uid"]?.int64Value == 0)
    }
  }

  @Test(.needsRoot("it creates groups (groupadd) and relays as other uids and gids"))
  func adminGroupMembersAdministerUntilAReloadDropsTheGroup() throws {
    let admins = try switchdTestGroup("switchd-test-admins")
    let daemon = try DaemonFixture(
      policies: [
        "50-corp.conf": """
        [bluetooth]
        ReadOnly=yes
        Checked=off
        Reason=Held with a value.

        [wifi]
        ReadOnly=yes
        Reason=Held.
        """
      ],
      daemonConf: "[Daemon]\nAdminGroup=switchd-test-admins\n")
    let watcher = try daemon.client()
    _ = try watcher.result("watch")
    let adminRelay = try UserRelay(daemon, groups: [admins])
    let admin = try adminRelay.client()

    let lock = try admin.result("lock", #"{"key":"notifications.chat","reason":"Mine."}"#)
    #expect(lock["changed"]?.boolValue == true)
    #expect(lock["switch"]?["heldBy"]?.stringValue == "admin")
    #expect(
      try admin.result("unlock", keyParam("notifications.chat"))["changed"]?.boolValue == true)
    #expect(
      try admin.result("disable", keyParam("notifications.mail"))["changed"]?.boolValue == true)
    #expect(
      try admin.result("enable", keyParam("notifications.mail"))["changed"]?.boolValue == true)
    // An administrator may set what a policy holds without fixing the value…
    #expect(
      try admin.result("set", #"{"key":"wifi","checked":false}"#)["changed"]?.boolValue == true)
    // …not what it fixes.
    let fixed = try admin.error("set", #"{"key":"bluetooth","checked":true}"#)
    expectErrorObject(fixed, -32002, "ReadOnly", key: "bluetooth")
    #expect(fixed["data"]?["heldBy"]?.stringValue == "policy")
    let reload = try admin.result("reload")
    #expect(reload["switches"]?.int64Value == 5)
    #expect(reload["policies"]?.int64Value == 2)

    let events = try watcher.eventsUntilNow()
    #expect(
      events.compactMap { $0["cause"]?.stringValue } == [
        "lock", "unlock", "disable", "enable", "set",
      ])
    for event in events {
      #expect(event["actor"]?["uid"]?.int64Value == Int64(humanUID))
      #expect(event["actor"]?["pid"]?.int64Value == Int64(adminRelay.pid))
    }

    // A member by its primary group is an administrator too.
    let primaryRelay = try UserRelay(daemon, gid: admins)
    #expect(
      try primaryRelay.client().result("lock", keyParam("notifications.mail"))["changed"]?.boolValue
        == true)

    // Not a member: no.
    let userRelay = try UserRelay(daemon)
    let user = try userRelay.client()
    expectErrorObject(
      try user.error("unlock", keyParam("notifications.mail")), -32004, "PermissionDenied")
    expectErrorObject(try user.error("reload"), -32004, "PermissionDenied")

    // switchctl under setpriv with the group as a supplementary group.
    let ctl = [Products.path("switchctl"), "--socket", daemon.socketPath]
    let asMember = runProcess(
      ["/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--groups=\(admins)"] + ctl
        + ["lock", "notifications.chat", "--reason", "Held by a member."])
    #expect(asMember.status == 0, "\(asMember.stderr)")
    let chat = try daemon.client().result("get", keyParam("notifications.chat"))
    #expect(chat["heldBy"]?.stringValue == "admin")
    #expect(chat["readOnlyReason"]?.stringValue == "Held by a member.")
    let asUser = daemon.ctl(["unlock", "notifications.chat"], asUser: 65534)
    #expect(asUser.status == 6, "\(asUser.stderr)")

    // Groups are resolved again on reload: without AdminGroup only root administers.
    try daemon.writeFile("switchd.conf", "[Daemon]\nAdminGroup=\n")
    _ = try daemon.client().result("reload")
    let former = try adminRelay.client()
    expectErrorObject(
      try former.error("unlock", keyParam("notifications.chat")), -32004, "PermissionDenied")
    let formerCtl = runProcess(
      ["/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--groups=\(admins)"] + ctl
        + ["unlock", "notifications.chat"])
    #expect(formerCtl.status == 6, "\(formerCtl.stderr)")
    #expect(
      try daemon.client().result("unlock", keyParam("notifications.chat"))["changed"]?.boolValue
        == true)
  }

  @Test(.needsRoot("it creates a group (groupadd) and relays as other uids"))
  func aWatchOfOtherUsersValuesEndsWhenAReloadTakesTheRightAway() throws {
    let admins = try switchdTestGroup("switchd-test-admins")
    let daemon = try DaemonFixture(
      switches: DaemonFixture.standardSwitches + "\n[notes]\nLabel=Notes\nDefault=on\nScope=user\n",
      daemonConf: "[Daemon]\nAdminGroup=switchd-test-admins\n")
    let memberRelay = try UserRelay(daemon, uid: 65534, groups: [admins])
    let everyone = try memberRelay.client()
    _ = try everyone.result("watch", #"{"user":"*"}"#)
    let oneUser = try memberRelay.client()
    _ = try oneUser.result("watch", "{\"user\":\(humanUID)}")
    let own = try memberRelay.client()
    _ = try own.result("watch")
    // Still an administrator: another user's value reaches both.
    let userRelay = try UserRelay(daemon)
    let user = try userRelay.client()
    #expect(try user.result("toggle", keyParam("notes"))["changed"]?.boolValue == true)
    for watcher in [everyone, oneUser] {
      let event = try watcher.nextEvent()
      #expect(event["user"]?.int64Value == Int64(humanUID))
    }

    try daemon.writeFile("switchd.conf", "[Daemon]\nAdminGroup=\n")
    // The member reloads on the connection of its `*` watch: the reload
    // takes its right away, and its answer still comes before the close.
    #expect(try everyone.result("reload")["switches"]?.int64Value == 6)
    #expect(try user.result("toggle", keyParam("notes"))["changed"]?.boolValue == true)
    // The two watches of other users' values ended with the right: their
    // connections are closed, and no value of the user's came after.
    for watcher in [everyone, oneUser] {
      var after: [String] = []
      while let line = watcher.readLine() { after.append(line) }
      #expect(!after.contains { $0.contains("\"notes\"") }, "\(after)")
    }
    // A watch of the member's own world goes on, and a new watch of
    // another user's values is refused, saying why.
    #expect(try own.result("status")["caller"]?["administrator"]?.boolValue == false)
    let again = try memberRelay.client()
    expectErrorObject(try again.error("watch", #"{"user":"*"}"#), -32004, "PermissionDenied")
  }

  // MARK: 6. Reload and SIGHUP

  @Test(.needsRoot("reload is an administrator method; the test administers as root"))
  func reloadAppliesRefusesAndLiftsPoliciesWithOneEventPerChange() throws {
    let daemon = try DaemonFixture()
    let watcher = try daemon.client()
    _ = try watcher.result("watch")
    let admin = try daemon.client()

    // A new policy: one event per switch it changes.
    try daemon.writeFile("policy.d/50-corp.conf", Self.corpPolicy)
    let reload = try admin.result("reload")
    #expect(reload.objectMembers?.map(\.name) == ["switches", "policies", "restartRequired"])
    #expect(reload["restartRequired"] == .array([]))
    #expect(reload["switches"]?.int64Value == 5)
    #expect(reload["policies"]?.int64Value == 2)
    var events = try watcher.eventsUntilNow()
    #expect(events.compactMap { $0["revision"]?.int64Value } == [1, 2])
    #expect(Set(events.compactMap { $0["key"]?.stringValue }) == ["bluetooth", "email.marketing"])
    for event in events {
      #expect(event["cause"]?.stringValue == "policy")
      #expect(event["actor"]?["source"]?.stringValue == "policy")
      #expect(event["actor"]?["uid"]?.isNull == true)
      let key = event["key"]?.stringValue
      let expected =
        key == "bluetooth"
        ? ["checked", "readOnly", "readOnlyReason", "heldBy"]
        : ["disabled", "disabledReason", "disabledBy"]
      #expect(changedFieldNames(event) == expected, "\(key ?? "?")")
    }
    var bluetooth = try admin.result("get", keyParam("bluetooth"))
    #expect(bluetooth["checked"]?.boolValue == true)
    #expect(bluetooth["heldBy"]?.stringValue == "policy")
    #expect(bluetooth["policySource"]?.stringValue == "50-corp.conf:1")
    #expect(
      try admin.result("get", keyParam("email.marketing"))["policySource"]?.stringValue
        == "50-corp.conf:6")

    // The same configuration again: nothing.
    #expect(try admin.result("reload")["policies"]?.int64Value == 2)
    #expect(try watcher.eventsUntilNow().isEmpty)
    #expect(try admin.result("status")["revision"]?.int64Value == 2)

    // Only the reason changes: one event with that field.
    try daemon.writeFile(
      "policy.d/50-corp.conf",
      Self.corpPolicy.replacing(
        "Bluetooth is required by your organisation.", with: "Bluetooth stays on."))
    _ = try admin.result("reload")
    events = try watcher.eventsUntilNow()
    #expect(events.count == 1)
    #expect(events.first.map(changedFieldNames) == ["readOnlyReason"])
    #expect(events.first?["state"]?["readOnlyReason"]?.stringValue == "Bluetooth stays on.")

    // An invalid file: refused with every error's file and line; nothing changes.
    try daemon.writeFile(
      "policy.d/70-bad.conf", "[wifi]\nReadOnly=maybe\nthis line is not a setting\n")
    let refused = try admin.error("reload")
    expectErrorObject(refused, -32010, "InvalidConfig")
    let errors = refused["data"]?["errors"]?.arrayValue?.compactMap(\.stringValue) ?? []
    #expect(errors.contains { $0.contains("70-bad.conf:2: ") }, "\(errors)")
    #expect(errors.contains { $0.contains("70-bad.conf:3: ") }, "\(errors)")
    #expect(refused["message"]?.stringValue?.contains("70-bad.conf:") == true)
    #expect(try watcher.eventsUntilNow().isEmpty)
    #expect(try admin.result("get", keyParam("wifi"))["readOnly"]?.boolValue == false)
    bluetooth = try admin.result("get", keyParam("bluetooth"))
    #expect(bluetooth["readOnlyReason"]?.stringValue == "Bluetooth stays on.")
    #expect(bluetooth["policySource"]?.stringValue == "50-corp.conf:1")
    // The running configuration still rules writes.
    expectErrorObject(
      try admin.error("set", #"{"key":"bluetooth","checked":false}"#), -32002, "ReadOnly")

    // SIGHUP with the invalid file: refused too (the log names the line); the daemon serves on.
    let logged = daemon.log.ranges(of: "70-bad.conf:3").count
    daemon.signal(SIGHUP)
    #expect(pollUntil { daemon.log.ranges(of: "70-bad.conf:3").count > logged })
    #expect(try watcher.eventsUntilNow().isEmpty)
    #expect(try admin.result("get", keyParam("wifi"))["readOnly"]?.boolValue == false)

    // Only *.conf files count.
    try daemon.writeFile("policy.d/80-draft.conf.disabled", "[wifi]\nReadOnly=yes\n")
    try daemon.writeFile("policy.d/80-draft.conf~", "[wifi]\nReadOnly=yes\n")

    // Moving a section to another file changes its source, not its State: no event.
    daemon.removeFile("policy.d/70-bad.conf")
    try daemon.writeFile(
      "policy.d/40-base.conf",
      "[email.marketing]\nDisabled=yes\nReason=Marketing email is not offered on managed devices.\n"
    )
    try daemon.writeFile(
      "policy.d/50-corp.conf",
      "[bluetooth]\nReadOnly=yes\nChecked=on\nReason=Bluetooth stays on.\n")
    #expect(try admin.result("reload")["policies"]?.int64Value == 2)
    #expect(try watcher.eventsUntilNow().isEmpty)
    #expect(
      try admin.result("get", keyParam("email.marketing"))["policySource"]?.stringValue
        == "40-base.conf:1")
    #expect(try admin.result("get", keyParam("wifi"))["readOnly"]?.boolValue == false)

    // Removing the policies lifts what they held, one event each; the value stays.
    daemon.removeFile("policy.d/40-base.conf")
    daemon.removeFile("policy.d/50-corp.conf")
    #expect(try admin.result("reload")["policies"]?.int64Value == 0)
    events = try watcher.eventsUntilNow()
    #expect(events.count == 2)
    for event in events {
      #expect(event["cause"]?.stringValue == "policy")
      let key = event["key"]?.stringValue
      let expected =
        key == "bluetooth"
        ? ["readOnly", "readOnlyReason", "heldBy"] : ["disabled", "disabledReason", "disabledBy"]
      #expect(changedFieldNames(event) == expected, "\(key ?? "?")")
    }
    bluetooth = try admin.result("get", keyParam("bluetooth"))
    #expect(bluetooth["readOnly"]?.boolValue == false)
    #expect(bluetooth["heldBy"]?.isNull == true)
    #expect(bluetooth["policySource"]?.isNull == true)
    #expect(bluetooth["checked"]?.boolValue == true)
    #expect(try admin.result("reload")["policies"]?.int64Value == 0)
    #expect(try watcher.eventsUntilNow().isEmpty)
    let revision = try admin.result("status")["revision"]?.int64Value
    #expect(revision == 5)

    // SIGHUP does what reload does.
    try daemon.writeFile("policy.d/50-corp.conf", Self.corpPolicy)
    daemon.signal(SIGHUP)
    #expect(
      try pollUntil {
        try admin.result("get", keyParam("email.marketing"))["disabled"]?.boolValue == true
      })
    #expect(try admin.result("get", keyParam("bluetooth"))["heldBy"]?.stringValue == "policy")
    events = try watcher.eventsUntilNow()
    #expect(events.count == 2)
    #expect(events.allSatisfy { $0["cause"]?.stringValue == "policy" })
    daemon.removeFile("policy.d/50-corp.conf")
    daemon.signal(SIGHUP)
    #expect(
      try pollUntil {
        try admin.result("get", keyParam("email.marketing"))["disabled"]?.boolValue == false
      })
    #expect(try admin.result("get", keyParam("bluetooth"))["readOnly"]?.boolValue == false)
    events = try watcher.eventsUntilNow()
    #expect(events.count == 2)
    #expect(try admin.result("status")["revision"]?.int64Value == 9)
  }

  // MARK: 7. History

  @Test(.needsRoot("a relay drops to another uid, and the test administers as root"))
  func historyCarriesActorsAndCausesAcrossRestartsAndPages() throws {
    let daemon = try DaemonFixture()
    let relay = try UserRelay(daemon)
    do {
      let root = try daemon.client()
      _ = try root.result("toggle", keyParam("wifi"))
      let user = try relay.client()
      _ = try user.result("set", #"{"key":"bluetooth","checked":true}"#)
      _ = try root.result("lock", #"{"key":"notifications.chat","reason":"Held."}"#)
      _ = try root.result("disable", keyParam("email.marketing"))
    }
    #expect(daemon.stop() == 0)
    try daemon.start()
    let client = try daemon.client()
    let entries = try client.result("history")["entries"]?.arrayValue ?? []
    #expect(entries.compactMap { $0["revision"]?.int64Value } == [4, 3, 2, 1])
    #expect(
      entries.compactMap { $0["cause"]?.stringValue } == ["disable", "lock", "set", "toggle"])
    #expect(
      entries.compactMap { $0["key"]?.stringValue } == [
        "email.marketing", "notifications.chat", "bluetooth", "wifi",
      ])
    if entries.count == 4 {
      let names = entries[0].objectMembers?.map(\.name)
      #expect(
        names == [
          "revision", "time", "key", "user", "cause", "fields", "actor", "state", "previous",
        ])
      for index in [0, 1, 3] {
        #expect(entries[index]["actor"]?["uid"]?.int64Value == 0)
        #expect(entries[index]["actor"]?["gid"]?.int64Value == Int64(getgid()))
        #expect(entries[index]["actor"]?["pid"]?.int64Value == Int64(getpid()))
      }
      #expect(entries[2]["actor"]?["uid"]?.int64Value == Int64(humanUID))
      #expect(entries[2]["actor"]?["gid"]?.int64Value == Int64(humanUID))
      #expect(entries[2]["actor"]?["pid"]?.int64Value == Int64(relay.pid))
      #expect(entries[2]["actor"]?["source"] == nil)
      #expect(entries[1]["state"]?["readOnlyReason"]?.stringValue == "Held.")
      #expect(entries[1]["state"]?["heldBy"]?.stringValue == "admin")
      #expect(entries[0]["state"]?["disabledBy"]?.stringValue == "admin")
      #expect(entries[0]["time"]?.stringValue?.hasSuffix("Z") == true)
    }

    // After the restart revisions continue; key, limit and before filter and page.
    for _ in 0..<3 { _ = try client.result("toggle", keyParam("wifi")) }
    func revisions(_ params: String) throws -> [Int64] {
      try client.result("history", params)["entries"]?.arrayValue?.compactMap {
        $0["revision"]?.int64Value
      } ?? []
    }
    #expect(try revisions(#"{"key":"wifi"}"#) == [7, 6, 5, 1])
    #expect(try revisions(#"{"key":"bluetooth"}"#) == [2])
    #expect(try revisions(#"{"limit":2}"#) == [7, 6])
    #expect(try revisions(#"{"limit":2,"before":6}"#) == [5, 4])
    #expect(try revisions(#"{"limit":2,"before":4}"#) == [3, 2])
    #expect(try revisions(#"{"before":2}"#) == [1])
    #expect(try revisions(#"{"before":1}"#) == [])
    #expect(try revisions(#"{"key":"wifi","before":5}"#) == [1])
    // History is anyone's to read.
    let user = try relay.client()
    #expect(try user.result("history", #"{"key":"bluetooth"}"#)["entries"]?.arrayValue?.count == 1)
    expectErrorObject(try client.error("history", keyParam("nope")), -32001, "UnknownSwitch")
  }

  // MARK: 8. The schema under a running daemon

  @Test(.needsRoot("reload is an administrator method; the test administers as root"))
  func schemaChangesOnReloadAddRemoveAndBringBackStoredValues() throws {
    let daemon = try DaemonFixture()
    let admin = try daemon.client()
    _ = try admin.result("set", #"{"key":"wifi","checked":false}"#)

    // A new switch appears at its Default.
    try daemon.writeFile("switches.d/20-extra.conf", "[nfc]\nLabel=NFC\nDefault=on\n")
    #expect(try admin.result("reload")["switches"]?.int64Value == 6)
    var nfc = try admin.result("get", keyParam("nfc"))
    #expect(nfc["checked"]?.boolValue == true)
    #expect(nfc["defaultChecked"]?.boolValue == true)
    #expect(nfc["revision"]?.int64Value == 0)
    #expect(nfc["label"]?.stringValue == "NFC")
    #expect(
      try admin.result("set", #"{"key":"nfc","checked":false}"#)["changed"]?.boolValue == true)

    // Removed from the schema: no longer served.
    let withoutWifi = DaemonFixture.standardSwitches.replacing(
      """
      [wifi]
      Label=Wi-Fi
      Description=Connect to wireless networks.
      Default=on
      CheckedIcon=wifi
      UncheckedIcon=wifi_off
      """, with: "")
    try daemon.writeFile("switches.d/10-test.conf", withoutWifi)
    #expect(try admin.result("reload")["switches"]?.int64Value == 5)
    expectErrorObject(
      try admin.error("get", keyParam("wifi")), -32001, "UnknownSwitch", key: "wifi")
    expectErrorObject(
      try admin.error("set", #"{"key":"wifi","checked":true}"#), -32001, "UnknownSwitch")
    expectErrorObject(try admin.error("lock", keyParam("wifi")), -32001, "UnknownSwitch")
    let keys = try admin.result("list")["switches"]?.arrayValue?.compactMap {
      $0["key"]?.stringValue
    }
    #expect(keys?.contains("wifi") == false)
    #expect(keys?.contains("nfc") == true)

    // Back again: its stored value, not its Default.
    try daemon.writeFile("switches.d/10-test.conf", DaemonFixture.standardSwitches)
    #expect(try admin.result("reload")["switches"]?.int64Value == 6)
    let wifi = try admin.result("get", keyParam("wifi"))
    #expect(wifi["checked"]?.boolValue == false)
    #expect(wifi["defaultChecked"]?.boolValue == true)
    #expect(wifi["revision"]?.int64Value == 1)

    // Removed across a restart, then back: still the stored value.
    daemon.removeFile("switches.d/20-extra.conf")
    #expect(daemon.stop() == 0)
    try daemon.start()
    let client = try daemon.client()
    expectErrorObject(try client.error("get", keyParam("nfc")), -32001, "UnknownSwitch")
    try daemon.writeFile("switches.d/20-extra.conf", "[nfc]\nLabel=NFC\nDefault=on\n")
    _ = try client.result("reload")
    nfc = try client.result("get", keyParam("nfc"))
    #expect(nfc["checked"]?.boolValue == false)
    #expect(nfc["revision"]?.int64Value == 2)

    // A new Default changes what reset returns to, not the stored value.
    try daemon.writeFile("switches.d/20-extra.conf", "[nfc]\nLabel=NFC\nDefault=off\n")
    try daemon.writeFile(
      "switches.d/10-test.conf",
      DaemonFixture.standardSwitches.replacing(
        "[notifications.chat]\nLabel=Chat notifications\nDefault=on",
        with: "[notifications.chat]\nLabel=Chat notifications\nDefault=off"))
    _ = try client.result("reload")
    let chat = try client.result("get", keyParam("notifications.chat"))
    #expect(chat["checked"]?.boolValue == true)
    #expect(chat["defaultChecked"]?.boolValue == false)
    let reset = try client.result("reset", keyParam("notifications.chat"))
    #expect(reset["changed"]?.boolValue == true)
    #expect(reset["switch"]?["checked"]?.boolValue == false)
  }

  // MARK: 9. switchctl

  @Test(.needsRoot("switchctl runs as other uids through setpriv, and as root to administer"))
  func switchctlExitCodesSayReadOnlyDisabledAndPermissionDenied() throws {
    let bluetoothReason = "Bluetooth is turned off by your organisation"
    let marketingReason = "Marketing email is not offered on managed devices"
    let daemon = try DaemonFixture(
      policies: [
        "50-corp.conf": """
        [bluetooth]
        ReadOnly=yes
        Checked=off
        Reason=\(bluetoothReason).

        [email.marketing]
        Disabled=yes
        Reason=\(marketingReason).
        """
      ])
    let cases: [([String], UInt32?, Int32, String?)] = [
      (["set", "bluetooth", "on"], humanUID, 3, bluetoothReason),
      (["on", "bluetooth"], humanUID, 3, bluetoothReason),
      (["toggle", "bluetooth"], humanUID, 3, bluetoothReason),
      (["reset", "bluetooth"], humanUID, 3, bluetoothReason),
      (["set", "bluetooth", "on"], nil, 3, bluetoothReason),
      (["unlock", "bluetooth"], nil, 3, bluetoothReason),
      (["lock", "bluetooth", "--reason", "Mine."], nil, 3, bluetoothReason),
      (["toggle", "email.marketing"], humanUID, 4, marketingReason),
      (["off", "email.marketing"], humanUID, 4, marketingReason),
      (["off", "email.marketing"], nil, 4, marketingReason),
      (["enable", "email.marketing"], nil, 4, marketingReason),
      (["lock", "wifi"], humanUID, 6, nil),
      (["unlock", "wifi"], humanUID, 6, nil),
      (["disable", "wifi"], humanUID, 6, nil),
      (["enable", "wifi"], humanUID, 6, nil),
      (["reload"], humanUID, 6, nil),
      (["set", "nope", "on"], humanUID, 5, nil),
      (["get", "bluetooth"], humanUID, 0, nil),
      // A system account writes no system switch (no Writers group here).
      (["toggle", "wifi"], systemUID, 6, "only human accounts"),
      (["get", "wifi"], systemUID, 0, nil),
    ]
    for (arguments, uid, status, reason) in cases {
      let result = daemon.ctl(arguments, asUser: uid)
      let who = uid.map { "uid \($0)" } ?? "root"
      #expect(result.status == status, "\(arguments) as \(who): \(result.stderr)")
      if let reason {
        #expect(result.stderr.contains(reason), "\(arguments) as \(who): \(result.stderr)")
      }
      if status != 0 {
        #expect(result.stderr.hasPrefix("switchctl: "), "\(arguments): \(result.stderr)")
      }
    }

    // An administrator's lock with a value, then a user's attempt.
    let lock = daemon.ctl(["lock", "wifi", "--reason", "Held for the demo.", "--checked", "off"])
    #expect(lock.status == 0, "\(lock.stderr)")
    let wifi = try daemon.client().result("get", keyParam("wifi"))
    #expect(wifi["readOnly"]?.boolValue == true)
    #expect(wifi["heldBy"]?.stringValue == "admin")
    #expect(wifi["checked"]?.boolValue == false)
    let userOn = daemon.ctl(["on", "wifi"], asUser: humanUID)
    #expect(userOn.status == 3)
    #expect(userOn.stderr.contains("Held for the demo"), "\(userOn.stderr)")
    #expect(daemon.ctl(["on", "wifi"]).status == 0)
    #expect(daemon.ctl(["unlock", "wifi"]).status == 0)
    let disable = daemon.ctl(["disable", "notifications.chat", "--reason", "Not here."])
    #expect(disable.status == 0, "\(disable.stderr)")
    let userOff = daemon.ctl(["off", "notifications.chat"], asUser: humanUID)
    #expect(userOff.status == 4)
    #expect(userOff.stderr.contains("Not here"), "\(userOff.stderr)")
    #expect(daemon.ctl(["enable", "notifications.chat"]).status == 0)
    #expect(daemon.ctl(["off", "notifications.chat"], asUser: humanUID).status == 0)
  }
}
