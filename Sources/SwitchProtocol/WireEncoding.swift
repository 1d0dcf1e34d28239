import SwitchCore

/// Writes the objects of docs/protocol.md ("Objects", "Events") straight into a
/// `JSONWriter`: no intermediate trees on the hot path. Member names are
/// `WireField`'s (MemberNames.swift); `WireObjects` decodes what this writes.
public enum WireEncoding {
  /// A Switch object.
  /// `user`: whose value of a user-scope switch `record` shows (nil for a
  /// system switch, and for a user-scope one seen by every user's watch).
  /// `observed`: what the switch's `ExecCheck=`/`ExecWatch=` last read
  /// (nil while unknown, and always for a switch that reads nothing back).
  ///
  /// Written straight from `definition`, no template made: for a switch
  /// read once (a first `get`, a list), where making a template and
  /// freeing it cost ~1.5k instructions more (callgrind).
  public static func writeSwitch(
    _ w: inout JSONWriter, definition: SwitchDefinition, record: SwitchRecord,
    policySource: SourceLocation?, user: UInt32? = nil, observed: Bool? = nil,
    writable: Writability? = nil
  ) {
    let s = record.state
    SwitchTemplate.writeHead(&w, definition, checked: s.checked)
    writeHolds(&w, defaultChecked: definition.defaultChecked, state: s)
    SwitchTemplate.writeIcons(&w, definition, policySource: policySource?.policySourceText)
    writeTail(
      &w, scope: definition.scope, effective: s.isOnAndInEffect, user: user,
      revision: record.revision, changedAt: record.changedAt, observed: observed,
      writable: writable)
  }

  /// A Switch object, its schema members copied from `template`; with
  /// `writable` and `writableReason` (for one caller) as its last members
  /// when given.
  public static func writeSwitch(
    _ w: inout JSONWriter, template: SwitchTemplate, record: SwitchRecord,
    policySource: SourceLocation?, user: UInt32? = nil, observed: Bool? = nil,
    writable: Writability? = nil
  ) {
    // The middle written in place: no array of its own to make and copy.
    writeSwitch(
      &w, template: template, checked: record.state.checked,
      middle: {
        writeMiddle(&$0, template: template, state: record.state, policySource: policySource)
      },
      effective: record.state.isOnAndInEffect, user: user, revision: record.revision,
      changedAt: record.changedAt, observed: observed, writable: writable)
  }

  /// The members of a Switch object between `checked` and `effective`
  /// (`defaultChecked` through `policySource`): the same for every user who
  /// reads a user-scope switch, so they are encoded once per change of it.
  public static func switchMiddle(
    template: SwitchTemplate, state s: SwitchState, policySource: SourceLocation?
  ) -> [UInt8] {
    var w = JSONWriter(capacity: template.middleCapacity)
    writeMiddle(&w, template: template, state: s, policySource: policySource)
    return w.bytes
  }

  private static func writeMiddle(
    _ w: inout JSONWriter, template: SwitchTemplate, state s: SwitchState,
    policySource: SourceLocation?
  ) {
    writeHolds(&w, defaultChecked: template.defaultChecked, state: s)
    if let source = policySource?.policySourceText {
      w.raw(template.icons, droppingLast: 4)  // "null"
      w.string(source)
    } else {
      w.raw(template.icons)
    }
  }

  /// `defaultChecked` and the hold members, before the icons.
  private static func writeHolds(_ w: inout JSONWriter, defaultChecked: Bool, state s: SwitchState)
  {
    // The common case in one append, the fixed parts joined: each append
    // costs ~90 instructions besides its bytes (callgrind).
    if s.isFree {
      w.raw(defaultChecked ? Parts.defaultTrueFreeHold : Parts.defaultFalseFreeHold)
    } else {
      w.raw(defaultChecked ? Parts.defaultCheckedTrue : Parts.defaultCheckedFalse)
      writeHoldMembersInFull(&w, s)
    }
  }

  /// A Switch object whose middle members `switchMiddle` encoded.
  public static func writeSwitch(
    _ w: inout JSONWriter, template: SwitchTemplate, record: SwitchRecord, middle: [UInt8],
    user: UInt32?, observed: Bool?, writable: Writability?
  ) {
    writeSwitch(
      &w, template: template, checked: record.state.checked, middle: middle,
      effective: record.state.isOnAndInEffect, user: user, revision: record.revision,
      changedAt: record.changedAt, observed: observed, writable: writable)
  }

