// The objects of docs/protocol.md ("Objects", "Events") as a client reads
// them. `WireEncoding` writes them from the daemon's own values; these are
// what those bytes decode to, so that what one writes the other reads
// (WireRoundTripTests). Holders, causes and actor sources stay the words
// sent: a newer daemon may send words this build does not know.

/// A State object: the part of a switch a change can alter.
public struct StateObject: Equatable, Sendable {
  public var checked: Bool
  public var readOnly: Bool
  public var readOnlyReason: String?
  /// `Holder.wireName`, or a holder this build does not know.
  public var heldBy: String?
  public var disabled: Bool
  public var disabledReason: String?
  public var disabledBy: String?
  public var invalid: Bool
  public var invalidReason: String?
  /// Milliseconds since the epoch (SEMANTICS.md rules 20–22); nil: none.
  public var pendingUntil: Int64? = nil
  public var expiresAt: Int64? = nil
  public var readOnlyUntil: Int64? = nil
  public var disabledUntil: Int64? = nil
}

extension StateObject: WireDecodable {
  public static let objectName = "a State"

  /// The State members of `m`: a Switch object has them too.
  public init(members m: WireMembers) throws(WireDecodingError) {
    self.init(
      checked: try m.bool(WireField.checked), readOnly: try m.bool(WireField.readOnly),
      readOnlyReason: try m.stringOrNull(WireField.readOnlyReason),
      heldBy: try m.stringOrNull(WireField.heldBy), disabled: try m.bool(WireField.disabled),
      disabledReason: try m.stringOrNull(WireField.disabledReason),
      disabledBy: try m.stringOrNull(WireField.disabledBy), invalid: try m.bool(WireField.invalid),
      invalidReason: try m.stringOrNull(WireField.invalidReason),
      pendingUntil: try m.timeIfPresent(WireField.pendingUntil),
      expiresAt: try m.timeIfPresent(WireField.expiresAt),
      readOnlyUntil: try m.timeIfPresent(WireField.readOnlyUntil),
      disabledUntil: try m.timeIfPresent(WireField.disabledUntil))
  }
}

/// A Switch object, as `get`, `list`, the writes and a watch snapshot answer.
public struct SwitchObject: Equatable, Sendable {
  public var key: String
  public var label: String
  public var description: String
  public var defaultChecked: Bool
  /// `checked` and the hold members.
  public var state: StateObject
  public var checkedIcon: String
  public var uncheckedIcon: String
  public var group: String
  public var order: Int
  public var policySource: String?
  public var effective: Bool
  /// `Scope.wireName`.
  public var scope: String
  /// Whose value of a user-scope switch `checked` is.
  public var user: UInt32?
  public var revision: Int64
  /// Milliseconds since the epoch; nil if it never changed.
  public var changedAt: Int64?
  public var writable: Bool
  public var writableReason: String?
  /// What the switch's `ExecCheck=`/`ExecWatch=` last read of the system;
  /// nil while unknown or when it reads nothing back (not State).
  public var observed: Bool?
}

extension SwitchObject: WireDecodable {
  public static let objectName = "a Switch"

  public init(members m: WireMembers) throws(WireDecodingError) {
    self.init(
      key: try m.key(WireField.key), label: try m.string(WireField.label),
      description: try m.string(WireField.description),
      defaultChecked: try m.bool(WireField.defaultChecked), state: try StateObject(members: m),
      checkedIcon: try m.string(WireField.checkedIcon),
      uncheckedIcon: try m.string(WireField.uncheckedIcon), group: try m.string(WireField.group),
      order: try m.integer(WireField.order),
      policySource: try m.stringOrNull(WireField.policySource),
      effective: try m.bool(WireField.effective), scope: try m.string(WireField.scope),
      user: try m.integerOrNull(WireField.user), revision: try m.integer(WireField.revision),
      changedAt: try m.timeOrNull(WireField.changedAt), writable: try m.bool(WireField.writable),
      writableReason: try m.stringOrNull(WireField.writableReason),
      // Absent from a daemon older than `observed`: unknown, as null says.
      observed: m.has(WireField.observed) ? try m.boolOrNull(WireField.observed) : nil)
  }
}

/// An Actor object: a client's ids (null when hidden from the viewer), or
/// the `source` of a change switchd made itself.
public struct ActorObject: Equatable, Sendable {
  public var uid: UInt32?
  public var gid: UInt32?
  public var pid: Int32?
  /// `Actor.source`; nil for a client.
  public var source: String?
}

extension ActorObject: WireDecodable {
  public static let objectName = "an Actor"

  public init(members m: WireMembers) throws(WireDecodingError) {
    self.init(
      uid: try m.integerOrNull(WireField.uid), gid: try m.integerOrNull(WireField.gid),
      pid: try m.integerOrNull(WireField.pid),
      source: m.has(WireField.source) ? try m.name(WireField.source) : nil)
  }
}

/// A history Entry: one committed change. A `changed` event carries the same.
public struct EntryObject: Equatable, Sendable {
  public var revision: Int64
  /// Milliseconds since the epoch.
  public var time: Int64
  public var key: String
  /// Whose value changed; nil for a system switch and a switch-level change.
  public var user: UInt32?
  /// `Cause.wireName`, or a cause this build does not know.
  public var cause: String
  /// The State members that changed (`StateField.wireName`).
  public var fields: [String]
  public var actor: ActorObject
  public var state: StateObject
  public var previous: StateObject
}

extension EntryObject: WireDecodable {
  public static let objectName = "a history entry"

  public init(members m: WireMembers) throws(WireDecodingError) {
    self.init(
      revision: try m.integer(WireField.revision), time: try m.time(WireField.time),
      key: try m.key(WireField.key), user: try m.integerOrNull(WireField.user),
      cause: try m.name(WireField.cause), fields: try m.strings(WireField.fields),
      actor: try m.decode(WireField.actor), state: try m.decode(WireField.state),
      previous: try m.decode(WireField.previous))
  }
}

/// The params of a `changed` notification: the watch and its change.
public struct ChangedEvent: Equatable, Sendable {
  public var watch: String
  public var change: EntryObject
}

extension ChangedEvent: WireDecodable {
  public static let objectName = "a changed event"

  public init(members m: WireMembers) throws(WireDecodingError) {
    self.init(
      watch: try m.string(WireField.watch), change: try EntryObject(members: m))
  }
}
