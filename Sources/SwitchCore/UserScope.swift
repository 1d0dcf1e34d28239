/// Whose value a switch keeps (`Scope=`, docs/semantics.md rules 11–13).
public enum Scope: Sendable, Hashable, CaseIterable {
  /// One value for the machine.
  case system
  /// One value per user (uid); holds and disables stay the switch's.
  case user

  /// The word `Scope=` takes.
  public var configName: String {
    switch self {
    case .system: return "system"
    case .user: return "user"
    }
  }

  public init?(configName: String) {
    guard let match = Scope.allCases.first(where: { $0.configName == configName }) else {
      return nil
    }
    self = match
  }
}

/// One user's own value of a user-scope switch, and its last change.
public struct UserValue: Equatable, Sendable {
  public var checked: Bool
  /// The global revision of the change that set it.
  public var revision: Int64
  /// Milliseconds since the epoch.
  public var changedAt: Int64
  /// When this user's timed value ends (rule 21: "my notifications off for
  /// an hour"), milliseconds since the epoch; nil: it lasts.
  public var expiresAt: Int64?
  /// Whether an administrator (acting as the user) set the timed value:
  /// its end is judged as their write would be (`Rules.holdWinsOverUndo`).
  public var expiryByAdministrator: Bool
  /// When this user's tried change reverts unless confirmed (rule 20), on
  /// the wall clock; `pending` says who made it and its real deadline.
  public var pendingUntil: Int64? { trial?.pendingUntil }
  public var pending: TriedChange? { trial?.pending }
  /// The two, boxed: nearly no value is tried, and a TriedChange (its boot
  /// id a String) in every value made each copy of one, in the writer's and
  /// the loop's tables, go through its value witnesses (a user's toggle
  /// cost ~2.5k instructions more, callgrind); a nil reference costs none.
  private var trial: UserTrial?

  /// Whether a timer is due for it: a timed value, or a tried change.
  public var hasDeadlines: Bool { expiresAt != nil || trial != nil }

  public init(
    checked: Bool, revision: Int64, changedAt: Int64, expiresAt: Int64? = nil,
    expiryByAdministrator: Bool = false, pendingUntil: Int64? = nil, pending: TriedChange? = nil
  ) {
    self.checked = checked
    self.revision = revision
    self.changedAt = changedAt
    self.expiresAt = expiresAt
    self.expiryByAdministrator = expiresAt != nil && expiryByAdministrator
    if let pendingUntil, let pending {
      trial = UserTrial(pendingUntil: pendingUntil, pending: pending)
    }
  }
}

/// A user's tried change, as `UserValue` keeps it: immutable, so a value
/// stays a value.
final class UserTrial: Equatable, Sendable {
  let pendingUntil: Int64
  let pending: TriedChange

  init(pendingUntil: Int64, pending: TriedChange) {
    self.pendingUntil = pendingUntil
    self.pending = pending
  }

  static func == (a: UserTrial, b: UserTrial) -> Bool {
    a === b || (a.pendingUntil == b.pendingUntil && a.pending == b.pending)
  }
}

/// Every user's own values: by key, then by uid. A user missing from a key
/// never set it. A `KeyTable`: a write of a user's value looked its key up
/// here three times on the writer and once on the loop, each a SipHash of
/// the key (~1k of a toggle of a user-scope switch, callgrind).
public typealias UserValues = KeyTable<UserValueTable>

/// One switch's users' own values, by uid. Reads and writes like a
/// Dictionary of UInt32 keys, but hashes a uid with two multiplies: a
/// Dictionary's UInt32 key is hashed with SipHash (~75 instructions), and a
/// write of a user's value looked its uid up three times (callgrind).
public struct UserValueTable: Sequence, Equatable, Sendable, ExpressibleByDictionaryLiteral {
  @usableFromInline
  struct UID: Hashable, Sendable {
    @usableFromInline let raw: UInt32
    @inlinable init(_ raw: UInt32) { self.raw = raw }
    @inlinable func hash(into hasher: inout Hasher) { hasher.combine(raw) }
    /// The uid's bits spread over the word (`KeyHash.finalized`), the
    /// table's seed mixed in after, as `HashedKey` does.
    @inlinable func _rawHashValue(seed: Int) -> Int {
      KeyHash.reseeded(
        Int(bitPattern: UInt(truncatingIfNeeded: KeyHash.finalized(UInt64(raw)))), seed: seed)
    }
  }

