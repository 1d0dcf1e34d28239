import SwitchCore

/// Writes the objects of docs/protocol.md ("Objects", "Events") straight into a
/// `JSONWriter`: no intermediate trees on the hot path.
public enum WireEncoding {
  /// A Switch object.
  /// `user`: whose value of a user-scope switch `record` shows (nil for a
  /// system switch, and for a user-scope one seen by every user's watch).
  public static func writeSwitch(
    _ w: inout JSONWriter, definition: SwitchDefinition, record: SwitchRecord,
    policySource: SourceLocation?, user: UInt32? = nil
  ) {
    writeSwitch(
      &w, template: SwitchTemplate(definition), record: record, policySource: policySource,
      user: user)
  }

  /// A Switch object, its schema members copied from `template`; with
  /// `writable` and `writableReason` (for one caller) as its last members
  /// when given.
  public static func writeSwitch(
    _ w: inout JSONWriter, template: SwitchTemplate, record: SwitchRecord,
    policySource: SourceLocation?, user: UInt32? = nil, writable: Writability? = nil
  ) {
    writeSwitch(
      &w, template: template, record: record,
      middle: switchMiddle(template: template, state: record.state, policySource: policySource),
      user: user, writable: writable)
  }

  /// The members of a Switch object between `checked` and `effective`
  /// (`defaultChecked` through `policySource`): the same for every user who
  /// reads a user-scope switch, so they are encoded once per change of it.
  public static func switchMiddle(
    template: SwitchTemplate, state s: SwitchState, policySource: SourceLocation?
  ) -> [UInt8] {
    var w = JSONWriter(capacity: 256)
    if template.defaultChecked {
      w.raw(",\"defaultChecked\":true")
    } else {
      w.raw(",\"defaultChecked\":false")
    }
    writeHoldMembers(&w, s)
    w.raw(template.icons)
    w.stringOrNull(policySource?.policySourceText)
    return w.bytes
  }

  /// A Switch object whose middle members `switchMiddle` encoded.
  public static func writeSwitch(
    _ w: inout JSONWriter, template: SwitchTemplate, record: SwitchRecord, middle: [UInt8],
    user: UInt32?, writable: Writability?
  ) {
    writeSwitch(
      &w, template: template, checked: record.state.checked, middle: middle,
      effective: record.state.isOnAndInEffect, user: user, revision: record.revision,
      changedAt: record.changedAt, writable: writable)
  }

  /// A Switch object from its parts: what one user reads of a user-scope
  /// switch is written per read, so its fixed parts are byte arrays made
  /// once (appending a `StaticString` goes through the generic sequence path).
  public static func writeSwitch(
    _ w: inout JSONWriter, template: SwitchTemplate, checked: Bool, middle: [UInt8],
    effective: Bool, user: UInt32?, revision: Int64, changedAt: Int64?, writable: Writability?
  ) {
    w.raw(template.head)
    w.raw(checked ? Parts.true : Parts.false)
    w.raw(middle)
    if template.scope == .user {
      w.raw(effective ? Parts.effectiveUser : Parts.ineffectiveUser)
      if let user { w.int(Int64(user)) } else { w.null() }
      w.raw(Parts.revision)
    } else {
      w.raw(effective ? Parts.effectiveSystem : Parts.ineffectiveSystem)
    }
    w.int(revision)
    w.raw(Parts.changedAt)
    if let changedAt {
      writeTime(&w, changedAt)
    } else {
      w.null()
    }
    if let writable {
      writeWritableEnd(&w, writable)
    } else {
      w.raw(Parts.end)
    }
  }

  /// `writable`, `writableReason` and the closing brace: the refusal's
  /// sentence is written only for a caller who may not write.
  private static func writeWritableEnd(_ w: inout JSONWriter, _ writable: Writability) {
    switch writable {
    case .writable:
      w.raw(Parts.writableEnd)
    case .refused(let refusal):
      w.raw(Parts.notWritableReason)
      w.string(refusal.message)
      w.raw(Parts.end)
    }
  }

