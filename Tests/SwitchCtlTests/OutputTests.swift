import SwitchProtocol
import Testing

@testable import SwitchCtl

/// Golden text for each command's output, from canned daemon JSON.
@Suite struct OutputTests {
  static func switchJSON(
    key: String, label: String, checked: Bool, readOnly: String? = nil,
    heldBy: String? = nil, disabled: String? = nil, disabledBy: String? = nil,
    policySource: String? = nil, revision: Int = 0, changedAt: String? = nil
  ) -> JSONValue {
    func text(_ s: String?) -> JSONValue { s.map(JSONValue.string) ?? .null }
    return .object([
      JSONMember("key", .string(key)), JSONMember("label", .string(label)),
      JSONMember("description", .string("")), JSONMember("checked", .bool(checked)),
      JSONMember("defaultChecked", .bool(false)),
      JSONMember("readOnly", .bool(heldBy != nil)), JSONMember("readOnlyReason", text(readOnly)),
      JSONMember("heldBy", text(heldBy)),
      JSONMember("disabled", .bool(disabledBy != nil)),
      JSONMember("disabledReason", text(disabled)), JSONMember("disabledBy", text(disabledBy)),
      JSONMember("checkedIcon", .string("")), JSONMember("uncheckedIcon", .string("")),
      JSONMember("policySource", text(policySource)), JSONMember("revision", .int(Int64(revision))),
      JSONMember("changedAt", text(changedAt)),
    ])
  }

  static let bluetoothHeld = switchJSON(
    key: "bluetooth", label: "Bluetooth", checked: false,
    readOnly: "Bluetooth is turned off by your organisation.", heldBy: "policy",
    policySource: "50-corp.conf:1", revision: 1, changedAt: "2026-11-30T03:00:00.000Z")
  static let marketingDisabled = switchJSON(
    key: "email.marketing", label: "Marketing emails", checked: true, disabled: "Gone.",
    disabledBy: "admin")
  static let airplaneBoth = switchJSON(
    key: "airplane-mode", label: "Airplane mode", checked: true, readOnly: "Flight.",
    heldBy: "admin", disabled: "Grounded.", disabledBy: "policy", policySource: "60-x.conf:4")
  static let wifi = switchJSON(key: "wifi", label: "Wi-Fi", checked: true)

