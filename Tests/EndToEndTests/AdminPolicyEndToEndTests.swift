import Glibc
import SwitchProtocol
import SwitchTestSupport
import Testing

/// Issue 3 from the outside: policies at start, what users and
/// administrators may do to held and disabled switches, and the events
/// locking and disabling make. The user side runs as a human account through a
/// `UserRelay`; the test process itself is root, hence an administrator.
@Suite struct AdminPolicyEndToEndTests {
  /// Held with a fixed value, held without one, disabled, and both.
  static let heldPolicy = """
    [bluetooth]
    ReadOnly=yes
    Checked=off
    Reason=Bluetooth is turned off by your organisation.

    [wifi]
    ReadOnly=yes
    Reason=Wi-Fi is managed by your organisation.

    [email.marketing]
    Disabled=yes
    Reason=Marketing email is not offered on managed devices.

    [notifications.mail]
    ReadOnly=yes
    Disabled=yes
    Reason=Mail notifications are off on managed devices.
    """

  static let bluetoothReason = "Bluetooth is turned off by your organisation."
  static let wifiReason = "Wi-Fi is managed by your organisation."
  static let marketingReason = "Marketing email is not offered on managed devices."
  static let mailReason = "Mail notifications are off on managed devices."

  /// A reason as the error sentence may carry it (its final period may merge
  /// with the sentence's own).
  static func sentenceText(_ reason: String) -> String {
    reason.hasSuffix(".") ? String(reason.dropLast()) : reason
  }

  // MARK: 1. Policy at start

  static let corpPolicy = """
    # 50-corp.conf, placed by the fleet's configuration management
    [bluetooth]
    ReadOnly=yes
    Checked=on
    Reason=Bluetooth is required by your organisation.

    [email.marketing]
    Disabled=yes
    Reason=Marketing email is not offered on managed devices.

    [wifi]
    ReadOnly=yes
    Reason=Wi-Fi is managed by your organisation (ticket #123).

    [notifications.chat]
    ReadOnly=yes
    Reason=Chat is held.

    [notifications.mail]
    ReadOnly=yes
    Reason=Mail is held.

    [nfc]
    ReadOnly=yes
    """

  /// Overrides 50-corp.conf name by name: lifts one hold, disables another.
  static let sitePolicy = """
    [notifications.chat]
    ReadOnly=no
    Checked=off

    [notifications.mail]
    Disabled=yes
    Reason=Mail notifications do not apply on this machine.
    """

  @Test func policiesAtStartHoldAndDisableWithOneChangeEach() throws {
    let daemon = try DaemonFixture(
      policies: ["50-corp.conf": Self.corpPolicy, "60-site.conf": Self.sitePolicy])
    let client = try daemon.client()

    let bluetooth = try client.result("get", keyParam("bluetooth"))
    #expect(bluetooth["checked"]?.boolValue == true)
    #expect(bluetooth["defaultChecked"]?.boolValue == false)
    #expect(bluetooth["readOnly"]?.boolValue == true)
    #expect(bluetooth["heldBy"]?.stringValue == "policy")
    #expect(
      bluetooth["readOnlyReason"]?.stringValue == "Bluetooth is required by your organisation.")
    #expect(bluetooth["disabled"]?.boolValue == false)
    #expect(bluetooth["disabledBy"]?.isNull == true)
    #expect(bluetooth["policySource"]?.stringValue == "50-corp.conf:2")
    #expect(bluetooth["changedAt"]?.isNull == false)

    let marketing = try client.result("get", keyParam("email.marketing"))
    #expect(marketing["disabled"]?.boolValue == true)
    #expect(marketing["disabledBy"]?.stringValue == "policy")
    #expect(marketing["disabledReason"]?.stringValue == Self.marketingReason)
    #expect(marketing["readOnly"]?.boolValue == false)
    #expect(marketing["heldBy"]?.isNull == true)
    #expect(marketing["checked"]?.boolValue == true)  // the stored value is kept
    #expect(marketing["policySource"]?.stringValue == "50-corp.conf:7")

