import SwitchCore
import Testing

@testable import SwitchProtocol

/// What the daemon's encoders write decodes, with the decoders switchctl
/// uses, to the value encoded: for every result and the event. The golden
/// tests fix the bytes; these check that what one side writes the other reads.
@Suite struct WireRoundTripTests {
  static func decoded<T: WireDecodable>(
    as type: T.Type = T.self, _ write: (inout JSONWriter) -> Void
  ) throws -> T {
    var w = JSONWriter()
    write(&w)
    return try T(wire: JSONParser.parse(w.bytes, maxDepth: 64))
  }

  static let wifi = SwitchDefinition(
    key: "wifi", label: "Wi-Fi", description: "Wireless networks.", defaultChecked: true,
    checkedIcon: "wifi", uncheckedIcon: "wifi_off", group: "Connectivity", order: 3)
  static let marketing = SwitchDefinition(
    key: "email.marketing", label: nil, description: "", defaultChecked: false, order: 7,
    scope: .user)
  static let held = SwitchState(
    checked: true, readOnly: true, readOnlyReason: "Held \"here\".", heldBy: .policy,
    disabled: true, disabledReason: "Airplane mode is on", disabledBy: .dependency, invalid: true,
    invalidReason: "rfkill: no device")
  static let policy = SwitchCore.SourceLocation(file: "policy.d/50-corp.conf", line: 4)
  static let refusal = Writability.refused(
    .readOnly(key: "email.marketing", reason: "Held.", heldBy: .admin))

  /// The Switch object `WireEncoding.writeSwitch` writes for these.
  static func switchObject(
    _ d: SwitchDefinition, _ record: SwitchRecord, policySource: SwitchCore.SourceLocation? = nil,
    user: UInt32? = nil, writable: Writability = .writable
  ) -> SwitchObject {
    SwitchObject(
      key: d.key, label: d.label ?? "", description: d.description,
      defaultChecked: d.defaultChecked, state: StateObject(record.state),
      checkedIcon: d.checkedIcon, uncheckedIcon: d.uncheckedIcon, group: d.group, order: d.order,
      policySource: policySource?.policySourceText, effective: record.state.isOnAndInEffect,
      scope: d.scope.wireName, user: user, revision: record.revision,
      changedAt: record.changedAt, writable: writable == .writable,
      writableReason: writable.reason, observed: nil)
  }

  static func writeSwitch(
    _ w: inout JSONWriter, _ d: SwitchDefinition, _ record: SwitchRecord,
    policySource: SwitchCore.SourceLocation? = nil, user: UInt32? = nil,
    writable: Writability = .writable
  ) {
    WireEncoding.writeSwitch(
      &w, template: SwitchTemplate(d), record: record, policySource: policySource, user: user,
      writable: writable)
  }

  static let cases:
    [(SwitchDefinition, SwitchRecord, SwitchCore.SourceLocation?, UInt32?, Writability)] = [
      (wifi, SwitchRecord(key: "wifi", state: SwitchState(checked: false)), nil, nil, .writable),
      (
        wifi, SwitchRecord(key: "wifi", state: held, revision: 42, changedAt: 1_796_010_067_002),
        policy, nil, .writable
      ),
      (
        marketing,
        SwitchRecord(key: "email.marketing", state: SwitchState(checked: true), revision: 9),
        nil, 1000, refusal
      ),
      (marketing, SwitchRecord(key: "email.marketing", state: held), policy, nil, refusal),
    ]