  @Test func listAlignsColumnsAndNotesHolds() {
    let result = JSONValue.object([
      JSONMember("revision", .int(3)),
      JSONMember(
        "switches",
        .array([Self.airplaneBoth, Self.bluetoothHeld, Self.marketingDisabled, Self.wifi])),
    ])
    #expect(
      Output.list(result) == [
        "airplane-mode    on   Airplane mode     (disabled by policy: Grounded.) (read-only by admin: Flight.)",
        "bluetooth        off  Bluetooth         (read-only by policy: Bluetooth is turned off by your organisation.)",
        "email.marketing  on   Marketing emails  (disabled by admin: Gone.)",
        "wifi             on   Wi-Fi",
      ])
    #expect(Output.list(json(#"{"revision":0,"switches":[]}"#)) == [])
  }

  @Test func getPrintsValueAndNotesDisabledFirst() {
    #expect(Output.get(Self.wifi) == "on")
    #expect(
      Output.get(Self.bluetoothHeld)
        == "off (read-only by policy: Bluetooth is turned off by your organisation.)")
    #expect(Output.get(Self.marketingDisabled) == "on (disabled by admin: Gone.)")
    #expect(
      Output.get(Self.airplaneBoth)
        == "on (disabled by policy: Grounded.) (read-only by admin: Flight.)")
    let noReason = Self.switchJSON(key: "k", label: "", checked: false, heldBy: "admin")
    #expect(Output.get(noReason) == "off (read-only by admin)")
  }

  @Test func controlCharactersInFreeTextAreEscaped() {
    let sneaky = Self.switchJSON(
      key: "wifi", label: "Wi\u{1B}[2J", checked: true, readOnly: "line one\nwifi  off",
      heldBy: "admin")
    #expect(Output.get(sneaky) == "on (read-only by admin: line one\\nwifi  off)")
    let listed = JSONValue.object([JSONMember("switches", .array([sneaky]))])
    #expect(
      Output.list(listed) == ["wifi  on  Wi\\u001B[2J  (read-only by admin: line one\\nwifi  off)"])
    #expect(Output.printable("Café: ok\t") == "Café: ok\\t")
  }

  @Test func writePrintsNewValueAndUnchanged() {
    let changed = JSONValue.object([
      JSONMember("changed", .bool(true)), JSONMember("switch", Self.wifi),
    ])
    let unchanged = JSONValue.object([
      JSONMember("changed", .bool(false)), JSONMember("switch", Self.wifi),
    ])
    let locked = JSONValue.object([
      JSONMember("changed", .bool(true)), JSONMember("switch", Self.airplaneBoth),
    ])
    #expect(Output.write(changed) == "wifi: on")
    #expect(Output.write(unchanged) == "wifi: on (unchanged)")
    #expect(
      Output.write(locked)
        == "airplane-mode: on (disabled by policy: Grounded.) (read-only by admin: Flight.)")
  }

  static let toggleEntry = json(
    #"""
    {"revision":43,"time":"2026-11-30T03:41:07.002Z","key":"wifi","cause":"toggle",
     "fields":["checked"],"actor":{"uid":1000,"gid":1000,"pid":4321},
     "state":{"checked":false,"readOnly":false,"readOnlyReason":null,"heldBy":null,
              "disabled":false,"disabledReason":null,"disabledBy":null},
     "previous":{"checked":true,"readOnly":false,"readOnlyReason":null,"heldBy":null,
                 "disabled":false,"disabledReason":null,"disabledBy":null}}
    """#)

  static let policyEntry = json(
    #"""
    {"revision":7,"time":"2026-11-30T03:00:00.000Z","key":"bluetooth","cause":"policy",
     "fields":["checked","readOnly","readOnlyReason","heldBy"],
     "actor":{"uid":null,"gid":null,"pid":null,"source":"policy"},
     "state":{"checked":false,"readOnly":true,"readOnlyReason":"Off \"here\".","heldBy":"policy",
              "disabled":false,"disabledReason":null,"disabledBy":null},
     "previous":{"checked":true,"readOnly":false,"readOnlyReason":null,"heldBy":null,
                 "disabled":false,"disabledReason":null,"disabledBy":null}}
    """#)

  static let lockEntry = json(
    #"""
    {"revision":9,"time":"2026-11-30T04:00:00.000Z","key":"bluetooth","cause":"disable",
     "fields":["disabled","disabledReason","disabledBy"],"actor":{"uid":0,"gid":0,"pid":77},
     "state":{"checked":false,"readOnly":true,"readOnlyReason":"Off \"here\".","heldBy":"policy",
              "disabled":true,"disabledReason":"Gone.","disabledBy":"admin"},
     "previous":{"checked":false,"readOnly":true,"readOnlyReason":"Off \"here\".","heldBy":"policy",
                 "disabled":false,"disabledReason":null,"disabledBy":null}}
    """#)

  @Test func historyLines() {
    let one = JSONValue.object([JSONMember("entries", .array([Self.toggleEntry]))])
    #expect(
      Output.history(one) == [
        "43  2026-11-30T03:41:07.002Z  wifi  toggle  checked: on→off  by uid 1000 (pid 4321)"
      ])
    let several = JSONValue.object([
      JSONMember("entries", .array([Self.toggleEntry, Self.lockEntry, Self.policyEntry]))
    ])
    #expect(
      Output.history(several) == [
        "43  2026-11-30T03:41:07.002Z  wifi       toggle   checked: on→off  by uid 1000 (pid 4321)",
        "9   2026-11-30T04:00:00.000Z  bluetooth  disable  disabled: no→yes, disabledReason: none→\"Gone.\", disabledBy: none→admin  by uid 0 (pid 77)",
        "7   2026-11-30T03:00:00.000Z  bluetooth  policy   checked: on→off, readOnly: no→yes, readOnlyReason: none→\"Off \\\"here\\\".\", heldBy: none→policy  by policy",
      ])
  }

  @Test func watchLines() {
    var event = Self.toggleEntry.objectMembers!
    event.insert(JSONMember("watch", .string("w1")), at: 0)
    #expect(Output.event(.object(event)) == "43 wifi off (toggle by uid 1000)")
    // One user's value says whose.
    var users = event.filter { $0.name != "user" }
    users.append(JSONMember("user", .int(1001)))
    #expect(Output.event(.object(users)) == "43 wifi[uid 1001] off (toggle by uid 1000)")
    #expect(
      Output.history(.object([JSONMember("entries", .array([.object(users)]))]))[0]
        .contains("  wifi[uid 1001]  toggle  "))
    #expect(
      Output.event(Self.policyEntry)
        == "7 bluetooth off (policy) (read-only by policy: Off \"here\".)")
    #expect(
      Output.event(Self.lockEntry)
        == "9 bluetooth off (disable by uid 0) (disabled by admin: Gone.) (read-only by policy: Off \"here\".)"
    )
  }

  /// Another user's change, as the daemon shows it to someone who does not
  /// administer: null ids and no source. "by ?" told a person nothing.
  @Test func aHiddenActorIsAnotherUser() {
    var hidden = Self.toggleEntry.objectMembers!.filter { $0.name != "actor" }
    hidden.append(
      JSONMember("actor", json(#"{"uid":null,"gid":null,"pid":null}"#)))
    let entry = JSONValue.object(hidden)
    #expect(Output.event(entry) == "43 wifi off (toggle by another user)")
    #expect(
      Output.history(.object([JSONMember("entries", .array([entry]))])) == [
        "43  2026-11-30T03:41:07.002Z  wifi  toggle  checked: on→off  by another user"
      ])
    var explanation = Explanation(switchObject: Self.wifi)
    explanation.scan([entry])
    #expect(
      Output.why(explanation).last
        == "Last change: revision 43 at 2026-11-30T03:41:07.002Z by another user: toggle, "
        + "checked: on→off.")
    // A policy's actor has null ids too, and its source says who.
    #expect(Output.actor(Self.policyEntry["actor"], withPID: true) == "policy")
    // An actor that is not there at all is not invented.
    #expect(Output.actor(nil, withPID: true) == "?")
  }

  @Test func anEmptyHistoryPageSaysSo() {
    #expect(Output.history(json(#"{"entries":[]}"#)) == ["no changes"])
  }

  @Test func jsonIsTheCompactResultExactly() {
    let text = #"{"a":1.50,"b":[true,null,"x\u00e9\n"],"c":{"d":-0}}"#
    #expect(Output.json(json(text)) == #"{"a":1.50,"b":[true,null,"xé\n"],"c":{"d":-0}}"#)
  }

  @Test func statusAndReloadAsNameValueLines() {
    let status = json(
      #"""
      {"version":"0.1.0","revision":4,"switches":6,"policies":1,"connections":1,"watches":0,
       "uptimeSeconds":253,"database":"/tmp/x/db.sqlite","socket":"/tmp/x/s.sock",
       "configDirectory":"/tmp/x/config",
       "lastReload":{"time":"2026-12-01T08:00:00.000Z","result":"refused",
                     "errors":["policy.d/a.conf:1: bad","switches.d/b.conf:2: worse"]},
       "caller":{"uid":1000,"gid":100,"administrator":false,"writesSystemSwitches":true}}
      """#)
    #expect(
      Output.status(status) == [
        "version: 0.1.0", "revision: 4", "switches: 6", "policies: 1", "connections: 1",
        "watches: 0", "uptimeSeconds: 253", "database: /tmp/x/db.sqlite",
        "socket: /tmp/x/s.sock", "configDirectory: /tmp/x/config",
        "lastReload: 2026-12-01T08:00:00.000Z refused (2 errors)",
        "  policy.d/a.conf:1: bad", "  switches.d/b.conf:2: worse",
        "caller: uid 1000, gid 100, administrator: no, writes system switches: yes",
      ])
    // A caller who is not an administrator is told only how many.
    #expect(
      Output.status(
        json(
          #"{"lastReload":{"time":"2026-12-01T08:00:00.000Z","result":"refused","errorCount":3}}"#
        )) == ["lastReload: 2026-12-01T08:00:00.000Z refused (3 errors)"])
    #expect(
      Output.status(json(#"{"lastReload":null,"future":true}"#)) == [
        "lastReload: none since switchd started", "future: yes",
      ])
    #expect(
      Output.reload(json(#"{"switches":6,"policies":1,"restartRequired":[]}"#)) == [
        "switches: 6", "policies: 1",
      ])
    #expect(
      Output.reload(json(#"{"switches":6,"policies":1,"restartRequired":["Socket","Database"]}"#))
        == [
          "switches: 6", "policies: 1",
          "restart required: Socket, Database changed; that takes effect only when switchd restarts",
        ])
  }

  @Test func whyExplainsPolicyHoldAdminDisableAndLastChange() {
    let bluetooth = Self.switchJSON(
      key: "bluetooth", label: "Bluetooth", checked: false, readOnly: "Off \"here\".",
      heldBy: "policy", disabled: "Gone.", disabledBy: "admin",
      policySource: "50-corp.conf:3", revision: 9, changedAt: "2026-11-30T04:00:00.000Z")
    var explanation = Explanation(switchObject: bluetooth)
    explanation.scan([Self.lockEntry])
    #expect(explanation.needsOlderHistory)
    explanation.scan([Self.policyEntry])
    #expect(!explanation.needsOlderHistory)
    #expect(explanation.lastChange == Self.lockEntry)
    #expect(explanation.disabledSince == Self.lockEntry)
    #expect(explanation.heldSince == Self.policyEntry)
    #expect(
      Output.why(explanation) == [
        "bluetooth (Bluetooth): off; default off.",
        "Disabled by an administrator (uid 0) since 2026-11-30T04:00:00.000Z: Gone.",
        "It keeps its value but does not apply while disabled.",
        "Read-only, held by policy (50-corp.conf:3) since 2026-11-30T03:00:00.000Z: Off \"here\".",
        "Last change: revision 9 at 2026-11-30T04:00:00.000Z by uid 0 (pid 77): disable, disabled: no→yes, disabledReason: none→\"Gone.\", disabledBy: none→admin.",
      ])
    #expect(
      explanation.json.jsonText
        == "{\"switch\":\(bluetooth.jsonText),\"lastChange\":\(Self.lockEntry.jsonText),"
        + "\"heldSince\":\(Self.policyEntry.jsonText),\"disabledSince\":\(Self.lockEntry.jsonText)}"
    )
  }

  @Test func whyOfAFreeSwitch() {
    let never = Explanation(switchObject: Self.wifi)
    #expect(
      Output.why(never) == [
        "wifi (Wi-Fi): on; default off.",
        "Neither read-only nor disabled: anyone who may write switches can change it.",
        "Last change: none; it has never changed.",
      ])
    #expect(
      never.json.jsonText
        == "{\"switch\":\(Self.wifi.jsonText),\"lastChange\":null,\"heldSince\":null,\"disabledSince\":null}"
    )
    var toggled = Explanation(switchObject: Self.wifi)
    toggled.scan([Self.toggleEntry])
    #expect(
      Output.why(toggled).last
        == "Last change: revision 43 at 2026-11-30T03:41:07.002Z by uid 1000 (pid 4321): toggle, checked: on→off."
    )
    let compacted = Explanation(
      switchObject: Self.switchJSON(
        key: "wifi", label: "Wi-Fi", checked: true, revision: 12,
        changedAt: "2026-11-30T01:00:00.000Z"))
    #expect(
      Output.why(compacted).last
        == "Last change: revision 12 at 2026-11-30T01:00:00.000Z (no longer in the retained history)."
    )
  }

  @Test func whyOfAFreeSwitchThisCallerMayNotChangeSaysWhy() throws {
    var members = try #require(Self.wifi.objectMembers)
    members.append(JSONMember("writable", .bool(false)))
    members.append(
      JSONMember(
        "writableReason",
        .string(
          "You may not change wifi: only members of the group staff may change system switches."
        )))
    #expect(
      Output.why(Explanation(switchObject: .object(members)))[1]
        == "Neither read-only nor disabled. You may not change wifi: only members of the group "
        + "staff may change system switches.")
  }

  @Test func whyOfAnInvalidSwitchEndsTheCommandsReasonBeforeTheHint() throws {
    var members = try #require(Self.wifi.objectMembers)
    members.append(JSONMember("invalid", .bool(true)))
    members.append(JSONMember("invalidReason", .string("rfkill: no wlan device")))
    #expect(
      Output.why(Explanation(switchObject: .object(members)))[2]
        == "Invalid: its apply command could not make the value real: rfkill: no wlan device."
        + " `switchctl apply wifi` tries again.")
  }

  @Test func whySinceIsWhenTheHolderTookHoldNotTheLatestRelock() {
    let locked = Self.switchJSON(
      key: "wifi", label: "Wi-Fi", checked: true, readOnly: "New reason.", heldBy: "admin")
    let state = #""checked":true,"disabled":false,"disabledReason":null,"disabledBy":null"#
    let relock = json(
      #"{"revision":5,"time":"T5","key":"wifi","cause":"lock","fields":["readOnlyReason"],"#
        + #""actor":{"uid":1,"gid":1,"pid":1},"state":{"readOnly":true,"readOnlyReason":"New reason.","heldBy":"admin","#
        + state + #"},"previous":{"readOnly":true,"readOnlyReason":"Old.","heldBy":"admin","#
        + state + "}}")
    let lock = json(
      #"{"revision":4,"time":"T4","key":"wifi","cause":"lock","fields":["readOnly","readOnlyReason","heldBy"],"#
        + #""actor":{"uid":2,"gid":2,"pid":2},"state":{"readOnly":true,"readOnlyReason":"Old.","heldBy":"admin","#
        + state + #"},"previous":{"readOnly":false,"readOnlyReason":null,"heldBy":null,"# + state
        + "}}")
    var explanation = Explanation(switchObject: locked)
    explanation.scan([relock, lock])
    #expect(explanation.lastChange == relock)
    #expect(explanation.heldSince == lock)
    #expect(
      Output.why(explanation)[1]
        == "Read-only, held by an administrator (uid 2) since T4: New reason.")
  }
}
