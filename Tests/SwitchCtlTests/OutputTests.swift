import SwitchProtocol
import Testing

@testable import SwitchCtl

/// Golden text for each command's output, from canned daemon JSON decoded
/// as switchctl decodes what the daemon sends.
@Suite struct OutputTests {
  /// `json` decoded; a fixture the decoder refuses fails the test.
  static func sent<T: WireDecodable>(_ json: JSONValue, as type: T.Type = T.self) throws -> T {
    try T(wire: json)
  }

  static func switchJSON(
    key: String, label: String, checked: Bool, readOnly: String? = nil,
    heldBy: String? = nil, disabled: String? = nil, disabledBy: String? = nil,
    invalidReason: String? = nil, policySource: String? = nil, revision: Int = 0,
    changedAt: String? = nil, writableReason: String? = nil, scope: String = "system"
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
      JSONMember("invalid", .bool(invalidReason != nil)),
      JSONMember("invalidReason", text(invalidReason)),
      JSONMember("checkedIcon", .string("")), JSONMember("uncheckedIcon", .string("")),
      JSONMember("group", .string("")), JSONMember("order", .int(0)),
      JSONMember("policySource", text(policySource)),
      JSONMember("effective", .bool(checked && disabledBy == nil)),
      JSONMember("scope", .string(scope)), JSONMember("user", .null),
      JSONMember("revision", .int(Int64(revision))), JSONMember("changedAt", text(changedAt)),
      JSONMember("writable", .bool(writableReason == nil)),
      JSONMember("writableReason", text(writableReason)),
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

  @Test func listAlignsColumnsAndNotesHolds() throws {
    let result = JSONValue.object([
      JSONMember("revision", .int(3)),
      JSONMember(
        "switches",
        .array([Self.airplaneBoth, Self.bluetoothHeld, Self.marketingDisabled, Self.wifi])),
    ])
    #expect(
      Output.list(try Self.sent(result)) == [
        "airplane-mode    on   Airplane mode     (disabled by policy: Grounded.) (read-only by admin: Flight.)",
        "bluetooth        off  Bluetooth         (read-only by policy: Bluetooth is turned off by your organisation.)",
        "email.marketing  on   Marketing emails  (disabled by admin: Gone.)",
        "wifi             on   Wi-Fi",
      ])
    let none = try Self.sent(json(#"{"revision":0,"switches":[]}"#)) as ListResult
    #expect(Output.list(none) == ["no switches"])
    #expect(Output.list(none, prefix: "nosuch") == ["no switch key starts with nosuch"])
    #expect(Output.list(none, prefix: "nosuch.*") == ["no switch key starts with nosuch."])
    #expect(Output.list(none, prefix: "*") == ["no switches"])
  }

  @Test func getPrintsValueAndNotesDisabledFirst() throws {
    #expect(Output.get(try Self.sent(Self.wifi)) == "on")
    #expect(
      Output.get(try Self.sent(Self.bluetoothHeld))
        == "off (read-only by policy: Bluetooth is turned off by your organisation.)")
    #expect(Output.get(try Self.sent(Self.marketingDisabled)) == "on (disabled by admin: Gone.)")
    #expect(
      Output.get(try Self.sent(Self.airplaneBoth))
        == "on (disabled by policy: Grounded.) (read-only by admin: Flight.)")
    let noReason = Self.switchJSON(key: "k", label: "", checked: false, heldBy: "admin")
    #expect(Output.get(try Self.sent(noReason)) == "off (read-only by admin)")
  }

