import Glibc
import SwitchProtocol
import SwitchTestSupport
import Testing

/// SEMANTICS.md rule 17 from the outside: airplane mode disables Wi-Fi and
/// Bluetooth (`Conflicts=`), a hotspot requires Wi-Fi (`Requires=`), in one
/// commit with one revision and event per changed switch; an administrator's
/// or a policy's disable wins; it all survives a restart and replays.
@Suite struct DependenciesEndToEndTests {
  static let switches = """
    [airplane-mode]
    Label=Airplane mode
    Default=off

    [bluetooth]
    Label=Bluetooth
    Default=off
    Conflicts=airplane-mode

    [hotspot]
    Label=Hotspot
    Default=on
    Requires=wifi

    [vpn]
    Label=VPN
    Default=on

    [wifi]
    Label=Wi-Fi
    Default=on
    Conflicts=airplane-mode
    """

  static let airplane = "Airplane mode is on"

  /// (key, cause, revision) of each event, for comparing a sequence at once.
  static func summary(_ events: [JSONValue]) -> [String] {
    events.map {
      "\($0["key"]?.stringValue ?? "?") \($0["cause"]?.stringValue ?? "?") "
        + "\($0["revision"]?.int64Value ?? -1)"
    }
  }

  /// The `changed` and `schemaChanged` params that reached `client` so far.
  static func notificationsUntilNow(
    _ client: RPCClient
  ) throws -> (changed: [JSONValue], schema: [JSONValue]) {
    _ = try client.result("status")
    let all = client.notifications
    client.notifications.removeAll()
    func params(_ method: String) -> [JSONValue] {
      all.filter { $0["method"]?.stringValue == method }.compactMap { $0["params"] }
    }
    return (params("changed"), params("schemaChanged"))
  }

  static func disabledBy(_ state: JSONValue?) -> String? { state?["disabledBy"]?.stringValue }