  @usableFromInline var table: [UID: UserValue]

  public init() { table = [:] }

  public init(dictionaryLiteral elements: (UInt32, UserValue)...) {
    table = [:]
    for (user, value) in elements { table[UID(user)] = value }
  }

  @inlinable
  public subscript(user: UInt32) -> UserValue? {
    get { table.isEmpty ? nil : table[UID(user)] }
    set { table[UID(user)] = newValue }
  }

  /// Sets `user`'s value; returns the one it replaced.
  @inlinable @discardableResult
  public mutating func updateValue(_ value: UserValue, forKey user: UInt32) -> UserValue? {
    table.updateValue(value, forKey: UID(user))
  }

  public var isEmpty: Bool { table.isEmpty }
  public var count: Int { table.count }

  public mutating func reserveCapacity(_ count: Int) { table.reserveCapacity(count) }

  public func makeIterator() -> Iterator { Iterator(base: table.makeIterator()) }

  public struct Iterator: IteratorProtocol {
    var base: Dictionary<UID, UserValue>.Iterator
    public mutating func next() -> (key: UInt32, value: UserValue)? {
      base.next().map { (key: $0.key.raw, value: $0.value) }
    }
  }
}

/// Whose world a read, a watch or a history page shows.
public enum Viewpoint: Equatable, Hashable, Sendable {
  /// One user's: system switches, the switch-level changes of user-scope
  /// switches, and that user's own values.
  case user(UInt32)
  /// An administrator's `"user": "*"`: every user's value changes, and
  /// user-scope switches as a user who never set them sees them.
  case everyone

  /// The uid, nil for everyone.
  public var uid: UInt32? {
    if case .user(let uid) = self { return uid }
    return nil
  }
}

/// Who sees what of user-scope switches: the one place every read,
/// snapshot, event, replay and history page takes it from.
public enum Visibility {
  /// A user-scope switch as `viewpoint` reads it now: its switch-level
  /// `record` with the user's own value, and the revision and time of the
  /// last change that user sees. `everyone` reads what a user who never
  /// set it reads.
  public static func record(
    _ record: SwitchRecord, own: UserValue?, definition: SwitchDefinition
  ) -> SwitchRecord {
    let seen = value(record, own: own, defaultChecked: definition.defaultChecked)
    // In place: through `state(_:checked:own:)` the State was copied a
    // second time and the record's destroyed (~0.15k of a write of a
    // user's value, whose answer this is; callgrind).
    var result = record
    show(own, checked: seen.checked, in: &result.state)
    result.revision = seen.revision
    result.changedAt = seen.changedAt
    return result
  }

  /// The State a user reads of a user-scope switch: its switch-level
  /// `state` with what they read of its value (`value(...)`), and their
  /// own value's timer and tried change (the switch itself never has them).
  public static func state(_ state: SwitchState, checked: Bool, own: UserValue?) -> SwitchState {
    var seen = state
    show(own, checked: checked, in: &seen)
    return seen
  }

  /// `state` with `checked` and `own`'s timers (none when nil): the one
  /// place a user's value is drawn into a switch-level State.
  static func show(_ own: UserValue?, checked: Bool, in state: inout SwitchState) {
    state.checked = checked
    state.setUserDeadlines(
      expiresAt: own?.expiresAt, byAdministrator: own?.expiryByAdministrator ?? false,
      pendingUntil: own?.pendingUntil, pending: own?.pending)
  }

  /// What a user reads of a user-scope switch's value (the fixed value
  /// while a hold fixes one, else their own, else the default), and the
  /// revision and time of the last change they see: `record` without
  /// copying the switch.
  public static func value(
    _ record: SwitchRecord, own: UserValue?, defaultChecked: Bool
  ) -> (checked: Bool, revision: Int64, changedAt: Int64?) {
    let checked = record.state.valueFixed ? record.state.checked : own?.checked ?? defaultChecked
    if let own, own.revision > record.revision {
      return (checked, own.revision, own.changedAt)
    }
    return (checked, record.revision, record.changedAt)
  }