  @Test func controlCharactersInFreeTextAreEscaped() throws {
    let sneaky = Self.switchJSON(
      key: "wifi", label: "Wi\u{1B}[2J", checked: true, readOnly: "line one\nwifi  off",
      heldBy: "admin")
    #expect(Output.get(try Self.sent(sneaky)) == "on (read-only by admin: line one\\nwifi  off)")
    let listed = JSONValue.object([
      JSONMember("revision", .int(1)), JSONMember("switches", .array([sneaky])),
    ])
    #expect(
      Output.list(try Self.sent(listed)) == [
        "wifi  on  Wi\\u001B[2J  (read-only by admin: line one\\nwifi  off)"
      ])
    #expect(Output.printable("Café: ok\t") == "Café: ok\\t")
    // A bidirectional override would show the rest of the line reversed.
    #expect(Output.printable("ok \u{202E}nimda") == "ok \\u202Enimda")
    #expect(Output.printable("a\u{2066}b\u{2069}") == "a\\u2066b\\u2069")
  }

  /// After the question of a tried change: one reading of the two answers
  /// gives the line and the exit status (`TriedOutcome`). A revert that
  /// found the value already back says so, not "unchanged"; a "no" whose
  /// value a hold keeps is not called reverted.
  @Test func theOutcomeOfATriedChangeIsReadOnce() throws {
    func result(_ changed: Bool, checked: Bool) throws -> WriteResult {
      try Self.sent(
        .object([
          JSONMember("changed", .bool(changed)),
          JSONMember("switch", Self.switchJSON(key: "wifi", label: "Wi-Fi", checked: checked)),
        ]))
    }
    let tried = try result(true, checked: false)
    func line(_ keep: Bool, _ settled: WriteResult) -> (String, Bool) {
      let outcome = Output.TriedOutcome(keep: keep, tried: tried, settled: settled)
      return (Output.settled(outcome, settled), outcome.stays)
    }
    let cases: [(Bool, WriteResult, String, Bool)] = [
      (false, try result(true, checked: true), "reverted: wifi: on", false),
      (
        false, try result(false, checked: true),
        "reverted: wifi: on (reverted already, at its deadline or by an administrator)", false
      ),
      // A "yes" that came after the deadline (switchd restarted meanwhile).
      (
        true, try result(false, checked: true),
        "reverted: wifi: on (reverted already, at its deadline or by an administrator)", false
      ),
      (true, try result(true, checked: false), "kept: wifi: off", true),
      // Confirmed from another connection first: nothing pending, the value stays.
      (true, try result(false, checked: false), "kept: wifi: off (confirmed already)", true),
      // A hold that came since keeps the value: the try ends, the value stays.
      (
        false, try result(true, checked: false), "not reverted: wifi: off (a hold keeps the value)",
        true
      ),
      (false, try result(false, checked: false), "not reverted: wifi: off (unchanged)", true),
    ]
    for (keep, settled, expected, stays) in cases {
      let (printed, exitsZero) = line(keep, settled)
      #expect(printed == expected)
      #expect(exitsZero == stays, "\(expected)")
    }
  }

  @Test func writePrintsNewValueAndUnchanged() throws {
    let changed = JSONValue.object([
      JSONMember("changed", .bool(true)), JSONMember("switch", Self.wifi),
    ])
    let unchanged = JSONValue.object([
      JSONMember("changed", .bool(false)), JSONMember("switch", Self.wifi),
    ])
    let locked = JSONValue.object([
      JSONMember("changed", .bool(true)), JSONMember("switch", Self.airplaneBoth),
    ])
    #expect(Output.write(try Self.sent(changed)) == "wifi: on")
    #expect(Output.write(try Self.sent(unchanged)) == "wifi: on (unchanged)")
    #expect(
      Output.write(try Self.sent(locked))
        == "airplane-mode: on (disabled by policy: Grounded.) (read-only by admin: Flight.)")
  }

  static let toggleEntry = json(
    #"""
    {"revision":43,"time":"2026-11-30T03:41:07.002Z","key":"wifi","user":null,"cause":"toggle",
     "fields":["checked"],"actor":{"uid":1000,"gid":1000,"pid":4321},
     "state":{"checked":false,"readOnly":false,"readOnlyReason":null,"heldBy":null,
              "disabled":false,"disabledReason":null,"disabledBy":null,"invalid":false,"invalidReason":null},
     "previous":{"checked":true,"readOnly":false,"readOnlyReason":null,"heldBy":null,
                 "disabled":false,"disabledReason":null,"disabledBy":null,"invalid":false,"invalidReason":null}}
    """#)

  static let policyEntry = json(
    #"""
    {"revision":7,"time":"2026-11-30T03:00:00.000Z","key":"bluetooth","user":null,"cause":"policy",
     "fields":["checked","readOnly","readOnlyReason","heldBy"],
     "actor":{"uid":null,"gid":null,"pid":null,"source":"policy"},
     "state":{"checked":false,"readOnly":true,"readOnlyReason":"Off \"here\".","heldBy":"policy",
              "disabled":false,"disabledReason":null,"disabledBy":null,"invalid":false,"invalidReason":null},
     "previous":{"checked":true,"readOnly":false,"readOnlyReason":null,"heldBy":null,
                 "disabled":false,"disabledReason":null,"disabledBy":null,"invalid":false,"invalidReason":null}}
    """#)

  static let lockEntry = json(
    #"""
    {"revision":9,"time":"2026-11-30T04:00:00.000Z","key":"bluetooth","user":null,"cause":"disable",
     "fields":["disabled","disabledReason","disabledBy"],"actor":{"uid":0,"gid":0,"pid":77},
     "state":{"checked":false,"readOnly":true,"readOnlyReason":"Off \"here\".","heldBy":"policy",
              "disabled":true,"disabledReason":"Gone.","disabledBy":"admin","invalid":false,"invalidReason":null},
     "previous":{"checked":false,"readOnly":true,"readOnlyReason":"Off \"here\".","heldBy":"policy",
                 "disabled":false,"disabledReason":null,"disabledBy":null,"invalid":false,"invalidReason":null}}
    """#)

  @Test func historyLines() throws {
    let one = JSONValue.object([JSONMember("entries", .array([Self.toggleEntry]))])
    #expect(
      Output.history(try Self.sent(one)) == [
        "43  2026-11-30T03:41:07.002Z  wifi  toggle  checked: on→off  by uid 1000 (pid 4321)"
      ])
    let several = JSONValue.object([
      JSONMember("entries", .array([Self.toggleEntry, Self.lockEntry, Self.policyEntry]))
    ])
    #expect(
      Output.history(try Self.sent(several)) == [
        "43  2026-11-30T03:41:07.002Z  wifi       toggle   checked: on→off  by uid 1000 (pid 4321)",
        "9   2026-11-30T04:00:00.000Z  bluetooth  disable  disabled: no→yes, disabledReason: none→\"Gone.\", disabledBy: none→admin  by uid 0 (pid 77)",
        "7   2026-11-30T03:00:00.000Z  bluetooth  policy   checked: on→off, readOnly: no→yes, readOnlyReason: none→\"Off \\\"here\\\".\", heldBy: none→policy  by policy",
      ])
  }

  /// A `changed` event's params, decoded as the watcher does.
  static func event(_ params: JSONValue) throws -> EntryObject {
    try sent(params, as: ChangedEvent.self).change
  }

  @Test func watchLines() throws {
    var event = Self.toggleEntry.objectMembers!
    event.insert(JSONMember("watch", .string("w1")), at: 0)
    #expect(Output.event(try Self.event(.object(event))) == "43 wifi off (toggle by uid 1000)")
    // One user's value says whose.
    var users = event.filter { $0.name != "user" }
    users.append(JSONMember("user", .int(1001)))
    #expect(
      Output.event(try Self.event(.object(users))) == "43 wifi[uid 1001] off (toggle by uid 1000)")
    #expect(
      Output.history(try Self.sent(.object([JSONMember("entries", .array([.object(users)]))])))[0]
        .contains("  wifi[uid 1001]  toggle  "))
    #expect(
      Output.event(try Self.sent(Self.policyEntry))
        == "7 bluetooth off (policy) (read-only by policy: Off \"here\".)")
    #expect(
      Output.event(try Self.sent(Self.lockEntry))
        == "9 bluetooth off (disable by uid 0) (disabled by admin: Gone.) (read-only by policy: Off \"here\".)"
    )
  }

  /// Another user's change, as the daemon shows it to someone who does not
  /// administer: null ids and no source. "by ?" told a person nothing.
  @Test func aHiddenActorIsAnotherUser() throws {
    let withoutActor = Self.toggleEntry.objectMembers!.filter { $0.name != "actor" }
    let hidden =
      withoutActor + [JSONMember("actor", json(#"{"uid":null,"gid":null,"pid":null}"#))]
    let entry = JSONValue.object(hidden)
    #expect(Output.event(try Self.sent(entry)) == "43 wifi off (toggle by another user)")
    #expect(
      Output.history(try Self.sent(.object([JSONMember("entries", .array([entry]))]))) == [
        "43  2026-11-30T03:41:07.002Z  wifi  toggle  checked: on→off  by another user"
      ])
    var explanation = Explanation(switchObject: try Sent(Self.wifi))
    explanation.scan([try Sent(entry)])
    #expect(
      Output.why(explanation).last
        == "Last change: revision 43 at 2026-11-30T03:41:07.002Z by another user: toggle, "
        + "checked: on→off.")
    // A policy's actor has null ids too, and its source says who.
    #expect(Output.actor(try Self.sent(Self.policyEntry["actor"]!), withPID: true) == "policy")
    // An actor that is not there at all is not invented: the entry is refused.
    #expect(throws: WireDecodingError.self) {
      try Self.sent(.object(withoutActor), as: EntryObject.self)
    }
  }

  @Test func anEmptyHistoryPageSaysSo() throws {
    #expect(Output.history(try Self.sent(json(#"{"entries":[]}"#))) == ["no changes"])
  }

  @Test func jsonIsTheCompactResultExactly() {
    let text = #"{"a":1.50,"b":[true,null,"x\u00e9\n"],"c":{"d":-0}}"#
    #expect(Output.json(json(text)) == #"{"a":1.50,"b":[true,null,"xé\n"],"c":{"d":-0}}"#)
  }

  /// A whole `status` result with this `lastReload` and what follows it.
  static func status(lastReload: String, more: String = "") -> JSONValue {
    json(
      #"""
      {"version":"0.1.0","revision":4,"switches":6,"policies":1,"connections":1,"watches":0,
       "uptimeSeconds":253,"database":"/tmp/x/db.sqlite","socket":"/tmp/x/s.sock",
       "configDirectory":"/tmp/x/config","lastReload":\#(lastReload),"reconciling":0,
       "caller":{"uid":1000,"gid":100,"administrator":false,"writesSystemSwitches":true}\#(more)}
      """#)
  }

  static func statusLines(_ result: JSONValue) throws -> [String] {
    Output.status(try sent(result), sent: result)
  }

  @Test func statusAndReloadAsNameValueLines() throws {
    let status = Self.status(
      lastReload: #"""
        {"time":"2026-12-01T08:00:00.000Z","result":"refused","errorCount":2,
         "errors":["policy.d/a.conf:1: bad","switches.d/b.conf:2: worse"]}
        """#)
    #expect(
      try Self.statusLines(status) == [
        "version: 0.1.0", "revision: 4", "switches: 6", "policies: 1", "connections: 1",
        "watches: 0", "uptimeSeconds: 253", "database: /tmp/x/db.sqlite",
        "socket: /tmp/x/s.sock", "configDirectory: /tmp/x/config",
        "lastReload: 2026-12-01T08:00:00.000Z refused (2 errors)",
        "  policy.d/a.conf:1: bad", "  switches.d/b.conf:2: worse", "reconciling: 0",
        "caller: uid 1000, gid 100, administrator: no, writes system switches: yes",
      ])
    // A caller who is not an administrator is told only how many.
    let counted = Self.status(
      lastReload: #"{"time":"2026-12-01T08:00:00.000Z","result":"refused","errorCount":3}"#)
    #expect(
      try Self.statusLines(counted).filter { $0.hasPrefix("lastReload") || $0.hasPrefix("  ") }
        == ["lastReload: 2026-12-01T08:00:00.000Z refused (3 errors)"])
    // Members a newer daemon adds print too, in the order sent.
    #expect(
      try Self.statusLines(Self.status(lastReload: "null", more: #","future":true"#)).suffix(4)
        == [
          "lastReload: none since switchd started", "reconciling: 0",
          "caller: uid 1000, gid 100, administrator: no, writes system switches: yes",
          "future: yes",
        ])
    #expect(
      Output.reload(try Self.sent(json(#"{"switches":6,"policies":1,"restartRequired":[]}"#)))
        == ["switches: 6", "policies: 1"])
    #expect(
      Output.reload(
        try Self.sent(
          json(#"{"switches":6,"policies":1,"restartRequired":["Socket","Database"]}"#)))
        == [
          "switches: 6", "policies: 1",
          "restart required: Socket, Database changed; that takes effect only when switchd restarts",
        ])
  }

  @Test func whySaysWhenAHoldEndsByItself() throws {
    let held = Self.switchJSON(
      key: "bluetooth", label: "Bluetooth", checked: false, readOnly: "Exam.", heldBy: "policy",
      policySource: "50-exam.conf:1")
    let end = "2099-03-28T02:00:00.000Z"
    let timed = JSONValue.object(held.objectMembers! + [JSONMember("readOnlyUntil", .string(end))])
    let lines = Output.why(Explanation(switchObject: try Sent(timed)))
    let clock = Output.localClock(try #require(Timestamp.milliseconds(end)))
    #expect(lines.contains("Held until \(clock) (schedule)."), "\(lines)")
  }

  @Test func whyExplainsPolicyHoldAdminDisableAndLastChange() throws {
    let bluetooth = Self.switchJSON(
      key: "bluetooth", label: "Bluetooth", checked: false, readOnly: "Off \"here\".",
      heldBy: "policy", disabled: "Gone.", disabledBy: "admin",
      policySource: "50-corp.conf:3", revision: 9, changedAt: "2026-11-30T04:00:00.000Z")
    var explanation = Explanation(switchObject: try Sent(bluetooth))
    explanation.scan([try Sent(Self.lockEntry)])
    #expect(explanation.needsOlderHistory)
    explanation.scan([try Sent(Self.policyEntry)])
    #expect(!explanation.needsOlderHistory)
    #expect(explanation.lastChange?.json == Self.lockEntry)
    #expect(explanation.disabledSince?.json == Self.lockEntry)
    #expect(explanation.heldSince?.json == Self.policyEntry)
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

  /// A policy that disables and one that holds: `policySource` is the
  /// disabling one's (disabled wins), so the hold is not said to be it.
  @Test func whyDoesNotNameTheDisablingFileForAHold() throws {
    let both = Self.switchJSON(
      key: "bluetooth", label: "Bluetooth", checked: false, readOnly: "Held.", heldBy: "policy",
      disabled: "Lab.", disabledBy: "policy", policySource: "60-lab.conf:3")
    let lines = Output.why(Explanation(switchObject: try Sent(both)))
    #expect(lines.contains("Disabled by policy (60-lab.conf:3): Lab."), "\(lines)")
    #expect(lines.contains("Read-only, held by policy: Held."), "\(lines)")
  }

  /// Each user's own value: no right to write switches is asked for it.
  @Test func whyOfAFreeUserScopeSwitch() throws {
    let marketing = Self.switchJSON(
      key: "email.marketing", label: "Marketing", checked: true, scope: "user")
    let lines = Output.why(Explanation(switchObject: try Sent(marketing)))
    #expect(lines.contains("Neither read-only nor disabled: each user sets their own value of it."))
  }

  /// A wide label takes two columns a character: the columns after it
  /// line up on a terminal.
  @Test func tableAlignsByTerminalColumns() {
    let lines = Output.table([["日本語", "on", "x"], ["abc", "off", "y"], ["e\u{301}", "on", "z"]])
    #expect(lines == ["日本語  on   x", "abc     off  y", "é       on   z"])
    #expect(displayWidth("日本語") == 6 && displayWidth("e\u{301}") == 1)
    #expect(displayWidth("🚀") == 2 && displayWidth("a\u{AD}b") == 3)
  }

  @Test func whyOfAFreeSwitch() throws {
    let never = Explanation(switchObject: try Sent(Self.wifi))
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
    var toggled = Explanation(switchObject: try Sent(Self.wifi))
    toggled.scan([try Sent(Self.toggleEntry)])
    #expect(
      Output.why(toggled).last
        == "Last change: revision 43 at 2026-11-30T03:41:07.002Z by uid 1000 (pid 4321): toggle, checked: on→off."
    )
    let compacted = Explanation(
      switchObject: try Sent(
        Self.switchJSON(
          key: "wifi", label: "Wi-Fi", checked: true, revision: 12,
          changedAt: "2026-11-30T01:00:00.000Z")))
    #expect(
      Output.why(compacted).last
        == "Last change: revision 12 at 2026-11-30T01:00:00.000Z (no longer in the retained history)."
    )
  }

  @Test func whyOfAFreeSwitchThisCallerMayNotChangeSaysWhy() throws {
    let notMine = Self.switchJSON(
      key: "wifi", label: "Wi-Fi", checked: true,
      writableReason:
        "You may not change wifi: only members of the group staff may change system switches.")
    #expect(
      Output.why(Explanation(switchObject: try Sent(notMine)))[1]
        == "Neither read-only nor disabled. You may not change wifi: only members of the group "
        + "staff may change system switches.")
  }

  @Test func whyOfAnInvalidSwitchEndsTheCommandsReasonBeforeTheHint() throws {
    let invalid = Self.switchJSON(
      key: "wifi", label: "Wi-Fi", checked: true, invalidReason: "rfkill: no wlan device")
    #expect(
      Output.why(Explanation(switchObject: try Sent(invalid)))[2]
        == "Invalid: its apply command could not make the value real: rfkill: no wlan device."
        + " `switchctl apply wifi` tries again.")
  }

  @Test func whySinceIsWhenTheHolderTookHoldNotTheLatestRelock() throws {
    let locked = Self.switchJSON(
      key: "wifi", label: "Wi-Fi", checked: true, readOnly: "New reason.", heldBy: "admin")
    let state =
      #""checked":true,"disabled":false,"disabledReason":null,"disabledBy":null,"#
      + #""invalid":false,"invalidReason":null"#
    let (t4, t5) = ("2026-11-30T04:00:00.000Z", "2026-11-30T05:00:00.000Z")
    let relock = json(
      #"{"revision":5,"time":"\#(t5)","key":"wifi","user":null,"cause":"lock","fields":["readOnlyReason"],"#
        + #""actor":{"uid":1,"gid":1,"pid":1},"state":{"readOnly":true,"readOnlyReason":"New reason.","heldBy":"admin","#
        + state + #"},"previous":{"readOnly":true,"readOnlyReason":"Old.","heldBy":"admin","#
        + state + "}}")
    let lock = json(
      #"{"revision":4,"time":"\#(t4)","key":"wifi","user":null,"cause":"lock","fields":["readOnly","readOnlyReason","heldBy"],"#
        + #""actor":{"uid":2,"gid":2,"pid":2},"state":{"readOnly":true,"readOnlyReason":"Old.","heldBy":"admin","#
        + state + #"},"previous":{"readOnly":false,"readOnlyReason":null,"heldBy":null,"# + state
        + "}}")
    var explanation = Explanation(switchObject: try Sent(locked))
    explanation.scan([try Sent(relock), try Sent(lock)])
    #expect(explanation.lastChange?.json == relock)
    #expect(explanation.heldSince?.json == lock)
    #expect(
      Output.why(explanation)[1]
        == "Read-only, held by an administrator (uid 2) since \(t4): New reason.")
  }
}