  @Test func airplaneModeDisablesWifiAndBluetoothInOneCommitAndGivesTheirValuesBack() throws {
    let daemon = try DaemonFixture(switches: Self.switches)
    let watcher = try daemon.client()
    _ = try watcher.result("watch")
    let client = try daemon.client()

    let on = try client.result("set", #"{"key":"airplane-mode","checked":true}"#)
    #expect(on["changed"]?.boolValue == true)
    #expect(on["switch"]?["checked"]?.boolValue == true)
    // The dependents' events were published with the switch's own, before its
    // answer: one commit (rule 17), consecutive revisions, in dependency order.
    let sentFirst = try watcher.eventsUntilNow()
    #expect(
      Self.summary(sentFirst) == [
        "airplane-mode set 1", "bluetooth dependency 2", "wifi dependency 3",
        "hotspot dependency 4",
      ])
    for event in sentFirst.dropFirst() {
      #expect(event["actor"]?["uid"]?.int64Value == 0)
      #expect(event["actor"]?["pid"]?.int64Value == Int64(getpid()))
      #expect(changedFieldNames(event) == ["disabled", "disabledReason", "disabledBy"])
      #expect(event["state"]?["disabled"]?.boolValue == true)
      #expect(event["previous"]?["disabled"]?.boolValue == false)
    }
    if sentFirst.count == 4 {
      #expect(sentFirst[1]["state"]?["disabledReason"]?.stringValue == Self.airplane)
      #expect(sentFirst[1]["state"]?["checked"]?.boolValue == false)
      #expect(sentFirst[2]["state"]?["disabledReason"]?.stringValue == Self.airplane)
      #expect(sentFirst[2]["state"]?["checked"]?.boolValue == true)
      #expect(Self.disabledBy(sentFirst[2]["state"]) == "dependency")
      #expect(sentFirst[3]["state"]?["disabledReason"]?.stringValue == "Wi-Fi is disabled")
    }
    #expect(try client.result("status")["revision"]?.int64Value == 4)

    let wifi = try client.result("get", keyParam("wifi"))
    #expect(wifi["checked"]?.boolValue == true)
    #expect(wifi["disabled"]?.boolValue == true)
    #expect(wifi["disabledBy"]?.stringValue == "dependency")
    #expect(wifi["disabledReason"]?.stringValue == Self.airplane)
    #expect(wifi["effective"]?.boolValue == false)
    #expect(wifi["writable"]?.boolValue == false)
    #expect(wifi["revision"]?.int64Value == 3)

    // Nobody, an administrator included, changes a switch a dependency disables.
    for (method, params) in [
      ("set", #"{"key":"wifi","checked":false}"#), ("toggle", keyParam("wifi")),
      ("reset", keyParam("bluetooth")), ("lock", keyParam("wifi")),
    ] {
      let error = try client.error(method, params)
      expectErrorObject(error, -32003, "Disabled", "\(method) \(params)")
      #expect(error["data"]?["disabledBy"]?.stringValue == "dependency")
      #expect(error["data"]?["reason"]?.stringValue == Self.airplane)
    }
    // switchctl says why, and exits 4 (disabled).
    let refused = daemon.ctl(["off", "wifi"])
    #expect(refused.status == 4, "\(refused)")
    #expect(refused.stderr.contains("Airplane mode is on"), "\(refused)")
    #expect(try watcher.eventsUntilNow().isEmpty)

    // Off again: the stored values come back, each with its own revision.
    let off = try client.result("toggle", keyParam("airplane-mode"))
    #expect(off["changed"]?.boolValue == true)
    let back = try watcher.eventsUntilNow()
    #expect(
      Self.summary(back) == [
        "airplane-mode toggle 5", "bluetooth dependency 6", "wifi dependency 7",
        "hotspot dependency 8",
      ])
    for event in back.dropFirst() {
      #expect(event["state"]?["disabled"]?.boolValue == false)
      #expect(Self.disabledBy(event["state"]) == nil)
      #expect(event["state"]?["disabledReason"] == .null)
    }
    let list = try client.result("list")["switches"]?.arrayValue ?? []
    let checked = Dictionary(
      uniqueKeysWithValues: list.compactMap { s in
        s["key"]?.stringValue.map { ($0, s["effective"]?.boolValue ?? false) }
      })
    #expect(
      checked == [
        "airplane-mode": false, "bluetooth": false, "hotspot": true, "vpn": true, "wifi": true,
      ])
    // A switch nobody depends on changes alone.
    _ = try client.result("set", #"{"key":"vpn","checked":false}"#)
    #expect(Self.summary(try watcher.eventsUntilNow()) == ["vpn set 9"])
  }

