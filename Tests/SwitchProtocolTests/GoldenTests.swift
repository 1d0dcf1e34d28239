import SwitchCore
import Testing

@testable import SwitchProtocol

/// Golden bytes at the boundary: every request decodes to the Call we
/// expect, and every result, error and event encodes to exactly these bytes.
@Suite struct GoldenTests {
  static func decode(_ line: String) -> Incoming {
    Array(line.utf8).withUnsafeBufferPointer { RequestDecoder.decode($0, maxDepth: 32) }
  }

  static func call(_ line: String) -> Result<Call, RPCError>? {
    guard case .single(.success(let request)) = decode(line),
      let method = Method(rawValue: request.method)
    else { return nil }
    return Call.decode(method, params: request.params)
  }

  /// A switch another one's change disabled (rule 17): cause and holder
  /// "dependency", the actor of the change that caused it.
  @Test func dependencyEntryGolden() {
    var change = Self.change
    change.cause = .dependency
    change.state = SwitchState(
      checked: true, disabled: true, disabledReason: "Airplane mode is on",
      disabledBy: .dependency)
    change.previous = SwitchState(checked: true)
    var w = JSONWriter()
    WireEncoding.writeEntry(&w, change)
    let text = String(decoding: w.bytes, as: UTF8.self)
    #expect(
      text.contains(#""cause":"dependency","fields":["disabled","disabledReason","disabledBy"]"#))
    #expect(
      text.contains(
        #""disabled":true,"disabledReason":"Airplane mode is on","disabledBy":"dependency""#))
    #expect(Cause(wireName: "dependency") == .dependency)
  }

  @Test(arguments: [
    (
      #"{"jsonrpc":"2.0","id":1,"method":"get","params":{"key":"wifi"}}"#,
      Call.get(key: "wifi", user: nil)
    ),
    (#"{"jsonrpc":"2.0","id":1,"method":"list"}"#, .list(prefix: nil, user: nil)),
    (
      #"{"jsonrpc":"2.0","id":1,"method":"list","params":{"prefix":"n.*"}}"#,
      .list(prefix: "n.", user: nil)
    ),
    (
      #"{"jsonrpc":"2.0","id":1,"method":"set","params":{"key":"wifi","checked":false,"ifRevision":4}}"#,
      .write(key: "wifi", .set(checked: false, ifRevision: 4), user: nil)
    ),
    (
      #"{"jsonrpc":"2.0","id":1,"method":"toggle","params":{"key":"wifi"}}"#,
      .write(key: "wifi", .toggle(ifRevision: nil), user: nil)
    ),
    (
      #"{"jsonrpc":"2.0","id":1,"method":"reset","params":{"key":"wifi"}}"#,
      .write(key: "wifi", .reset, user: nil)
    ),
    (
      #"{"jsonrpc":"2.0","id":1,"method":"watch","params":{"keys":["wifi","n.*"],"since":3}}"#,
      .watch(patterns: [.exact("wifi"), .prefix("n.")], since: 3, user: nil)
    ),
    (#"{"jsonrpc":"2.0","id":1,"method":"watch"}"#, .watch(patterns: nil, since: nil, user: nil)),
    (#"{"jsonrpc":"2.0","id":1,"method":"unwatch","params":{"watch":"w1"}}"#, .unwatch(id: "w1")),
    (
      #"{"jsonrpc":"2.0","id":1,"method":"history","params":{"key":"wifi","limit":5,"before":9}}"#,
      .history(key: "wifi", limit: 5, before: 9, user: nil)
    ),
    (
      #"{"jsonrpc":"2.0","id":1,"method":"history"}"#,
      .history(key: nil, limit: 100, before: nil, user: nil)
    ),
    (
      #"{"jsonrpc":"2.0","id":1,"method":"lock","params":{"key":"wifi","reason":"r","checked":true}}"#,
      .write(key: "wifi", .lock(reason: "r", checked: true), user: nil)
    ),
    (
      #"{"jsonrpc":"2.0","id":1,"method":"unlock","params":{"key":"wifi"}}"#,
      .write(key: "wifi", .unlock, user: nil)
    ),
    (
      #"{"jsonrpc":"2.0","id":1,"method":"disable","params":{"key":"wifi","reason":"r"}}"#,
      .write(key: "wifi", .disable(reason: "r"), user: nil)
    ),
    (
      #"{"jsonrpc":"2.0","id":1,"method":"enable","params":{"key":"wifi"}}"#,
      .write(key: "wifi", .enable, user: nil)
    ),
    (
      #"{"jsonrpc":"2.0","id":1,"method":"get","params":{"key":"wifi","user":1001}}"#,
      .get(key: "wifi", user: .user(1001))
    ),
    (
      #"{"jsonrpc":"2.0","id":1,"method":"set","params":{"key":"wifi","checked":true,"user":0}}"#,
      .write(key: "wifi", .set(checked: true, ifRevision: nil), user: 0)
    ),
    (
      #"{"jsonrpc":"2.0","id":1,"method":"watch","params":{"user":"*"}}"#,
      .watch(patterns: nil, since: nil, user: .everyone)
    ),
    (
      #"{"jsonrpc":"2.0","id":1,"method":"history","params":{"user":"*"}}"#,
      .history(key: nil, limit: 100, before: nil, user: .everyone)
    ),
    (#"{"jsonrpc":"2.0","id":1,"method":"reload","params":{}}"#, .reload),
    (#"{"jsonrpc":"2.0","id":1,"method":"status"}"#, .status),
  ])
  func requestsDecode(_ line: String, _ expected: Call) {
    #expect(Self.call(line) == .success(expected))
  }

  /// Each bad call is `InvalidParams` naming the param (`data.param`), and
  /// the key when the call has a valid one (`data.key`), in that order.
  @Test(
    arguments: [
      (
        #"{"jsonrpc":"2.0","id":1,"method":"set","params":{"key":"wifi","checked":1}}"#, "checked",
        "wifi"
      ),
      (
        #"{"jsonrpc":"2.0","id":1,"method":"set","params":{"key":"wifi","checked":"true"}}"#,
        "checked", "wifi"
      ),
      (#"{"jsonrpc":"2.0","id":1,"method":"set","params":{"key":"wifi"}}"#, "checked", "wifi"),
      (
        #"{"jsonrpc":"2.0","id":1,"method":"set","params":{"key":"wifi","checked":true,"x":1}}"#,
        "x", "wifi"
      ),
      (
        #"{"jsonrpc":"2.0","id":1,"method":"set","params":{"key":"wifi","checked":true,"checked":false}}"#,
        "checked", nil
      ),
      (#"{"jsonrpc":"2.0","id":1,"method":"set","params":{"checked":true}}"#, "key", nil),
      (
        #"{"jsonrpc":"2.0","id":1,"method":"get","params":{"key":"wifi","user":"*"}}"#, "user",
        "wifi"
      ),
      (#"{"jsonrpc":"2.0","id":1,"method":"list","params":{"user":-1}}"#, "user", nil),
      // (uid_t)-1: the kernel's "no uid".
      (#"{"jsonrpc":"2.0","id":1,"method":"list","params":{"user":4294967295}}"#, "user", nil),
      (#"{"jsonrpc":"2.0","id":1,"method":"list","params":{"user":"1000"}}"#, "user", nil),
      (
        #"{"jsonrpc":"2.0","id":1,"method":"set","params":{"key":"wifi","checked":true,"user":4294967296}}"#,
        "user", "wifi"
      ),
      (
        #"{"jsonrpc":"2.0","id":1,"method":"lock","params":{"key":"wifi","user":1000}}"#, "user",
        "wifi"
      ),
      (#"{"jsonrpc":"2.0","id":1,"method":"watch","params":{"user":"all"}}"#, "user", nil),
      (#"{"jsonrpc":"2.0","id":1,"method":"get","params":["wifi"]}"#, "params", nil),
      (#"{"jsonrpc":"2.0","id":1,"method":"get","params":{"key":7}}"#, "key", nil),
      (#"{"jsonrpc":"2.0","id":1,"method":"get","params":{"key":"Bad Key"}}"#, "key", nil),
      (
        #"{"jsonrpc":"2.0","id":1,"method":"toggle","params":{"key":"wifi","ifRevision":-1}}"#,
        "ifRevision", "wifi"
      ),
      (
        #"{"jsonrpc":"2.0","id":1,"method":"toggle","params":{"key":"wifi","ifRevision":1.5}}"#,
        "ifRevision", "wifi"
      ),
      (
        #"{"jsonrpc":"2.0","id":1,"method":"lock","params":{"key":"wifi","reason":5}}"#, "reason",
        "wifi"
      ),
      // A U+0000 breaks systemd's varlink clients (sd-json), once stored.
      (
        #"{"jsonrpc":"2.0","id":1,"method":"lock","params":{"key":"wifi","reason":"a\u0000b"}}"#,
        "reason", "wifi"
      ),
      (
        #"{"jsonrpc":"2.0","id":1,"method":"disable","params":{"key":"wifi","reason":"\u0000"}}"#,
        "reason", "wifi"
      ),
      (#"{"jsonrpc":"2.0","id":1,"method":"watch","params":{"keys":[]}}"#, "keys", nil),
      (#"{"jsonrpc":"2.0","id":1,"method":"watch","params":{"keys":["a*b*"]}}"#, "keys", nil),
      (#"{"jsonrpc":"2.0","id":1,"method":"history","params":{"limit":0}}"#, "limit", nil),
      (
        #"{"jsonrpc":"2.0","id":1,"method":"history","params":{"key":"wifi","limit":1001}}"#,
        "limit", "wifi"
      ),
      (#"{"jsonrpc":"2.0","id":1,"method":"unwatch"}"#, "watch", nil),
      (#"{"jsonrpc":"2.0","id":1,"method":"status","params":{"verbose":true}}"#, "verbose", nil),
    ] as [(String, String, String?)])
  func badParamsAreInvalidParams(_ line: String, _ param: String, _ key: String?) {
    guard case .failure(let error)? = Self.call(line) else {
      Issue.record("accepted: \(line)")
      return
    }
    #expect(error.code == .invalidParams)
    var expected = [JSONMember("name", .string("InvalidParams"))]
    if let key { expected.append(JSONMember("key", .string(key))) }
    expected.append(JSONMember("param", .string(param)))
    #expect(error.dataObject == .object(expected))
  }

  @Test func invalidParamsGolden() {
    guard
      case .failure(let error)? = Self.call(
        #"{"jsonrpc":"2.0","id":1,"method":"set","params":{"key":"wifi","checked":1}}"#)
    else {
      Issue.record("accepted")
      return
    }
    var w = JSONWriter()
    ResponseEncoding.writeError(&w, id: .number(JSONNumber(1)), error)
    #expect(
      String(decoding: w.bytes, as: UTF8.self)
        == #"{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"#
        + #""message":"Invalid params: \"checked\" must be true or false, not 1.","#
        + #""data":{"name":"InvalidParams","key":"wifi","param":"checked"}}}"#)
  }

  @Test(arguments: [
    (#"{"id":1,"method":"get"}"#, RPCErrorCode.invalidRequest, "1"),
    (#"{"jsonrpc":"1.0","id":"x","method":"get"}"#, .invalidRequest, "\"x\""),
    (#"{"jsonrpc":"2.0","id":{},"method":"get"}"#, .invalidRequest, "null"),
    (#"{"jsonrpc":"2.0","id":1,"method":5}"#, .invalidRequest, "1"),
    (#"{"jsonrpc":"2.0","id":1,"method":"get","extra":true}"#, .invalidRequest, "1"),
    (#"{"jsonrpc":"2.0","id":1,"method":"get","params":3}"#, .invalidRequest, "1"),
    (#"[]"#, .invalidRequest, "null"),
    (#"5"#, .invalidRequest, "null"),
    (#"{"jsonrpc":"2.0","id":1,"method":"get""#, .parseError, "null"),
    (
      String(repeating: "[", count: 40) + String(repeating: "]", count: 40), .invalidRequest, "null"
    ),
  ])
  func invalidEnvelopes(_ line: String, _ code: RPCErrorCode, _ id: String) {
    guard case .single(.failure(let invalid)) = Self.decode(line) else {
      Issue.record("accepted: \(line)")
      return
    }
    #expect(invalid.error.code == code)
    #expect(invalid.id.jsonValue.jsonText == id)
  }

  @Test func idsRoundTripExactly() {
    guard
      case .single(.success(let request)) = Self.decode(
        #"{"jsonrpc":"2.0","id":123456789012345678901234567890,"method":"status"}"#)
    else {
      Issue.record("not decoded")
      return
    }
    var w = JSONWriter()
    ResponseEncoding.beginResult(&w, id: request.id!)
    w.raw("{}")
    ResponseEncoding.endResult(&w)
    #expect(
      String(decoding: w.bytes, as: UTF8.self)
        == #"{"jsonrpc":"2.0","id":123456789012345678901234567890,"result":{}}"#)
  }

  static let definition = SwitchDefinition(
    key: "wifi", label: "Wi-Fi", description: "Connect to wireless networks.",
    defaultChecked: false, checkedIcon: "wifi", uncheckedIcon: "wifi_off", group: "Connectivity",
    order: 3)

  @Test func switchObjectGolden() {
    let record = SwitchRecord(
      key: "wifi",
      state: SwitchState(
        checked: true, readOnly: true, readOnlyReason: "Held.", heldBy: .policy),
      revision: 42, changedAt: 1_796_010_000_123)
    var w = JSONWriter()
    WireEncoding.writeSwitch(
      &w, definition: Self.definition, record: record,
      policySource: SwitchCore.SourceLocation(file: "policy.d/50-corp.conf", line: 2))
    #expect(
      String(decoding: w.bytes, as: UTF8.self)
        == #"{"key":"wifi","label":"Wi-Fi","description":"Connect to wireless networks.","#
        + #""checked":true,"defaultChecked":false,"readOnly":true,"readOnlyReason":"Held.","#
        + #""heldBy":"policy","disabled":false,"disabledReason":null,"disabledBy":null,"#
        + #""invalid":false,"invalidReason":null,"pendingUntil":null,"expiresAt":null,"readOnlyUntil":null,"disabledUntil":null,"#
        + #""checkedIcon":"wifi","uncheckedIcon":"wifi_off","group":"Connectivity","order":3,"#
        + #""policySource":"50-corp.conf:2","effective":true,"scope":"system","user":null,"#
        + #""revision":42,"changedAt":"2026-11-30T03:40:00.123Z","observed":null}"#)
  }

  @Test(arguments: [(true, "true"), (false, "false")])
  func observedComesAfterChangedAtAndDecodes(observed: Bool, text: String) throws {
    var w = JSONWriter()
    WireEncoding.writeSwitch(
      &w, definition: Self.definition,
      record: SwitchRecord(key: "wifi", state: SwitchState(checked: false)), policySource: nil,
      observed: observed)
    #expect(
      String(decoding: w.bytes, as: UTF8.self)
        .hasSuffix(#""changedAt":null,"observed":"# + text + "}"))
    // As a caller reads it: `writable` appended after `observed`.
    var seen = JSONWriter()
    WireEncoding.writeSwitch(&seen, encoded: w.bytes, writable: .writable)
    let decoded = try SwitchObject(wire: JSONParser.parse(seen.bytes, maxDepth: 64))
    #expect(decoded.observed == observed)
  }

  /// Every PermissionDenied says why in `data.reason`, not only in its
  /// message: varlink's parameters are the data members alone.
  @Test func permissionDeniedSaysWhyInItsData() {
    let byRules = RPCError(
      Refusal.permissionDenied(
        key: "wifi", action: "change", requirement: "only human accounts may change it"))
    let byMethod = RPCError.permissionDenied(method: .reload, requirement: "only administrators")
    let byPolkit = RPCError.permissionDeniedByPolkit(
      method: .history, key: "wifi", why: "polkit is not reachable",
      authenticationRequired: false)
    for (error, reason) in [
      (byRules, "only human accounts may change it"), (byMethod, "only administrators"),
      (byPolkit, "polkit is not reachable"),
    ] {
      #expect(error.data.first { $0.name == "reason" }?.value == .string(reason))
    }
    // A method whose name is no verb is called, not done.
    #expect(byPolkit.message == "You may not call history for wifi: polkit is not reachable.")
    let toggle = RPCError.permissionDeniedByPolkit(
      method: .toggle, key: "wifi", why: "no", authenticationRequired: true)
    #expect(toggle.message == "You may not toggle wifi: no.")
  }

  @Test func writableAndItsReasonAreTheCallersAndComeLast() {
    var object = JSONWriter()
    WireEncoding.writeSwitch(
      &object, definition: Self.definition,
      record: SwitchRecord(key: "wifi", state: SwitchState(checked: false)), policySource: nil)
    let withoutBrace = String(decoding: object.bytes.dropLast(), as: UTF8.self)
    let refusal = Refusal.permissionDenied(
      key: "wifi", action: "change",
      requirement: "only members of the group \"staff\" may change system switches")
    for (writable, end) in [
      (Writability.writable, #","writable":true,"writableReason":null}"#),
      (
        .refused(refusal),
        #","writable":false,"writableReason":"You may not change wifi: "#
          + #"only members of the group \"staff\" may change system switches."}"#
      ),
    ] {
      var w = JSONWriter()
      WireEncoding.writeSwitch(&w, encoded: object.bytes, writable: writable)
      #expect(String(decoding: w.bytes, as: UTF8.self) == withoutBrace + end)
      // An object written whole for one caller (a user-scope switch's) ends alike.
      var perCaller = JSONWriter()
      WireEncoding.writeSwitch(
        &perCaller, template: SwitchTemplate(Self.definition),
        record: SwitchRecord(key: "wifi", state: SwitchState(checked: false)), policySource: nil,
        writable: writable)
      #expect(perCaller.bytes == w.bytes)
    }
  }

  @Test func schemaChangedGolden() {
    var changes = SchemaChanges(from: Catalog(switches: []), to: Catalog(switches: []))
    changes.added = ["bluetooth"]
    changes.updated = ["wifi", "email.marketing"]
    var w = JSONWriter()
    WireEncoding.writeSchemaChangedEvent(&w, watch: "w1", changes)
    #expect(
      String(decoding: w.bytes, as: UTF8.self)
        == #"{"jsonrpc":"2.0","method":"schemaChanged","params":{"watch":"w1","#
        + #""added":["bluetooth"],"removed":[],"updated":["wifi","email.marketing"]}}"# + "\n")
  }

  @Test func neverChangedSwitchHasRevisionZeroAndNoTime() {
    var w = JSONWriter()
    WireEncoding.writeSwitch(
      &w, definition: Self.definition,
      record: SwitchRecord(key: "wifi", state: SwitchState(checked: false)), policySource: nil)
    let text = String(decoding: w.bytes, as: UTF8.self)
    #expect(
      text.hasSuffix(
        #""policySource":null,"effective":false,"scope":"system","user":null,"#
          + #""revision":0,"changedAt":null,"observed":null}"#))
  }

  static let change = Change(
    revision: 43, time: 1_796_010_067_002, key: "wifi", cause: .toggle,
    actor: .peer(uid: 1000, gid: 1000, pid: 4321), state: SwitchState(checked: false),
    previous: SwitchState(checked: true))

  static let stateGolden =
    #"{"checked":false,"readOnly":false,"readOnlyReason":null,"heldBy":null,"#
    + #""disabled":false,"disabledReason":null,"disabledBy":null,"#
    + #""invalid":false,"invalidReason":null,"pendingUntil":null,"expiresAt":null,"readOnlyUntil":null,"disabledUntil":null}"#
  static let previousGolden =
    #"{"checked":true,"readOnly":false,"readOnlyReason":null,"heldBy":null,"#
    + #""disabled":false,"disabledReason":null,"disabledBy":null,"#
    + #""invalid":false,"invalidReason":null,"pendingUntil":null,"expiresAt":null,"readOnlyUntil":null,"disabledUntil":null}"#

  @Test func eventGolden() {
    var members = JSONWriter()
    WireEncoding.writeChangeMembers(&members, Self.change)
    var w = JSONWriter()
    WireEncoding.writeChangedEvent(&w, watch: "w1", members: members.bytes)
    #expect(
      String(decoding: w.bytes, as: UTF8.self)
        == #"{"jsonrpc":"2.0","method":"changed","params":{"watch":"w1","revision":43,"#
        + #""time":"2026-11-30T03:41:07.002Z","key":"wifi","user":null,"cause":"toggle","#
        + #""fields":["checked"],"#
        + #""actor":{"uid":1000,"gid":1000,"pid":4321},"state":\#(Self.stateGolden),"#
        + #""previous":\#(Self.previousGolden)}}"# + "\n")
  }

  /// Another user's change, as a non-administrator sees it: the same
  /// event with null ids; a policy's actor stays marked as one.
  @Test func hiddenActorGolden() {
    var hidden = JSONWriter()
    WireEncoding.writeChangeMembers(&hidden, Self.change, showingActor: false)
    #expect(
      String(decoding: hidden.bytes, as: UTF8.self)
        == #""revision":43,"time":"2026-11-30T03:41:07.002Z","key":"wifi","user":null,"#
        + #""cause":"toggle","#
        + #""fields":["checked"],"actor":{"uid":null,"gid":null,"pid":null},"#
        + #""state":\#(Self.stateGolden),"previous":\#(Self.previousGolden)"#)
    var policy = JSONWriter()
    WireEncoding.writeHiddenActor(&policy, .policy)
    #expect(
      String(decoding: policy.bytes, as: UTF8.self)
        == #"{"uid":null,"gid":null,"pid":null,"source":"policy"}"#)
  }

  @Test func policyEntryGolden() {
    var change = Self.change
    change.actor = .policy
    change.cause = .policy
    change.state = SwitchState(
      checked: false, disabled: true, disabledReason: "No.", disabledBy: .policy)
    change.previous = SwitchState(checked: false)
    var w = JSONWriter()
    WireEncoding.writeEntry(&w, change)
    let text = String(decoding: w.bytes, as: UTF8.self)
    #expect(text.contains(#""cause":"policy","fields":["disabled","disabledReason","disabledBy"]"#))
    #expect(text.contains(#""actor":{"uid":null,"gid":null,"pid":null,"source":"policy"}"#))
    #expect(!text.contains("\"watch\""))
  }

  @Test(arguments: [
    (
      Refusal.readOnly(
        key: "bluetooth", reason: "Bluetooth is turned off by your organisation.", heldBy: .policy,
        source: SwitchCore.SourceLocation(file: "policy.d/50-corp.conf", line: 2)),
      #"{"jsonrpc":"2.0","id":7,"error":{"code":-32002,"message":"bluetooth is read-only: Bluetooth is turned off by your organisation.","data":{"name":"ReadOnly","key":"bluetooth","reason":"Bluetooth is turned off by your organisation.","heldBy":"policy","policySource":"50-corp.conf:2"}}}"#
    ),
    (
      Refusal.readOnly(key: "bluetooth", reason: nil, heldBy: .admin),
      #"{"jsonrpc":"2.0","id":7,"error":{"code":-32002,"message":"bluetooth is read-only by an administrator.","data":{"name":"ReadOnly","key":"bluetooth","reason":null,"heldBy":"admin","policySource":null}}}"#
    ),
    (
      Refusal.disabled(
        key: "wifi", reason: "Not here.", by: .policy,
        source: SwitchCore.SourceLocation(file: "policy.d/60-site.conf", line: 7)),
      #"{"jsonrpc":"2.0","id":7,"error":{"code":-32003,"message":"wifi is disabled: Not here.","data":{"name":"Disabled","key":"wifi","reason":"Not here.","disabledBy":"policy","policySource":"60-site.conf:7"}}}"#
    ),
    (
      Refusal.disabled(key: "wifi", reason: nil, by: .admin),
      #"{"jsonrpc":"2.0","id":7,"error":{"code":-32003,"message":"wifi is disabled by an administrator.","data":{"name":"Disabled","key":"wifi","reason":null,"disabledBy":"admin","policySource":null}}}"#
    ),
    (
      Refusal.unknownSwitch(key: "nope"),
      #"{"jsonrpc":"2.0","id":7,"error":{"code":-32001,"message":"No switch has the key nope.","data":{"name":"UnknownSwitch","key":"nope"}}}"#
    ),
    (
      Refusal.unknownSwitch(key: ""),
      #"{"jsonrpc":"2.0","id":7,"error":{"code":-32001,"message":"No switch has an empty key.","data":{"name":"UnknownSwitch","key":""}}}"#
    ),
    (
      Refusal.conflict(key: "wifi", expected: 3, current: 5),
      #"{"jsonrpc":"2.0","id":7,"error":{"code":-32005,"message":"wifi changed since revision 3; it is now at revision 5.","data":{"name":"Conflict","key":"wifi","revision":5}}}"#
    ),
  ])
  func refusalGolden(_ refusal: Refusal, _ golden: String) {
    var w = JSONWriter()
    ResponseEncoding.writeError(&w, id: .number(JSONNumber(7)), RPCError(refusal))
    #expect(String(decoding: w.bytes, as: UTF8.self) == golden)
  }

  @Test func everyErrorCodeHasItsName() {
    let names: [(RPCErrorCode, String)] = [
      (.parseError, "ParseError"), (.invalidRequest, "InvalidRequest"),
      (.methodNotFound, "MethodNotFound"), (.invalidParams, "InvalidParams"),
      (.internalError, "InternalError"), (.unknownSwitch, "UnknownSwitch"),
      (.readOnly, "ReadOnly"), (.disabled, "Disabled"), (.permissionDenied, "PermissionDenied"),
      (.conflict, "Conflict"), (.applyFailed, "ApplyFailed"), (.storageFailure, "StorageFailure"),
      (.overloaded, "Overloaded"), (.historyCompacted, "HistoryCompacted"),
      (.invalidConfig, "InvalidConfig"),
    ]
    for (code, name) in names { #expect(code.name == name) }
    // An unknown code from a newer daemon decodes and never traps.
    #expect(RPCErrorCode(rawValue: -32099).name == "Error-32099")
    let remote = RemoteError(
      try! JSONParser.parse(#"{"code":-32099,"message":"new"}"#, maxDepth: 8))
    #expect(remote.code.rawValue == -32099)
  }

  @Test func timestampsAreRFC3339WithMilliseconds() {
    #expect(Timestamp.iso8601(milliseconds: 0) == "1970-01-01T00:00:00.000Z")
    #expect(Timestamp.iso8601(milliseconds: 951_782_400_001) == "2000-02-29T00:00:00.001Z")
    #expect(Timestamp.iso8601(milliseconds: 1_796_010_067_002) == "2026-11-30T03:41:07.002Z")
  }

  @Test func clientParsesResponsesAndNotifications() {
    let response = ClientMessage.parse(Array(#"{"jsonrpc":"2.0","id":3,"result":{"a":1}}"#.utf8))
    guard case .response(let id, .success(let result))? = response else {
      Issue.record("not a response")
      return
    }
    #expect(id == .number(JSONNumber(3)))
    #expect(result["a"]?.int64Value == 1)
    let event = ClientMessage.parse(
      Array(#"{"jsonrpc":"2.0","method":"changed","params":{}}"#.utf8))
    guard case .notification(let method, _)? = event else {
      Issue.record("not a notification")
      return
    }
    #expect(method == "changed")
  }
}