  @Test func switchObjects() throws {
    for (d, record, source, user, writable) in Self.cases {
      let decoded = try Self.decoded(as: SwitchObject.self) {
        Self.writeSwitch(&$0, d, record, policySource: source, user: user, writable: writable)
      }
      #expect(
        decoded
          == Self.switchObject(d, record, policySource: source, user: user, writable: writable))
    }
  }

  @Test func listAndWatchResults() throws {
    let encoded = Self.cases.map { d, record, source, user, _ in
      var w = JSONWriter()
      WireEncoding.writeSwitch(
        &w, template: SwitchTemplate(d), record: record, policySource: source, user: user)
      return w.bytes
    }
    let items = zip(encoded, Self.cases).map { (encoded: $0, writable: $1.4) }
    let switches = Self.cases.map { d, record, source, user, writable in
      Self.switchObject(d, record, policySource: source, user: user, writable: writable)
    }
    let list = try Self.decoded(as: ListResult.self) {
      ResultEncoding.writeList(&$0, revision: 42) { ResultEncoding.writeSwitchArray(&$0, items) }
    }
    #expect(list == ListResult(revision: 42, switches: switches))
    let watch = try Self.decoded(as: WatchResult.self) {
      ResultEncoding.writeWatch(&$0, watch: "w1", revision: 42) {
        ResultEncoding.writeSwitchArray(&$0, items)
      }
    }
    #expect(watch == WatchResult(watch: "w1", revision: 42, switches: switches))
    let replaying = try Self.decoded(as: WatchResult.self) {
      ResultEncoding.writeReplayingWatch(&$0, watch: "w2", revision: 7)
    }
    #expect(replaying == WatchResult(watch: "w2", revision: 7, switches: nil))
  }

  @Test func writeResults() throws {
    for changed in [true, false] {
      let (d, record, source, user, writable) = Self.cases[1]
      let result = try Self.decoded(as: WriteResult.self) {
        ResultEncoding.writeWrite(&$0, changed: changed) {
          Self.writeSwitch(&$0, d, record, policySource: source, user: user, writable: writable)
        }
      }
      #expect(
        result
          == WriteResult(
            changed: changed,
            switchObject: Self.switchObject(
              d, record, policySource: source, user: user, writable: writable)))
    }
  }

  static let changes: [Change] = [
    Change(
      revision: 43, time: 1_796_010_067_002, key: "wifi", cause: .toggle,
      actor: .peer(uid: 1000, gid: 100, pid: 4321), state: SwitchState(checked: false),
      previous: SwitchState(checked: true)),
    Change(
      revision: 44, time: 1_796_010_068_000, key: "wifi", cause: .policy, actor: .policy,
      state: held, previous: SwitchState(checked: false)),
    Change(
      revision: 45, time: 0, key: "email.marketing", cause: .set,
      actor: .peer(uid: 1001, gid: 1001, pid: 9), state: SwitchState(checked: true),
      previous: SwitchState(checked: false), user: 1001),
    Change(
      revision: 46, time: 1_796_010_069_000, key: "wifi", cause: .reconcile, actor: .reconcile,
      state: held, previous: held.applied(failure: nil)),
  ]

  /// The Entry `WireEncoding.writeEntry` writes for `change`.
  static func entry(_ change: Change, showingActor: Bool = true) -> EntryObject {
    let actor: ActorObject
    switch change.actor {
    case .peer(let uid, let gid, let pid) where showingActor:
      actor = ActorObject(uid: uid, gid: gid, pid: pid, source: nil)
    default:
      actor = ActorObject(uid: nil, gid: nil, pid: nil, source: change.actor.source)
    }
    return EntryObject(
      revision: change.revision, time: change.time, key: change.key, user: change.user,
      cause: change.cause.wireName, fields: change.fields.map(\.wireName), actor: actor,
      state: StateObject(change.state), previous: StateObject(change.previous))
  }

  @Test func historyResults() throws {
    for showing in [true, false] {
      let history = try Self.decoded(as: HistoryResult.self) {
        ResultEncoding.writeHistory(&$0, entries: Self.changes) { _ in showing }
      }
      #expect(
        history
          == HistoryResult(entries: Self.changes.map { Self.entry($0, showingActor: showing) }))
    }
    #expect(
      try Self.decoded(as: HistoryResult.self) { ResultEncoding.writeHistory(&$0, entries: []) }
        == HistoryResult(entries: []))
  }

  /// The line a watch receives, read as switchctl reads it.
  @Test func changedEvents() throws {
    for change in Self.changes {
      for showing in [true, false] {
        var members = JSONWriter()
        WireEncoding.writeChangeMembers(&members, change, showingActor: showing)
        var line = JSONWriter()
        WireEncoding.writeChangedEvent(&line, watch: "w3", members: members.bytes)
        guard case .notification(let method, let params)? = ClientMessage.parse(line.bytes) else {
          Issue.record("not a notification: \(String(decoding: line.bytes, as: UTF8.self))")
          continue
        }
        #expect(method == WireField.changedNotification)
        #expect(
          try ChangedEvent(wire: params)
            == ChangedEvent(watch: "w3", change: Self.entry(change, showingActor: showing)))
      }
    }
  }

  @Test func backupAndReloadResults() throws {
    #expect(
      try Self.decoded { ResultEncoding.writeBackup(&$0, revision: 42, bytes: 9216) }
        == BackupResult(revision: 42, bytes: 9216))
    for summary in [
      ReloadSummary(switches: 5, policies: 2),
      ReloadSummary(switches: 1, policies: 0, restartRequired: ["Socket", "Database"]),
    ] {
      #expect(try Self.decoded { ResultEncoding.writeReload(&$0, summary) } == summary)
    }
  }

  @Test func statusResults() throws {
    let refused = ReloadRecord(
      time: 1_796_010_067_002, result: .refused, errors: ["a.conf:1: x", "b.conf:2: y"])
    for reload in [nil, ReloadRecord(time: 1_796_010_067_002, result: .applied), refused] {
      var report = ResultGoldenTests.status(lastReload: reload, administrator: true)
      report.readBack = [
        ReadBackReport(
          key: "radio", reapplied: 2, lastReapplied: 1_796_010_067_002, systemHad: false),
        ReadBackReport(key: "wifi", watchProblem: "gone"),
      ]
      #expect(try Self.decoded { ResultEncoding.writeStatus(&$0, report) } == report)
    }
    // Only an administrator is sent the errors; anyone their count.
    var report = ResultGoldenTests.status(lastReload: refused)
    let decoded = try Self.decoded(as: StatusReport.self) {
      ResultEncoding.writeStatus(&$0, report)
    }
    report.lastReload?.errors = []
    #expect(decoded == report)
    #expect(decoded.lastReload?.errorCount == 2)
  }
}