  private enum Parts {
    static let `true` = Array("true".utf8)
    static let `false` = Array("false".utf8)
    static let effectiveUser = Array(#","effective":true,"scope":"user","user":"#.utf8)
    static let ineffectiveUser = Array(#","effective":false,"scope":"user","user":"#.utf8)
    static let revision = Array(#","revision":"#.utf8)
    static let effectiveSystem = Array(
      #","effective":true,"scope":"system","user":null,"revision":"#.utf8)
    static let ineffectiveSystem = Array(
      #","effective":false,"scope":"system","user":null,"revision":"#.utf8)
    static let changedAt = Array(#","changedAt":"#.utf8)
    static let writableEnd = Array(#","writable":true,"writableReason":null}"#.utf8)
    static let notWritableReason = Array(#","writable":false,"writableReason":"#.utf8)
    static let end = Array("}".utf8)
  }

  /// A Switch object `writeSwitch` encoded (for anyone, so it can be kept),
  /// with the caller's `writable` and `writableReason` added as its last members.
  public static func writeSwitch(_ w: inout JSONWriter, encoded: [UInt8], writable: Writability) {
    w.bytes.append(contentsOf: encoded.dropLast())  // all but the closing brace
    writeWritableEnd(&w, writable)
  }

  /// A State object.
  public static func writeState(_ w: inout JSONWriter, _ s: SwitchState) {
    // A history entry has two, most of them free: one copy instead of six.
    if s.isFree {
      w.raw(s.checked ? freeStates.checked : freeStates.unchecked)
      return
    }
    writeStateMembers(&w, s)
  }

  private static func writeStateMembers(_ w: inout JSONWriter, _ s: SwitchState) {
    w.raw("{\"checked\":")
    w.bool(s.checked)
    writeHoldMembers(&w, s)
    w.raw("}")
  }

  /// The two free State objects, encoded once by the general path.
  private static let freeStates = (
    unchecked: encoded { writeStateMembers(&$0, SwitchState(checked: false)) },
    checked: encoded { writeStateMembers(&$0, SwitchState(checked: true)) }
  )

  private static func encoded(_ body: (inout JSONWriter) -> Void) -> [UInt8] {
    var w = JSONWriter(capacity: 256)
    body(&w)
    return w.bytes
  }

  /// `,"readOnly":…` through `,"invalidReason":…`: the members a Switch
  /// and a State share after `checked` (a Switch puts `defaultChecked`
  /// between).
  static func writeHoldMembers(_ w: inout JSONWriter, _ s: SwitchState) {
    if s.isFree {
      // Most switches are held by nobody: two copies instead of fourteen.
      w.raw(",\"readOnly\":false,\"readOnlyReason\":null,\"heldBy\":null,")
      w.raw("\"disabled\":false,\"disabledReason\":null,\"disabledBy\":null")
      w.raw(",\"invalid\":false,\"invalidReason\":null")
      return
    }
    w.raw(",\"readOnly\":")
    w.bool(s.readOnly)
    w.raw(",\"readOnlyReason\":")
    w.stringOrNull(s.readOnlyReason)
    w.raw(",\"heldBy\":")
    w.stringOrNull(s.heldBy?.wireName)
    w.raw(",\"disabled\":")
    w.bool(s.disabled)
    w.raw(",\"disabledReason\":")
    w.stringOrNull(s.disabledReason)
    w.raw(",\"disabledBy\":")
    w.stringOrNull(s.disabledBy?.wireName)
    w.raw(",\"invalid\":")
    w.bool(s.invalid)
    w.raw(",\"invalidReason\":")
    w.stringOrNull(s.invalidReason)
  }

  /// An Actor object.
  public static func writeActor(_ w: inout JSONWriter, _ actor: Actor) {
    switch actor {
    case .peer(let uid, let gid, let pid):
      w.raw("{\"uid\":")
      w.int(Int64(uid))
      w.raw(",\"gid\":")
      w.int(Int64(gid))
      w.raw(",\"pid\":")
      w.int(Int64(pid))
      w.raw("}")
    case .policy:
      w.raw("{\"uid\":null,\"gid\":null,\"pid\":null,\"source\":\"policy\"}")
    case .reconcile:
      w.raw("{\"uid\":null,\"gid\":null,\"pid\":null,\"source\":\"reconcile\"}")
    }
  }

  /// An Actor object whose ids the viewer may not see (another user's
  /// change, shown to a non-administrator): a policy stays marked as one.
  public static func writeHiddenActor(_ w: inout JSONWriter, _ actor: Actor) {
    switch actor {
    case .peer: w.raw("{\"uid\":null,\"gid\":null,\"pid\":null}")
    case .policy, .reconcile: writeActor(&w, actor)
    }
  }

  /// The members an event and a history Entry share, without braces:
  /// `"revision":…,"time":…,"key":…,"cause":…,"fields":[…],"actor":…,"state":…,"previous":…`.
  /// `showingActor` false writes the actor with null ids (`writeHiddenActor`).
  public static func writeChangeMembers(
    _ w: inout JSONWriter, _ change: Change, showingActor: Bool = true
  ) {
    w.raw("\"revision\":")
    w.int(change.revision)
    w.raw(",\"time\":")
    writeTime(&w, change.time)
    w.raw(",\"key\":")
    w.string(change.key)
    w.raw(",\"user\":")
    if let user = change.user { w.int(Int64(user)) } else { w.null() }
    w.raw(",\"cause\":")
    w.string(change.cause.wireName)
    w.raw(",\"fields\":[")
    for (i, field) in change.fields.enumerated() {
      if i > 0 { w.raw(",") }
      w.string(field.wireName)
    }
    w.raw("],\"actor\":")
    if showingActor {
      writeActor(&w, change.actor)
    } else {
      writeHiddenActor(&w, change.actor)
    }
    w.raw(",\"state\":")
    writeState(&w, change.state)
    w.raw(",\"previous\":")
    writeState(&w, change.previous)
  }

  /// A history Entry: the event's params without `watch`.
  public static func writeEntry(_ w: inout JSONWriter, _ change: Change, showingActor: Bool = true)
  {
    w.raw("{")
    writeChangeMembers(&w, change, showingActor: showingActor)
    w.raw("}")
  }

  /// A whole `changed` notification line (with its newline) for one watch.
  /// `members` is `writeChangeMembers` output. The daemon sends the same
  /// line in parts: the watch's `changedEventHead`, made once per watch,
  /// then the members and `changedEventEnd`, made once per change.
  public static func writeChangedEvent(
    _ w: inout JSONWriter, watch: String, members: [UInt8]
  ) {
    w.raw(changedEventHead(watch: watch))
    w.raw(members)
    w.raw(changedEventEnd)
  }

  /// `{"jsonrpc":"2.0","method":"changed","params":{"watch":"w1",`
  public static func changedEventHead(watch: String) -> [UInt8] {
    var w = JSONWriter(capacity: 64)
    w.raw(changedEventHead)
    w.string(watch)
    w.bytes.append(UInt8(ascii: ","))
    return w.bytes
  }

  private static let changedEventHead = Array(
    #"{"jsonrpc":"2.0","method":"changed","params":{"watch":"#.utf8)
  /// What follows an event's members: the line can go out as the watch's
  /// head, then the members and this end, shared by every watcher.
  public static let changedEventEnd = Array("}}\n".utf8)

  /// A whole `schemaChanged` notification line (with its newline) for one watch.
  public static func writeSchemaChangedEvent(
    _ w: inout JSONWriter, watch: String, _ changes: SchemaChanges
  ) {
    w.raw("{\"jsonrpc\":\"2.0\",\"method\":\"schemaChanged\",\"params\":{\"watch\":")
    w.string(watch)
    w.raw(",\"added\":")
    w.strings(changes.added)
    w.raw(",\"removed\":")
    w.strings(changes.removed)
    w.raw(",\"updated\":")
    w.strings(changes.updated)
    w.raw("}}\n")
  }

  static func writeTime(_ w: inout JSONWriter, _ ms: Int64) {
    w.raw("\"")
    Timestamp.append(milliseconds: ms, to: &w.bytes)
    w.raw("\"")
  }
}

/// The members of a Switch object that only the schema sets, encoded once per definition:
/// the loop encodes a Switch again after each change, and these are most of its bytes.
public struct SwitchTemplate: Sendable {
  /// `{"key":…,"label":…,"description":…,"checked":`
  let head: [UInt8]
  public let defaultChecked: Bool
  public let scope: Scope
  /// `,"checkedIcon":…,"uncheckedIcon":…,"group":…,"order":…,"policySource":`
  let icons: [UInt8]

  public init(_ definition: SwitchDefinition) {
    var w = JSONWriter(capacity: 128)
    w.raw("{\"key\":")
    w.string(definition.key)
    w.raw(",\"label\":")
    w.string(definition.label ?? "")
    w.raw(",\"description\":")
    w.string(definition.description)
    w.raw(",\"checked\":")
    head = w.bytes
    defaultChecked = definition.defaultChecked
    scope = definition.scope
    w = JSONWriter(capacity: 64)
    w.raw(",\"checkedIcon\":")
    w.string(definition.checkedIcon)
    w.raw(",\"uncheckedIcon\":")
    w.string(definition.uncheckedIcon)
    w.raw(",\"group\":")
    w.string(definition.group)
    w.raw(",\"order\":")
    w.int(Int64(definition.order))
    w.raw(",\"policySource\":")
    icons = w.bytes
  }
}

/// Writes JSON-RPC response objects, without the newline: a batch puts
/// several on one line, and the loop ends each line (the daemon's one
/// caller is `Server.writeResponse`).
public enum ResponseEncoding {
  /// `{"jsonrpc":"2.0","id":…,"result":` — the caller writes the result, then `endResult`.
  public static func beginResult(_ w: inout JSONWriter, id: RequestID) {
    w.raw("{\"jsonrpc\":\"2.0\",\"id\":")
    w.value(id.jsonValue)
    w.raw(",\"result\":")
  }

  /// Closes what `beginResult` opened (without the newline, for batches).
  public static func endResult(_ w: inout JSONWriter) {
    w.raw("}")
  }

  /// An error response object (without the newline, for batches).
  /// `switchObject`: `data.switch`, already encoded (a Conflict's current switch).
  public static func writeError(
    _ w: inout JSONWriter, id: RequestID, _ error: RPCError, switchObject: [UInt8]? = nil
  ) {
    w.raw("{\"jsonrpc\":\"2.0\",\"id\":")
    w.value(id.jsonValue)
    w.raw(",\"error\":{\"code\":")
    w.int(Int64(error.code.rawValue))
    w.raw(",\"message\":")
    w.string(error.message)
    w.raw(",\"data\":")
    w.value(error.dataObject)
    if let switchObject {
      // The last member of the data object, in place of its closing brace.
      w.bytes.removeLast()
      w.raw(",\"switch\":")
      w.bytes.append(contentsOf: switchObject)
      w.raw("}")
    }
    w.raw("}}")
  }
}