  /// Whether `viewpoint` is shown `change` at all: another user's value
  /// change is never shown to a user.
  public static func shows(_ change: Change, to viewpoint: Viewpoint) -> Bool {
    guard let user = change.user, case .user(let viewer) = viewpoint else { return true }
    return user == viewer
  }

  /// `change` as `viewpoint` sees it, or nil when it is not shown (another
  /// user's value) or changes nothing that viewer sees.
  ///
  /// A switch-level change of a user-scope switch gets the viewer's own
  /// value as of that change (`own`; nil: never set): what they set,
  /// wherever no hold fixes the value, and their timers, which `get` shows
  /// them with it (rules 20–21). A change of a user's own value under a hold
  /// that fixes the value shows the value the hold fixes (`fixed`: the
  /// switch's `checked` as of that change), which that user reads, not the
  /// value they keep beneath it: a timer's end, a confirm or a revert there
  /// changes their timer, not what they read (chaos audit, stop 65).
  public static func view(
    _ change: Change, for viewpoint: Viewpoint, own: SeenOwnValue?, fixed: Bool? = nil
  ) -> Change? {
    guard shows(change, to: viewpoint) else { return nil }
    var seen = change
    if change.user != nil {
      guard let fixed, change.isOwnValueUnderAFixingHold else {
        return change.fields.isEmpty ? nil : change
      }
      if seen.state.valueFixed { seen.state.checked = fixed }
      if seen.previous.valueFixed { seen.previous.checked = fixed }
    } else if let own, viewpoint != .everyone {
      own.show(in: &seen.state)
      own.show(in: &seen.previous)
    }
    return seen.fields.isEmpty ? nil : seen
  }
}

extension Change {
  /// A change of a user's own value made while a hold fixes the switch's
  /// value (a timer's end, a confirm, a revert): what that user reads is
  /// the fixed value, which `Visibility.view` takes as `fixed`.
  public var isOwnValueUnderAFixingHold: Bool {
    user != nil && (state.valueFixed || previous.valueFixed)
  }
}

/// What a view of a switch-level change of a user-scope switch shows of
/// one user's own value as of that change (`Visibility.view`): the value
/// they set and their timers. Not a `UserValue`: the log may only tell it
/// from what a later change of theirs replaced, whose time it does not keep.
public struct SeenOwnValue: Equatable, Sendable {
  public var checked: Bool
  public var expiresAt: Int64?
  public var expiryByAdministrator: Bool
  public var pendingUntil: Int64?
  public var pending: TriedChange?

  public init(_ value: UserValue) {
    self.init(
      value.checked, value.expiresAt, value.expiryByAdministrator, value.pendingUntil,
      value.pending)
  }

  /// The value a change of the user's own value leaves (its `state`) or
  /// found (its `previous`): both hold that user's value and timers.
  public init(userState state: SwitchState) {
    self.init(
      state.checked, state.expiresAt, state.expiryByAdministrator, state.pendingUntil,
      state.pending)
  }

  private init(
    _ checked: Bool, _ expiresAt: Int64?, _ byAdministrator: Bool, _ pendingUntil: Int64?,
    _ pending: TriedChange?
  ) {
    self.checked = checked
    self.expiresAt = expiresAt
    expiryByAdministrator = byAdministrator
    self.pendingUntil = pendingUntil
    self.pending = pending
  }

  /// Whether it has a timer: its view is that user's alone.
  public var hasDeadlines: Bool { expiresAt != nil || pendingUntil != nil }

  /// `state` (a switch-level State) as this user reads it.
  func show(in state: inout SwitchState) {
    if !state.valueFixed { state.checked = checked }
    state.setUserDeadlines(
      expiresAt: expiresAt, byAdministrator: expiryByAdministrator, pendingUntil: pendingUntil,
      pending: pending)
  }
}