/// What the decoders do with what no encoder of this build writes.
@Suite struct WireDecodingTests {
  static func state(_ text: String) throws -> StateObject {
    try StateObject(wire: JSONParser.parse(text, maxDepth: 8))
  }

  static let free =
    #""checked":true,"readOnly":false,"readOnlyReason":null,"heldBy":null,"#
    + #""disabled":false,"disabledReason":null,"disabledBy":null,"invalid":false"#

  @Test func aMissingOrMistypedMemberIsNamed() throws {
    #expect(
      throws: WireDecodingError(
        description: #"a State has no member "invalidReason" that is a string or null"#)
    ) { try Self.state("{" + Self.free + "}") }
    #expect(
      throws: WireDecodingError(
        description: #"a State has no member "invalidReason" that is a string or null"#)
    ) { try Self.state("{" + Self.free + #","invalidReason":1}"#) }
    #expect(throws: WireDecodingError(description: "a State is not a JSON object")) {
      try Self.state("[]")
    }
    #expect(
      throws: WireDecodingError(
        description: #"the backup result has no member "bytes" that is a whole number"#)
    ) { try BackupResult(wire: JSONParser.parse(#"{"revision":1,"bytes":1.5}"#, maxDepth: 8)) }
    // A uid that does not fit is mistyped too.
    #expect(throws: WireDecodingError.self) {
      try ActorObject(
        wire: JSONParser.parse(#"{"uid":-1,"gid":null,"pid":null}"#, maxDepth: 8))
    }
  }

  /// docs/protocol.md "Writing a client that lasts": members a newer daemon
  /// adds are read past, and holders and causes it adds are kept as sent.
  @Test func unknownMembersAreIgnoredAndUnknownWordsKept() throws {
    let state =
      #"{"checked":true,"readOnly":true,"readOnlyReason":null,"heldBy":"someone","#
      + #""disabled":false,"disabledReason":null,"disabledBy":null,"invalid":false,"#
      + #""invalidReason":null,"future":{"x":1}}"#
    #expect(try Self.state(state).heldBy == "someone")
    let entry = try EntryObject(
      wire: JSONParser.parse(
        #"{"revision":5,"time":"2026-11-30T03:41:07.002Z","key":"wifi","user":null,"#
          + #""cause":"drift","fields":["checked","colour"],"#
          + #""actor":{"uid":null,"gid":null,"pid":null,"source":"drift"},"#
          + #""state":\#(state),"previous":\#(state),"since":"later"}"#, maxDepth: 8))
    #expect(entry.cause == "drift")
    #expect(entry.fields == ["checked", "colour"])
    #expect(entry.actor == ActorObject(uid: nil, gid: nil, pid: nil, source: "drift"))
  }

  /// Keys and causes are printed as they are (switchctl's rows), so one
  /// that the key grammar or the protocol's names do not allow (a
  /// terminal escape from whatever answers at the socket) is refused.
  @Test func aKeyOrCauseThatCannotBeOneIsRefused() throws {
    let state =
      #"{"checked":true,"readOnly":false,"readOnlyReason":null,"heldBy":null,"#
      + #""disabled":false,"disabledReason":null,"disabledBy":null,"invalid":false,"#
      + #""invalidReason":null}"#
    func entry(key: String, cause: String) throws -> EntryObject {
      try EntryObject(
        wire: JSONParser.parse(
          #"{"revision":5,"time":"2026-11-30T03:41:07.002Z","key":"\#(key)","user":null,"#
            + #""cause":"\#(cause)","fields":["checked"],"#
            + #""actor":{"uid":1,"gid":1,"pid":1},"#
            + #""state":\#(state),"previous":\#(state)}"#, maxDepth: 8))
    }
    #expect(try entry(key: "notifications.chat", cause: "toggle").key == "notifications.chat")
    #expect(throws: WireDecodingError.self) {
      try entry(key: #"wifi\u001b]0;PWNED\u0007"#, cause: "toggle")
    }
    #expect(throws: WireDecodingError.self) { try entry(key: "Wi Fi", cause: "toggle") }
    #expect(throws: WireDecodingError.self) { try entry(key: "wifi", cause: #"toggle\u001b[2J"#) }
    #expect(throws: WireDecodingError.self) { try entry(key: "wifi", cause: "") }
  }

  @Test func timesAreReadExactlyAsWritten() {
    for ms: Int64 in [0, 951_782_400_001, 1_796_010_067_002, 253_402_300_799_999] {
      #expect(Timestamp.milliseconds(Timestamp.iso8601(milliseconds: ms)) == ms)
    }
    for text in [
      "2026-11-30T03:41:07.002", "2026-13-01T00:00:00.000Z", "2026-02-30T00:00:00.000Z",
      "2026-11-30 03:41:07.002Z", "2026-11-30T03:41:07.0O2Z", "T4",
    ] {
      #expect(Timestamp.milliseconds(text) == nil, "\(text)")
    }
  }

  /// `until` takes any RFC 3339 time a client may write: no fraction, a
  /// longer one (cut to the millisecond), an offset, lower-case letters.
  @Test func aClientsTimeIsReadInEveryRFC3339Form() {
    let ms: Int64 = 1_796_010_067_002  // 2026-11-30T03:41:07.002Z
    for text in [
      "2026-11-30T03:41:07.002Z", "2026-11-30T03:41:07.002999Z", "2026-11-30t03:41:07.002z",
      "2026-11-30T04:41:07.002+01:00", "2026-11-29T22:11:07.002-05:30",
    ] {
      #expect(Timestamp.milliseconds(rfc3339: text) == ms, "\(text)")
    }
    #expect(Timestamp.milliseconds(rfc3339: "2026-11-30T03:41:07Z") == ms - 2)
    #expect(Timestamp.milliseconds(rfc3339: "2026-11-30T03:41:07.5Z") == ms + 498)
    for text in [
      "2026-11-30T03:41:07", "2026-11-30T03:41:07.Z", "2026-13-01T00:00:00Z",
      "2026-02-29T00:00:00Z", "2026-11-30 03:41:07Z", "2026-11-30T24:00:00Z",
      "2026-11-30T03:41:07+0100", "2026-11-30T03:41:07+01:00 ", "2026-11-30T03:41:07.0O2Z",
      "T4",
    ] {
      #expect(Timestamp.milliseconds(rfc3339: text) == nil, "\(text)")
    }
    #expect(Timestamp.milliseconds(rfc3339: "2028-02-29T00:00:00Z") != nil, "a leap day")
  }

  /// A writer keeps the date of its last timestamp: times of the same day,
  /// of the next, of an earlier one and before 1970 are written as alone.
  @Test func aWriterWritesEachTimeAsAlone() {
    let times: [Int64] = [
      1_796_010_067_002, 1_796_010_067_999, 1_796_050_000_000, 1_796_096_400_000, 951_782_400_001,
      1_796_010_067_002, -1, -86_400_001, 0,
    ]
    var w = JSONWriter()
    for ms in times {
      w.removeAll()
      Timestamp.append(milliseconds: ms, to: &w)
      #expect(String(decoding: w.bytes, as: UTF8.self) == Timestamp.iso8601(milliseconds: ms))
    }
  }
}

extension StateObject {
  /// The State `WireEncoding` writes for `state`.
  init(_ state: SwitchState) {
    self.init(
      checked: state.checked, readOnly: state.readOnly, readOnlyReason: state.readOnlyReason,
      heldBy: state.heldBy?.wireName, disabled: state.disabled,
      disabledReason: state.disabledReason, disabledBy: state.disabledBy?.wireName,
      invalid: state.invalid, invalidReason: state.invalidReason)
  }
}