    let wifi = try client.result("get", keyParam("wifi"))
    #expect(wifi["readOnly"]?.boolValue == true)
    #expect(wifi["heldBy"]?.stringValue == "policy")
    #expect(wifi["checked"]?.boolValue == true)  // no Checked=: the value stays
    #expect(
      wifi["readOnlyReason"]?.stringValue == "Wi-Fi is managed by your organisation (ticket #123).")
    #expect(wifi["policySource"]?.stringValue == "50-corp.conf:11")

    // 60-site.conf lifts the hold 50-corp.conf put on chat, and its Checked=
    // without ReadOnly=yes has no effect: nothing changes.
    let chat = try client.result("get", keyParam("notifications.chat"))
    #expect(chat["readOnly"]?.boolValue == false)
    #expect(chat["checked"]?.boolValue == true)
    #expect(chat["heldBy"]?.isNull == true)
    #expect(chat["revision"]?.int64Value == 0)
    #expect(chat["policySource"]?.isNull == true)

    // Held by one file, disabled by a later one: disabled wins the source.
    let mail = try client.result("get", keyParam("notifications.mail"))
    let siteReason = "Mail notifications do not apply on this machine."
    #expect(mail["readOnly"]?.boolValue == true)
    #expect(mail["heldBy"]?.stringValue == "policy")
    #expect(mail["disabled"]?.boolValue == true)
    #expect(mail["disabledBy"]?.stringValue == "policy")
    #expect(mail["disabledReason"]?.stringValue == siteReason)
    #expect(mail["policySource"]?.stringValue == "60-site.conf:5")

    // A section for an undeclared switch is a warning: the daemon serves the rest.
    let list = try client.result("list")
    #expect(list["switches"]?.arrayValue?.count == 5)
    #expect(try client.error("get", keyParam("nfc"))["code"]?.int64Value == -32001)

    // One change per switch whose State changed, each by the policy.
    let entries = try client.result("history")["entries"]?.arrayValue ?? []
    #expect(entries.compactMap { $0["revision"]?.int64Value } == [4, 3, 2, 1])
    #expect(
      Set(entries.compactMap { $0["key"]?.stringValue })
        == ["bluetooth", "email.marketing", "notifications.mail", "wifi"])
    for entry in entries {
      let key = entry["key"]?.stringValue ?? "?"
      #expect(entry["cause"]?.stringValue == "policy", "\(key)")
      let actor = entry["actor"]
      #expect(actor?.objectMembers?.map(\.name) == ["uid", "gid", "pid", "source"], "\(key)")
      #expect(actor?["uid"]?.isNull == true, "\(key)")
      #expect(actor?["gid"]?.isNull == true, "\(key)")
      #expect(actor?["pid"]?.isNull == true, "\(key)")
      #expect(actor?["source"]?.stringValue == "policy", "\(key)")
      let current = try client.result("get", keyParam(key))
      #expect(current["revision"] == entry["revision"], "\(key)")
    }
    let byKey = Dictionary(
      entries.map { ($0["key"]?.stringValue ?? "", $0) }, uniquingKeysWith: { a, _ in a })
    #expect(
      byKey["bluetooth"].map(changedFieldNames) == [
        "checked", "readOnly", "readOnlyReason", "heldBy",
      ])
    #expect(byKey["bluetooth"]?["previous"]?["checked"]?.boolValue == false)
    #expect(byKey["bluetooth"]?["state"]?["checked"]?.boolValue == true)
    #expect(byKey["bluetooth"]?["state"]?["heldBy"]?.stringValue == "policy")
    #expect(
      byKey["email.marketing"].map(changedFieldNames) == [
        "disabled", "disabledReason", "disabledBy",
      ])
    #expect(byKey["wifi"].map(changedFieldNames) == ["readOnly", "readOnlyReason", "heldBy"])
    #expect(
      byKey["notifications.mail"].map(changedFieldNames) == [
        "readOnly", "readOnlyReason", "heldBy", "disabled", "disabledReason", "disabledBy",
      ])
    #expect(try client.result("status")["revision"]?.int64Value == 4)
    #expect(daemon.log.contains("nfc"))

    // The same policy again at the next start changes nothing and records nothing.
    #expect(daemon.stop() == 0)
    try daemon.start()
    let again = try daemon.client()
    #expect(try again.result("status")["revision"]?.int64Value == 4)
    #expect(try again.result("history")["entries"]?.arrayValue?.count == 4)
    let bluetoothAgain = try again.result("get", keyParam("bluetooth"))
    #expect(bluetoothAgain["revision"] == bluetooth["revision"])
    #expect(bluetoothAgain["policySource"]?.stringValue == "50-corp.conf:2")
    _ = try again.result("watch", #"{"since":4}"#)
    #expect(try again.eventsUntilNow().isEmpty)
  }

  // MARK: 2. Users

  @Test(.needsRoot("a relay drops to another uid to be a plain user"))
  func usersCannotChangeHeldOrDisabledSwitchesNorAdminister() throws {
    let daemon = try DaemonFixture(policies: ["50-corp.conf": Self.heldPolicy])
    let root = try daemon.client()
    #expect(try root.result("status")["revision"]?.int64Value == 4)
    let watcher = try daemon.client()
    _ = try watcher.result("watch")
    let relay = try UserRelay(daemon)
    let user = try relay.client()

    // Held by a policy: ReadOnly with the reason, no-ops and ifRevision included.
    let readOnlyCalls: [(String, String, String, String)] = [
      ("set", #"{"key":"bluetooth","checked":true}"#, "bluetooth", Self.bluetoothReason),
      ("set", #"{"key":"bluetooth","checked":false}"#, "bluetooth", Self.bluetoothReason),
      ("toggle", keyParam("bluetooth"), "bluetooth", Self.bluetoothReason),
      ("reset", keyParam("bluetooth"), "bluetooth", Self.bluetoothReason),
      (
        "set", #"{"key":"bluetooth","checked":true,"ifRevision":99}"#, "bluetooth",
        Self.bluetoothReason
      ),
      ("set", #"{"key":"wifi","checked":false}"#, "wifi", Self.wifiReason),
      ("set", #"{"key":"wifi","checked":true}"#, "wifi", Self.wifiReason),
      ("toggle", keyParam("wifi"), "wifi", Self.wifiReason),
      ("reset", keyParam("wifi"), "wifi", Self.wifiReason),
    ]
    for (method, params, key, reason) in readOnlyCalls {
      let error = try user.error(method, params)
      expectErrorObject(error, -32002, "ReadOnly", key: key, "\(method) \(params)")
      #expect(error["data"]?["reason"]?.stringValue == reason, "\(method) \(params)")
      #expect(error["data"]?["heldBy"]?.stringValue == "policy", "\(method) \(params)")
      #expect(
        error["message"]?.stringValue?.contains(Self.sentenceText(reason)) == true,
        "\(method) \(params)")
    }

    // Disabled by a policy, and both held and disabled: Disabled wins.
    let disabledCalls: [(String, String, String, String)] = [
      (
        "set", #"{"key":"email.marketing","checked":false}"#, "email.marketing",
        Self.marketingReason
      ),
      (
        "set", #"{"key":"email.marketing","checked":true}"#, "email.marketing", Self.marketingReason
      ),
      ("toggle", keyParam("email.marketing"), "email.marketing", Self.marketingReason),
      ("reset", keyParam("email.marketing"), "email.marketing", Self.marketingReason),
      (
        "set", #"{"key":"notifications.mail","checked":false}"#, "notifications.mail",
        Self.mailReason
      ),
      ("toggle", keyParam("notifications.mail"), "notifications.mail", Self.mailReason),
      ("reset", keyParam("notifications.mail"), "notifications.mail", Self.mailReason),
    ]
    for (method, params, key, reason) in disabledCalls {
      let error = try user.error(method, params)
      expectErrorObject(error, -32003, "Disabled", key: key, "\(method) \(params)")
      #expect(error["data"]?["reason"]?.stringValue == reason, "\(method) \(params)")
      #expect(error["data"]?["disabledBy"]?.stringValue == "policy", "\(method) \(params)")
      #expect(
        error["message"]?.stringValue?.contains(Self.sentenceText(reason)) == true,
        "\(method) \(params)")
    }

    // Administrative methods: PermissionDenied, whatever the switch, the
    // key or the params; never ReadOnly or Disabled.
    let administrative: [(String, String)] = [
      ("lock", keyParam("wifi")),
      ("lock", #"{"key":"notifications.chat","reason":"Mine."}"#),
      ("lock", #"{"key":"bluetooth","checked":true}"#),
      ("unlock", keyParam("bluetooth")),
      ("unlock", keyParam("notifications.chat")),
      ("disable", keyParam("notifications.chat")),
      ("disable", keyParam("email.marketing")),
      ("enable", keyParam("email.marketing")),
      ("enable", keyParam("notifications.chat")),
      ("lock", keyParam("nope")),
      ("lock", #"{"bogus":1}"#),
      ("reload", "{}"),
    ]
    for (method, params) in administrative {
      let error = try user.error(method, params)
      expectErrorObject(error, -32004, "PermissionDenied", "\(method) \(params)")
    }

    // Reads work for the user, read-only switches included.
    let bluetooth = try user.result("get", keyParam("bluetooth"))
    #expect(bluetooth["readOnly"]?.boolValue == true)
    #expect(bluetooth["readOnlyReason"]?.stringValue == Self.bluetoothReason)
    #expect(try user.result("list")["switches"]?.arrayValue?.count == 5)
    #expect(try user.result("history")["entries"]?.arrayValue?.count == 4)
    #expect(try user.result("status")["revision"]?.int64Value == 4)
    let watch = try user.result("watch")
    #expect(watch["revision"]?.int64Value == 4)
    #expect(watch["switches"]?.arrayValue?.count == 5)

    // Nothing was emitted for any refusal.
    #expect(try watcher.eventsUntilNow().isEmpty)
    #expect(try root.result("status")["revision"]?.int64Value == 4)

    // In a batch each request is authorized on its own.
    try user.send(
      raw: #"[{"jsonrpc":"2.0","id":1,"method":"set","params":{"key":"bluetooth","checked":true}},"#
        + #"{"jsonrpc":"2.0","id":2,"method":"get","params":{"key":"bluetooth"}},"#
        + #"{"jsonrpc":"2.0","id":3,"method":"lock","params":{"key":"wifi"}},"#
        + #"{"jsonrpc":"2.0","id":4,"method":"toggle","params":{"key":"notifications.chat"}}]"#
        + "\n")
    var batchLine = try user.readJSON()
    while batchLine["method"] != nil {  // the watch's event may come first
      user.notifications.append(batchLine)
      batchLine = try user.readJSON()
    }
    let batch = batchLine.arrayValue ?? []
    #expect(batch.count == 4)
    if batch.count == 4 {
      #expect(batch[0]["error"]?["code"]?.int64Value == -32002)
      #expect(batch[1]["result"]?["key"]?.stringValue == "bluetooth")
      #expect(batch[2]["error"]?["code"]?.int64Value == -32004)
      #expect(batch[3]["result"]?["changed"]?.boolValue == true)
    }
    let events = try watcher.eventsUntilNow()
    #expect(events.count == 1)
    #expect(events.first?["key"]?.stringValue == "notifications.chat")
    #expect(events.first?["actor"]?["uid"]?.int64Value == Int64(humanUID))
    #expect(events.first?["actor"]?["pid"]?.int64Value == Int64(relay.pid))
    // The user's own watch saw it too.
    let userEvents = try user.eventsUntilNow()
    #expect(userEvents.map { $0["revision"]?.int64Value } == [5])

    // Held by a policy and disabled by an administrator: Disabled, with the
    // administrator's reason.
    let audit = "Wi-Fi is off during the audit."
    let disabled = try root.result("disable", #"{"key":"wifi","reason":"\#(audit)"}"#)
    #expect(disabled["changed"]?.boolValue == true)
    #expect(disabled["switch"]?["readOnly"]?.boolValue == true)
    #expect(disabled["switch"]?["disabledBy"]?.stringValue == "admin")
    for (method, params) in [
      ("set", #"{"key":"wifi","checked":false}"#), ("toggle", keyParam("wifi")),
      ("reset", keyParam("wifi")),
    ] {
      let error = try user.error(method, params)
      expectErrorObject(error, -32003, "Disabled", key: "wifi", "\(method)")
      #expect(error["data"]?["reason"]?.stringValue == audit, "\(method)")
      #expect(error["data"]?["disabledBy"]?.stringValue == "admin", "\(method)")
      #expect(error["message"]?.stringValue?.contains(Self.sentenceText(audit)) == true)
      #expect(error["message"]?.stringValue?.contains(Self.sentenceText(Self.wifiReason)) == false)
    }
    let afterDisable = try watcher.eventsUntilNow()
    #expect(afterDisable.map { $0["cause"]?.stringValue } == ["disable"])
    #expect(try root.result("status")["revision"]?.int64Value == 6)
  }

  // MARK: 3. Administrators

  @Test(.needsRoot("the test administers as root (AdminGroup is empty)"))
  func administratorsOverrideHoldsButNotFixedValuesPolicyLiftsOrDisabled() throws {
    let daemon = try DaemonFixture(policies: ["50-corp.conf": Self.heldPolicy])
    let watcher = try daemon.client()
    _ = try watcher.result("watch")
    let admin = try daemon.client()

    // Held without Checked=: the administrator may set it; it stays held.
    let set = try admin.result("set", #"{"key":"wifi","checked":false}"#)
    #expect(set["changed"]?.boolValue == true)
    #expect(set["switch"]?["checked"]?.boolValue == false)
    #expect(set["switch"]?["readOnly"]?.boolValue == true)
    #expect(set["switch"]?["heldBy"]?.stringValue == "policy")
    #expect(set["switch"]?["policySource"]?.stringValue == "50-corp.conf:6")
    #expect(try admin.result("toggle", keyParam("wifi"))["switch"]?["checked"]?.boolValue == true)
    #expect(try admin.result("reset", keyParam("wifi"))["changed"]?.boolValue == false)
    #expect(
      try admin.result("set", #"{"key":"wifi","checked":false}"#)["changed"]?.boolValue == true)

    // A value the policy fixes: nobody sets it, not even as a no-op.
    for (method, params) in [
      ("set", #"{"key":"bluetooth","checked":true}"#),
      ("set", #"{"key":"bluetooth","checked":false}"#),
      ("toggle", keyParam("bluetooth")), ("reset", keyParam("bluetooth")),
    ] {
      let error = try admin.error(method, params)
      expectErrorObject(error, -32002, "ReadOnly", key: "bluetooth", "\(method) \(params)")
      #expect(error["data"]?["heldBy"]?.stringValue == "policy", "\(method) \(params)")
      #expect(error["data"]?["reason"]?.stringValue == Self.bluetoothReason, "\(method) \(params)")
    }

    // What a policy holds or disables cannot be lifted over the socket.
    for (method, params, key) in [
      ("lock", keyParam("bluetooth"), "bluetooth"),
      ("lock", #"{"key":"wifi","reason":"Mine now."}"#, "wifi"),
      ("lock", #"{"key":"wifi","checked":true}"#, "wifi"),
      ("unlock", keyParam("wifi"), "wifi"),
      ("unlock", keyParam("bluetooth"), "bluetooth"),
    ] {
      let error = try admin.error(method, params)
      expectErrorObject(error, -32002, "ReadOnly", key: key, "\(method) \(params)")
      #expect(error["data"]?["heldBy"]?.stringValue == "policy", "\(method) \(params)")
    }
    for (method, params) in [
      ("enable", keyParam("email.marketing")),
      ("disable", #"{"key":"email.marketing","reason":"Mine now."}"#),
      ("set", #"{"key":"email.marketing","checked":false}"#),
      ("toggle", keyParam("email.marketing")),
      // Read-only and disabled: disabled wins for administrators too.
      ("set", #"{"key":"notifications.mail","checked":false}"#),
      ("toggle", keyParam("notifications.mail")),
    ] {
      let error = try admin.error(method, params)
      expectErrorObject(error, -32003, "Disabled", "\(method) \(params)")
      #expect(error["data"]?["disabledBy"]?.stringValue == "policy", "\(method) \(params)")
    }
    let mailError = try admin.error("set", #"{"key":"notifications.mail","checked":false}"#)
    #expect(mailError["data"]?["reason"]?.stringValue == Self.mailReason)
    let marketing = try admin.result("get", keyParam("email.marketing"))
    #expect(marketing["disabledReason"]?.stringValue == Self.marketingReason)

    // Disabled by an administrator: the administrator cannot change the value either.
    let reason = "Chat is off for the migration."
    let disable = try admin.result(
      "disable", #"{"key":"notifications.chat","reason":"\#(reason)"}"#)
    #expect(disable["changed"]?.boolValue == true)
    for (method, params) in [
      ("set", #"{"key":"notifications.chat","checked":false}"#),
      ("set", #"{"key":"notifications.chat","checked":true}"#),
      ("toggle", keyParam("notifications.chat")), ("reset", keyParam("notifications.chat")),
      ("lock", #"{"key":"notifications.chat","checked":false}"#),
    ] {
      let error = try admin.error(method, params)
      expectErrorObject(error, -32003, "Disabled", key: "notifications.chat", "\(method) \(params)")
      #expect(error["data"]?["disabledBy"]?.stringValue == "admin", "\(method) \(params)")
      #expect(error["data"]?["reason"]?.stringValue == reason, "\(method) \(params)")
    }
    #expect(
      try admin.result("enable", keyParam("notifications.chat"))["changed"]?.boolValue == true)
    #expect(
      try admin.result("set", #"{"key":"notifications.chat","checked":false}"#)["changed"]?
        .boolValue == true)

    // One event per real change, none for the refusals.
    let events = try watcher.eventsUntilNow()
    #expect(
      events.compactMap { $0["cause"]?.stringValue } == [
        "set", "toggle", "set", "disable", "enable", "set",
      ])
    #expect(events.compactMap { $0["revision"]?.int64Value } == Array(5...10))
    for event in events {
      #expect(event["actor"]?["uid"]?.int64Value == 0)
      #expect(event["actor"]?["pid"]?.int64Value == Int64(getpid()))
    }
    let bluetooth = try admin.result("get", keyParam("bluetooth"))
    #expect(bluetooth["checked"]?.boolValue == false)
    #expect(bluetooth["revision"]?.int64Value ?? 99 <= 4)
  }

  // MARK: 4. Locking, unlocking, disabling, enabling

  @Test(.needsRoot("the test administers as root, and a relay drops to another uid"))
  func adminLockWithCheckedIsOneChangeAndEachStateChangeIsAnEvent() throws {
    let daemon = try DaemonFixture()
    let watcher = try daemon.client()
    _ = try watcher.result("watch")
    let admin = try daemon.client()
    let relay = try UserRelay(daemon)
    let user = try relay.client()
    let held = "Wi-Fi is held for maintenance."

    let lock = try admin.result("lock", #"{"key":"wifi","reason":"\#(held)","checked":false}"#)
    #expect(lock["changed"]?.boolValue == true)
    let locked = lock["switch"]
    #expect(locked?["checked"]?.boolValue == false)
    #expect(locked?["readOnly"]?.boolValue == true)
    #expect(locked?["readOnlyReason"]?.stringValue == held)
    #expect(locked?["heldBy"]?.stringValue == "admin")
    #expect(locked?["policySource"]?.isNull == true)
    #expect(locked?["revision"]?.int64Value == 1)
    var events = try watcher.eventsUntilNow()
    #expect(events.count == 1)
    if let event = events.first {
      #expect(event["revision"]?.int64Value == 1)
      #expect(event["key"]?.stringValue == "wifi")
      #expect(event["cause"]?.stringValue == "lock")
      #expect(changedFieldNames(event) == ["checked", "readOnly", "readOnlyReason", "heldBy"])
      #expect(event["actor"]?["uid"]?.int64Value == 0)
      #expect(event["actor"]?["gid"]?.int64Value == Int64(getgid()))
      #expect(event["actor"]?["pid"]?.int64Value == Int64(getpid()))
      #expect(event["state"]?["checked"]?.boolValue == false)
      #expect(event["state"]?["readOnly"]?.boolValue == true)
      #expect(event["state"]?["readOnlyReason"]?.stringValue == held)
      #expect(event["state"]?["heldBy"]?.stringValue == "admin")
      #expect(event["previous"]?["checked"]?.boolValue == true)
      #expect(event["previous"]?["readOnly"]?.boolValue == false)
      #expect(event["previous"]?["heldBy"]?.isNull == true)
    }
    #expect(try admin.result("status")["revision"]?.int64Value == 1)

    // A user may not change it, and is told why.
    for (method, params) in [
      ("set", #"{"key":"wifi","checked":true}"#), ("toggle", keyParam("wifi")),
      ("reset", keyParam("wifi")),
    ] {
      let error = try user.error(method, params)
      expectErrorObject(error, -32002, "ReadOnly", key: "wifi", "\(method)")
      #expect(error["data"]?["reason"]?.stringValue == held, "\(method)")
      #expect(error["data"]?["heldBy"]?.stringValue == "admin", "\(method)")
      #expect(error["message"]?.stringValue?.contains(Self.sentenceText(held)) == true)
    }

    // Locking again as it is changes nothing.
    let same = try admin.result("lock", #"{"key":"wifi","reason":"\#(held)"}"#)
    #expect(same["changed"]?.boolValue == false)
    #expect(same["switch"]?["revision"]?.int64Value == 1)
    let sameWithValue = try admin.result(
      "lock", #"{"key":"wifi","reason":"\#(held)","checked":false}"#)
    #expect(sameWithValue["changed"]?.boolValue == false)
    #expect(try watcher.eventsUntilNow().isEmpty)

    // The holder may still set it.
    let set = try admin.result("set", #"{"key":"wifi","checked":true}"#)
    #expect(set["changed"]?.boolValue == true)
    #expect(set["switch"]?["readOnly"]?.boolValue == true)
    // A new reason is a change of that field alone.
    let newReason = "Wi-Fi is held until Monday."
    #expect(
      try admin.result("lock", #"{"key":"wifi","reason":"\#(newReason)"}"#)["changed"]?.boolValue
        == true)
    events = try watcher.eventsUntilNow()
    #expect(events.compactMap { $0["cause"]?.stringValue } == ["set", "lock"])
    #expect(events.map(changedFieldNames) == [["checked"], ["readOnlyReason"]])
    #expect(try user.error("toggle", keyParam("wifi"))["data"]?["reason"]?.stringValue == newReason)

    // Unlock: one event; a second unlock changes nothing.
    let unlock = try admin.result("unlock", keyParam("wifi"))
    #expect(unlock["changed"]?.boolValue == true)
    #expect(unlock["switch"]?["readOnly"]?.boolValue == false)
    #expect(unlock["switch"]?["readOnlyReason"]?.isNull == true)
    #expect(unlock["switch"]?["heldBy"]?.isNull == true)
    #expect(try admin.result("unlock", keyParam("wifi"))["changed"]?.boolValue == false)
    events = try watcher.eventsUntilNow()
    #expect(events.count == 1)
    #expect(events.first?["cause"]?.stringValue == "unlock")
    #expect(events.first.map(changedFieldNames) == ["readOnly", "readOnlyReason", "heldBy"])
    #expect(events.first?["state"]?["heldBy"]?.isNull == true)

    // Now the user may set it.
    #expect(
      try user.result("set", #"{"key":"wifi","checked":false}"#)["changed"]?.boolValue == true)
    events = try watcher.eventsUntilNow()
    #expect(events.first?["cause"]?.stringValue == "set")
    #expect(events.first?["actor"]?["uid"]?.int64Value == Int64(humanUID))
    #expect(events.first?["actor"]?["gid"]?.int64Value == Int64(humanUID))
    #expect(events.first?["actor"]?["pid"]?.int64Value == Int64(relay.pid))

    // Disable and enable, with the administrator as the one who disabled it.
    let off = "Wi-Fi does not apply on this machine."
    let disable = try admin.result("disable", #"{"key":"wifi","reason":"\#(off)"}"#)
    #expect(disable["changed"]?.boolValue == true)
    #expect(disable["switch"]?["disabled"]?.boolValue == true)
    #expect(disable["switch"]?["disabledBy"]?.stringValue == "admin")
    #expect(disable["switch"]?["disabledReason"]?.stringValue == off)
    #expect(disable["switch"]?["checked"]?.boolValue == false)
    let userError = try user.error("set", #"{"key":"wifi","checked":true}"#)
    expectErrorObject(userError, -32003, "Disabled", key: "wifi")
    #expect(userError["data"]?["disabledBy"]?.stringValue == "admin")
    #expect(userError["data"]?["reason"]?.stringValue == off)
    #expect(
      try admin.result("disable", #"{"key":"wifi","reason":"\#(off)"}"#)["changed"]?.boolValue
        == false)
    let enable = try admin.result("enable", keyParam("wifi"))
    #expect(enable["changed"]?.boolValue == true)
    #expect(enable["switch"]?["disabledBy"]?.isNull == true)
    #expect(enable["switch"]?["disabledReason"]?.isNull == true)
    #expect(try admin.result("enable", keyParam("wifi"))["changed"]?.boolValue == false)
    events = try watcher.eventsUntilNow()
    #expect(events.compactMap { $0["cause"]?.stringValue } == ["disable", "enable"])
    #expect(
      events.map(changedFieldNames) == [
        ["disabled", "disabledReason", "disabledBy"], ["disabled", "disabledReason", "disabledBy"],
      ])
    #expect(events.first?["state"]?["disabledBy"]?.stringValue == "admin")
    #expect(events.last?["previous"]?["disabledBy"]?.stringValue == "admin")

    // A lock without a reason: only readOnly and heldBy change.
    let bare = try admin.result("lock", keyParam("bluetooth"))
    #expect(bare["switch"]?["readOnlyReason"]?.isNull == true)
    events = try watcher.eventsUntilNow()
    #expect(events.map(changedFieldNames) == [["readOnly", "heldBy"]])
    let bareError = try user.error("toggle", keyParam("bluetooth"))
    expectErrorObject(bareError, -32002, "ReadOnly", key: "bluetooth")
    #expect(bareError["data"]?["heldBy"]?.stringValue == "admin")
    #expect(bareError["data"]?["reason"]?.isNull == true)

    // Every change had its own revision: lock, set, lock, unlock, set, disable, enable, lock.
    #expect(try admin.result("status")["revision"]?.int64Value == 8)
    #expect(try watcher.eventsUntilNow().isEmpty)
  }
}