  /// A Switch object from its parts: what one user reads of a user-scope
  /// switch is written per read, so its fixed parts are byte arrays made
  /// once (appending a `StaticString` goes through the generic sequence path).
  public static func writeSwitch(
    _ w: inout JSONWriter, template: SwitchTemplate, checked: Bool, middle: [UInt8],
    effective: Bool, user: UInt32?, revision: Int64, changedAt: Int64?, observed: Bool?,
    writable: Writability?
  ) {
    writeSwitch(
      &w, template: template, checked: checked, middle: { $0.raw(middle) }, effective: effective,
      user: user, revision: revision, changedAt: changedAt, observed: observed,
      writable: writable)
  }

  /// The same with the middle members written by `middle`.
  private static func writeSwitch(
    _ w: inout JSONWriter, template: SwitchTemplate, checked: Bool,
    middle: (inout JSONWriter) -> Void, effective: Bool, user: UInt32?, revision: Int64,
    changedAt: Int64?, observed: Bool?, writable: Writability?
  ) {
    if checked {
      w.raw(template.head)
    } else {
      w.raw(template.head, droppingLast: 4)  // "true"
      w.raw("false")
    }
    middle(&w)
    writeTail(
      &w, scope: template.scope, effective: effective, user: user, revision: revision,
      changedAt: changedAt, observed: observed, writable: writable)
  }