  @Test func anAdministratorsDisableWinsAndEnableHandsTheSwitchBackToTheDependency() throws {
    let daemon = try DaemonFixture(switches: Self.switches)
    let watcher = try daemon.client()
    _ = try watcher.result("watch", #"{"keys":["wifi","bluetooth"]}"#)
    let admin = try daemon.client()

    // (Disabling wifi disables hotspot, which requires it: revision 2.)
    _ = try admin.result("disable", #"{"key":"wifi","reason":"Maintenance."}"#)
    _ = try admin.result("set", #"{"key":"airplane-mode","checked":true}"#)
    // wifi stays the administrator's; only bluetooth follows airplane mode.
    #expect(
      Self.summary(try watcher.eventsUntilNow()) == [
        "wifi disable 1", "bluetooth dependency 4",
      ])
    var wifi = try admin.result("get", keyParam("wifi"))
    #expect(wifi["disabledBy"]?.stringValue == "admin")
    #expect(wifi["disabledReason"]?.stringValue == "Maintenance.")

    // Enable lifts the administrator's disable: the dependency shows, in one change.
    let enabled = try admin.result("enable", keyParam("wifi"))
    #expect(enabled["changed"]?.boolValue == true)
    #expect(enabled["switch"]?["disabled"]?.boolValue == true)
    #expect(enabled["switch"]?["disabledBy"]?.stringValue == "dependency")
    #expect(enabled["switch"]?["disabledReason"]?.stringValue == Self.airplane)
    let enable = try watcher.eventsUntilNow()
    #expect(Self.summary(enable) == ["wifi enable 5"])
    #expect(enable.first.map(changedFieldNames) == ["disabledReason", "disabledBy"])

    // …and does not lift the dependency itself.
    let again = try admin.error("enable", keyParam("wifi"))
    expectErrorObject(again, -32003, "Disabled", key: "wifi")
    #expect(again["data"]?["disabledBy"]?.stringValue == "dependency")

    // An administrator's disable takes over from the dependency.
    _ = try admin.result("disable", keyParam("wifi"))
    wifi = try admin.result("get", keyParam("wifi"))
    #expect(wifi["disabledBy"]?.stringValue == "admin")
    #expect(wifi["disabledReason"] == .null)

    // Airplane mode off: bluetooth comes back, wifi stays the administrator's.
    _ = try admin.result("set", #"{"key":"airplane-mode","checked":false}"#)
    #expect(
      Self.summary(try watcher.eventsUntilNow()) == [
        "wifi disable 6", "bluetooth dependency 8",
      ])
    #expect(try admin.result("get", keyParam("wifi"))["disabledBy"]?.stringValue == "admin")
    _ = try admin.result("enable", keyParam("wifi"))
    wifi = try admin.result("get", keyParam("wifi"))
    #expect(wifi["disabled"]?.boolValue == false && wifi["checked"]?.boolValue == true)
  }

  @Test func aPolicysDisableWinsAndItsRemovalShowsTheDependency() throws {
    let daemon = try DaemonFixture(
      switches: Self.switches,
      policies: ["50-corp.conf": "[bluetooth]\nDisabled=yes\nReason=Not on this fleet.\n"])
    let client = try daemon.client()
    _ = try client.result("watch", #"{"keys":["bluetooth"]}"#)
    // The start's policy change is revision 1.
    _ = try client.result("set", #"{"key":"airplane-mode","checked":true}"#)
    var bluetooth = try client.result("get", keyParam("bluetooth"))
    #expect(bluetooth["disabledBy"]?.stringValue == "policy")
    #expect(bluetooth["disabledReason"]?.stringValue == "Not on this fleet.")
    #expect(try client.eventsUntilNow().isEmpty)

    // The policy goes while airplane mode is on: one change, cause policy, showing the dependency.
    daemon.removeFile("policy.d/50-corp.conf")
    _ = try client.result("reload")
    let lifted = try client.eventsUntilNow()
    #expect(Self.summary(lifted) == ["bluetooth policy 5"])
    #expect(Self.disabledBy(lifted.first?["state"]) == "dependency")
    #expect(lifted.first?["actor"]?["source"]?.stringValue == "policy")
    bluetooth = try client.result("get", keyParam("bluetooth"))
    #expect(bluetooth["disabledReason"]?.stringValue == Self.airplane)
    #expect(bluetooth["policySource"] == .null)
  }

  @Test func aReloadThatAddsOrRemovesAConflictDisablesOrEnablesInOneCommit() throws {
    let without = Self.switches.split(separator: "\n", omittingEmptySubsequences: false)
      .filter { !$0.hasPrefix("Conflicts=") }.joined(separator: "\n")
    let daemon = try DaemonFixture(switches: without)
    let watcher = try daemon.client()
    _ = try watcher.result("watch")
    let client = try daemon.client()
    _ = try client.result("set", #"{"key":"airplane-mode","checked":true}"#)
    #expect(Self.summary(try watcher.eventsUntilNow()) == ["airplane-mode set 1"])

    try daemon.writeFile("switches.d/10-test.conf", Self.switches)
    _ = try client.result("reload")
    let (added, schema) = try Self.notificationsUntilNow(watcher)
    #expect(
      Self.summary(added) == [
        "bluetooth dependency 2", "wifi dependency 3", "hotspot dependency 4",
      ])
    for event in added {
      #expect(event["actor"]?["source"]?.stringValue == "policy")
      #expect(event["state"]?["disabled"]?.boolValue == true)
    }
    #expect(schema.count == 1)
    #expect(SchemaChangedEndToEndTests.strings(schema.first?["updated"]) == ["bluetooth", "wifi"])

    try daemon.writeFile("switches.d/10-test.conf", without)
    _ = try client.result("reload")
    #expect(
      Self.summary(try Self.notificationsUntilNow(watcher).changed) == [
        "bluetooth dependency 5", "wifi dependency 6", "hotspot dependency 7",
      ])
    #expect(try client.result("get", keyParam("wifi"))["disabled"]?.boolValue == false)
  }

  @Test func dependencyChangesSurviveARestartAndReplayWithSince() throws {
    let daemon = try DaemonFixture(switches: Self.switches)
    let client = try daemon.client()
    _ = try client.result("set", #"{"key":"wifi","checked":false}"#)
    _ = try client.result("set", #"{"key":"airplane-mode","checked":true}"#)
    client.close()
    #expect(daemon.stop() == 0)
    try daemon.start()

    let after = try daemon.client()
    // The start finds everything settled: no new change.
    #expect(try after.result("status")["revision"]?.int64Value == 5)
    let wifi = try after.result("get", keyParam("wifi"))
    #expect(wifi["checked"]?.boolValue == false)
    #expect(wifi["disabledBy"]?.stringValue == "dependency")
    #expect(wifi["disabledReason"]?.stringValue == Self.airplane)

    // (wifi off disabled hotspot at revision 2: it requires wifi.)
    let replay = try daemon.client()
    _ = try replay.result("watch", #"{"since":2}"#)
    var replayed: [JSONValue] = []
    for _ in 0..<3 { replayed.append(try replay.nextEvent()) }
    #expect(
      Self.summary(replayed) == [
        "airplane-mode set 3", "bluetooth dependency 4", "wifi dependency 5",
      ])
    #expect(replayed.dropFirst().allSatisfy { Self.disabledBy($0["state"]) == "dependency" })
    let history = try after.result("history", #"{"key":"wifi"}"#)["entries"]?.arrayValue ?? []
    #expect(history.compactMap { $0["cause"]?.stringValue } == ["dependency", "set"])

    // Off after the restart: the values kept across it come back.
    _ = try after.result("set", #"{"key":"airplane-mode","checked":false}"#)
    let back = try after.result("get", keyParam("wifi"))
    #expect(back["disabled"]?.boolValue == false && back["checked"]?.boolValue == false)
    #expect(
      try after.result("get", keyParam("hotspot"))["disabledReason"]?.stringValue == "Wi-Fi is off")
  }

  @Test func whyNamesTheSwitchThatDisablesIt() throws {
    let daemon = try DaemonFixture(switches: Self.switches)
    #expect(daemon.ctl(["on", "airplane-mode"]).status == 0)
    let why = daemon.ctl(["why", "wifi"])
    #expect(why.status == 0, "\(why)")
    #expect(why.stdout.contains("Disabled by another switch"), "\(why.stdout)")
    #expect(why.stdout.contains("Airplane mode is on"), "\(why.stdout)")
    let get = daemon.ctl(["get", "wifi"])
    #expect(get.stdout.contains("Airplane mode is on"), "\(get)")
  }

  @Test func badDependenciesAreRefusedWithFileAndLine() throws {
    let daemon = try DaemonFixture(switches: Self.switches)
    let cycle = Self.switches + "\nRequires=hotspot\n"
    try daemon.writeFile("switches.d/10-test.conf", cycle)
    try daemon.writeFile("switches.d/20-more.conf", "[gps]\nLabel=Location\nConflicts=radar\n")
    let check = runProcess([Products.path("switchd"), "--check-config", daemon.configDirectory])
    #expect(check.status == 1, "\(check)")
    let said = check.stdout + check.stderr
    #expect(
      said.contains(
        "switches.d/10-test.conf:13: error: Requires=/Conflicts= make a cycle: "
          + "hotspot -> wifi -> hotspot"),
      "\(said)")
    #expect(
      said.contains(
        "switches.d/20-more.conf:3: error: Conflicts=radar: no switch has the key radar"),
      "\(said)")

    let refused = try daemon.client().error("reload")
    expectErrorObject(refused, -32010, "InvalidConfig")
    let errors = (refused["data"]?["errors"]?.arrayValue ?? []).compactMap(\.stringValue)
    #expect(errors.count == 2, "\(errors)")
    #expect(errors.first?.hasPrefix("switches.d/10-test.conf:13: ") == true, "\(errors)")
    // The running configuration stays.
    #expect(try daemon.client().result("status")["switches"]?.int64Value == 5)
  }
}