  /// The members after the icons: scope, value in effect, revision, time,
  /// what was read back, and the caller's `writable` when given.
  private static func writeTail(
    _ w: inout JSONWriter, scope: Scope, effective: Bool, user: UInt32?, revision: Int64,
    changedAt: Int64?, observed: Bool?, writable: Writability?
  ) {
    if scope == .user {
      w.raw(effective ? Parts.effectiveUser : Parts.ineffectiveUser)
      if let user { w.int(Int64(user)) } else { w.null() }
      w.raw(Parts.revision)
    } else {
      w.raw(effective ? Parts.effectiveSystem : Parts.ineffectiveSystem)
    }
    w.int(revision)
    if let changedAt {
      w.raw(Parts.changedAtTime)
      Timestamp.append(milliseconds: changedAt, to: &w)
      w.raw("\"")
    } else {
      w.raw(Parts.changedAt)
      w.null()
    }
    // Before `writable`: an object encoded for anyone gets the caller's
    // `writable` appended in place of its closing brace.
    if observed == nil, case .writable? = writable {
      w.raw(Parts.unobservedWritableEnd)
      return
    }
    w.raw(Parts.observed)
    if let observed { w.bool(observed) } else { w.null() }
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

  /// A Switch object `writeSwitch` encoded (for anyone, so it can be kept),
  /// with the caller's `writable` and `writableReason` added as its last members.
  public static func writeSwitch(_ w: inout JSONWriter, encoded: [UInt8], writable: Writability) {
    // All but the closing brace.
    encoded.withUnsafeBytes { w.append(UnsafeRawBufferPointer(rebasing: $0.dropLast())) }
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
    w.raw(Parts.checked)
    w.bool(s.checked)
    writeHoldMembers(&w, s)
    w.raw("}")
  }

  /// The two free State objects, encoded once by the general path.
  private static let freeStates = (
    unchecked: fixedBytes { writeStateMembers(&$0, SwitchState(checked: false)) },
    checked: fixedBytes { writeStateMembers(&$0, SwitchState(checked: true)) }
  )

  /// `,"readOnly":…` through `,"invalidReason":…`: the members a Switch
  /// and a State share after `checked` (a Switch puts `defaultChecked`
  /// between).
  static func writeHoldMembers(_ w: inout JSONWriter, _ s: SwitchState) {
    if s.isFree {
      w.raw(Parts.freeHold)
    } else {
      writeHoldMembersInFull(&w, s)
    }
  }

  static func writeHoldMembersInFull(_ w: inout JSONWriter, _ s: SwitchState) {
    w.raw(Parts.readOnly)
    w.bool(s.readOnly)
    w.raw(Parts.readOnlyReason)
    w.stringOrNull(s.readOnlyReason)
    w.raw(Parts.heldBy)
    w.stringOrNull(s.heldBy?.wireName)
    w.raw(Parts.disabled)
    w.bool(s.disabled)
    w.raw(Parts.disabledReason)
    w.stringOrNull(s.disabledReason)
    w.raw(Parts.disabledBy)
    w.stringOrNull(s.disabledBy?.wireName)
    w.raw(Parts.invalid)
    w.bool(s.invalid)
    w.raw(Parts.invalidReason)
    w.stringOrNull(s.invalidReason)
    w.raw(Parts.pendingUntil)
    writeTimeOrNull(&w, s.pendingUntil)
    w.raw(Parts.expiresAt)
    writeTimeOrNull(&w, s.expiresAt)
    w.raw(Parts.readOnlyUntil)
    writeTimeOrNull(&w, s.readOnlyUntil)
    w.raw(Parts.disabledUntil)
    writeTimeOrNull(&w, s.disabledUntil)
  }

  static func writeTimeOrNull(_ w: inout JSONWriter, _ ms: Int64?) {
    if let ms { writeTime(&w, ms) } else { w.null() }
  }

  /// An Actor object.
  public static func writeActor(_ w: inout JSONWriter, _ actor: Actor) {
    switch actor {
    case .peer(let uid, let gid, let pid):
      w.raw(Parts.uid)
      w.int(Int64(uid))
      w.raw(Parts.gid)
      w.int(Int64(gid))
      w.raw(Parts.pid)
      w.int(Int64(pid))
      w.raw("}")
    case .policy: w.raw(Parts.policyActor)
    case .reconcile: w.raw(Parts.reconcileActor)
    case .system: w.raw(Parts.systemActor)
    case .timer: w.raw(Parts.timerActor)
    }
  }

  /// An Actor object whose ids the viewer may not see (another user's
  /// change, shown to a non-administrator): a policy stays marked as one.
  public static func writeHiddenActor(_ w: inout JSONWriter, _ actor: Actor) {
    switch actor {
    case .peer: w.raw(Parts.hiddenActor)
    case .policy, .reconcile, .system, .timer: writeActor(&w, actor)
    }
  }

  /// The members an event and a history Entry share, without braces:
  /// `"revision":…,"time":…,"key":…,"cause":…,"fields":[…],"actor":…,"state":…,"previous":…`.
  /// `showingActor` false writes the actor with null ids (`writeHiddenActor`).
  public static func writeChangeMembers(
    _ w: inout JSONWriter, _ change: Change, showingActor: Bool = true
  ) {
    w.raw(Parts.changeRevision)
    w.int(change.revision)
    w.raw(Parts.time)
    writeTime(&w, change.time)
    w.raw(Parts.key)
    w.string(change.key)
    w.raw(Parts.user)
    if let user = change.user { w.int(Int64(user)) } else { w.null() }
    w.raw(Parts.cause)
    w.string(change.cause.wireName)
    w.raw(Parts.fields)
    for (i, field) in change.fields.enumerated() {
      if i > 0 { w.raw(",") }
      w.string(field.wireName)
    }
    w.raw(Parts.actor)
    if showingActor {
      writeActor(&w, change.actor)
    } else {
      writeHiddenActor(&w, change.actor)
    }
    w.raw(Parts.state)
    writeState(&w, change.state)
    w.raw(Parts.previous)
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
    writeNotificationHead(&w, method: WireField.changedNotification, watch: watch)
    w.raw(",")
    return w.bytes
  }

  /// What follows an event's members: the line can go out as the watch's
  /// head, then the members and this end, shared by every watcher.
  public static let changedEventEnd = Array("}}\n".utf8)

  /// A whole `schemaChanged` notification line (with its newline) for one watch.
  public static func writeSchemaChangedEvent(
    _ w: inout JSONWriter, watch: String, _ changes: SchemaChanges
  ) {
    writeNotificationHead(&w, method: WireField.schemaChangedNotification, watch: watch)
    w.member(WireField.added)
    writeSchemaChangeLists(&w, changes)
    w.raw("}}\n")
  }

  /// `[added…],"removed":[…],"updated":[…]`: the lists of a schema change
  /// after its `added` member's name (JSON-RPC's notification, varlink's reply).
  static func writeSchemaChangeLists(_ w: inout JSONWriter, _ changes: SchemaChanges) {
    w.strings(changes.added)
    w.member(WireField.removed)
    w.strings(changes.removed)
    w.member(WireField.updated)
    w.strings(changes.updated)
  }

  /// `{"jsonrpc":"2.0","method":…,"params":{"watch":…`: a notification to
  /// one watch, up to the members after `watch`.
  private static func writeNotificationHead(
    _ w: inout JSONWriter, method: String, watch: String
  ) {
    w.firstMember(WireField.jsonrpc)
    w.string(WireField.jsonrpcVersion)
    w.member(WireField.method)
    w.string(method)
    w.member(WireField.params)
    w.firstMember(WireField.watch)
    w.string(watch)
  }

  static func writeTime(_ w: inout JSONWriter, _ ms: Int64) {
    w.raw("\"")
    Timestamp.append(milliseconds: ms, to: &w)
    w.raw("\"")
  }
}

/// The members of a Switch object that only the schema sets, encoded once per definition:
/// the loop encodes a Switch again after each change, and these are most of its bytes.
/// A class: a copy out of the loop's cache is one reference, not four arrays retained
/// and released per answer (callgrind).
///
/// One array of each part, not one per variant: a template is kept for
/// every declared switch a client reads, and the variants (a `checked` of
/// `false`, a `policySource` of its own) write a prefix of the array and
/// then what differs. Two copies of each took ~2.9 MB with 10,000 switches
/// listed (`switchbench --only instructions`'s peak-RSS configuration).
public final class SwitchTemplate: Sendable {
  /// `{"key":…,"label":…,"description":…,"checked":true`: `checked` true
  /// in one append, false in two (`"false"` after all but its last 4 bytes).
  let head: [UInt8]
  public let defaultChecked: Bool
  public let scope: Scope
  /// `,"checkedIcon":…,"uncheckedIcon":…,"group":…,"order":…,"policySource":null`:
  /// most switches have no policy; one that has writes its source after
  /// all but the last 4 bytes.
  let icons: [UInt8]

  /// A writer's capacity for one Switch object of this template, its
  /// holds and reasons short: room enough that it is not grown and copied
  /// while written (twice per object at 512 and 256 bytes: ~3k
  /// instructions of a toggle's answer, callgrind).
  public var objectCapacity: Int { head.count + 1 + middleCapacity + 192 }

  /// The same for its middle members (`WireEncoding.switchMiddle`).
  var middleCapacity: Int { icons.count + 384 }

  /// Made for each switch the first time it is read: its names are fixed
  /// bytes and the writer is sized for the strings (a `get` of a switch not
  /// read before cost ~6k instructions more than one of a kept object,
  /// half of it here; callgrind).
  public init(_ definition: SwitchDefinition) {
    // Room for the names and quotes, and the strings unescaped; `escaped`
    // grows the writer for anything escaped.
    var w = JSONWriter(
      capacity: 96 + definition.key.utf8.count + (definition.label?.utf8.count ?? 0)
        + definition.description.utf8.count + definition.checkedIcon.utf8.count
        + definition.uncheckedIcon.utf8.count + definition.group.utf8.count)
    Self.writeHead(&w, definition, checked: true)
    head = w.bytes
    defaultChecked = definition.defaultChecked
    scope = definition.scope
    w.removeAll()
    Self.writeIcons(&w, definition, policySource: nil)
    icons = w.bytes
  }

  /// `{"key":…,"label":…,"description":…,"checked":` and `checked`.
  static func writeHead(_ w: inout JSONWriter, _ definition: SwitchDefinition, checked: Bool) {
    typealias Parts = WireEncoding.Parts
    w.raw(Parts.templateKey)
    w.escaped(definition.key)
    w.raw(Parts.templateLabel)
    w.escaped(definition.label ?? "")
    w.raw(Parts.templateDescription)
    w.escaped(definition.description)
    w.raw(checked ? Parts.templateChecked : Parts.templateUnchecked)
  }

  /// `,"checkedIcon":…,"uncheckedIcon":…,"group":…,"order":…,"policySource":`
  /// and the source, or null.
  static func writeIcons(
    _ w: inout JSONWriter, _ definition: SwitchDefinition, policySource: String?
  ) {
    typealias Parts = WireEncoding.Parts
    w.raw(Parts.templateCheckedIcon)
    w.escaped(definition.checkedIcon)
    w.raw(Parts.templateUncheckedIcon)
    w.escaped(definition.uncheckedIcon)
    w.raw(Parts.templateGroup)
    w.escaped(definition.group)
    w.raw(Parts.templateOrder)
    w.int(Int64(definition.order))
    w.raw(Parts.templatePolicySource)
    if let policySource { w.string(policySource) } else { w.null() }
  }
}
