/// Who holds a switch read-only, or disabled it.
public enum Holder: Sendable, Hashable, CaseIterable {
  case policy
  case admin
  case dependency
}

/// The fields most States lack (`SwitchState.rare`): the reasons of its
/// holds and its deadlines.
struct RareFields: Hashable, Sendable {
  var readOnlyReason: String? = nil
  var disabledReason: String? = nil
  var invalidReason: String? = nil
  var pendingUntil: Int64? = nil
  var pending: TriedChange? = nil
  var expiresAt: Int64? = nil
  var expiryByAdministrator = false
  var readOnlyUntil: Int64? = nil
  var disabledUntil: Int64? = nil

  var hasDeadlines: Bool {
    pendingUntil != nil || pending != nil || expiresAt != nil || readOnlyUntil != nil
      || disabledUntil != nil
  }

  var isEmpty: Bool {
    readOnlyReason == nil && disabledReason == nil && invalidReason == nil && !hasDeadlines
  }
}

/// Immutable, so a State stays a value: a change of a field makes a new box.
/// Equal and hashed by its fields.
final class RareBox: Hashable, Sendable {
  let fields: RareFields
  init(_ fields: RareFields) { self.fields = fields }
  static func == (a: RareBox, b: RareBox) -> Bool { a === b || a.fields == b.fields }
  func hash(into hasher: inout Hasher) { hasher.combine(fields) }
}

/// The part of a switch that a change can alter; carried by events and history.
public struct SwitchState: Equatable, Hashable, Sendable {
  public var checked: Bool
  public var readOnly: Bool
  public var heldBy: Holder?
  public var disabled: Bool
  public var disabledBy: Holder?
  /// The switch's apply command could not make its effective value real
  /// (SEMANTICS.md rule 15); `invalidReason` is the command's own reason.
  public var invalid: Bool
  /// For a user-scope switch: a hold fixes the value (`Checked=` of a policy,
  /// `lock` with `checked`), so every user reads `checked` and nobody writes
  /// their own. Otherwise `checked` is what a user who never set it reads
  /// (`defaultChecked`). Never set for a system switch. Not a wire field.
  public var valueFixed: Bool
  /// The reasons and deadline fields below, boxed: nearly every State has
  /// none, and a State is copied into every change, outcome and record, so
  /// they cost one nil pointer there, and a copy no retain of a String
  /// (issue 26: the deadlines took ~110 bytes a State, the reasons' Strings
  /// made each copy and destroy go through their value witnesses).
  private var rare: RareBox?

  public var readOnlyReason: String? {
    get { rare?.fields.readOnlyReason }
    set { updateRare(clearing: newValue == nil) { $0.readOnlyReason = newValue } }
  }
  public var disabledReason: String? {
    get { rare?.fields.disabledReason }
    set { updateRare(clearing: newValue == nil) { $0.disabledReason = newValue } }
  }
  public var invalidReason: String? {
    get { rare?.fields.invalidReason }
    set { updateRare(clearing: newValue == nil) { $0.invalidReason = newValue } }
  }
  /// When a tried change reverts unless confirmed (rule 20), on the wall
  /// clock, for people; `pending` says who made it and its real deadline.
  public var pendingUntil: Int64? {
    get { rare?.fields.pendingUntil }
    set { updateRare(clearing: newValue == nil) { $0.pendingUntil = newValue } }
  }
  /// The tried change waiting for `confirm`; not a wire field.
  public var pending: TriedChange? {
    get { rare?.fields.pending }
    set { updateRare(clearing: newValue == nil) { $0.pending = newValue } }
  }
  /// When a timed value ends and the value from before comes back
  /// (SEMANTICS.md rule 21), in milliseconds since the epoch; nil: not timed.
  public var expiresAt: Int64? {
    get { rare?.fields.expiresAt }
    set {
      updateRare(clearing: newValue == nil) {
        $0.expiresAt = newValue
        if newValue == nil { $0.expiryByAdministrator = false }
      }
    }
  }
  /// Whether an administrator set the timed value: its end is judged as a
  /// write by its maker would be (SEMANTICS.md, after rule 22), and an
  /// administrator writes through a hold that does not fix the value.
  /// Meaningless (and false) without `expiresAt`; not a wire field.
  public var expiryByAdministrator: Bool {
    get { rare?.fields.expiryByAdministrator ?? false }
    set {
      updateRare(clearing: !newValue) { $0.expiryByAdministrator = newValue && $0.expiresAt != nil }
    }
  }
  /// When an administrator's `lock` or `disable` lifts by itself (rule 22),
  /// or a scheduled policy's window ends.
  public var readOnlyUntil: Int64? {
    get { rare?.fields.readOnlyUntil }
    set { updateRare(clearing: newValue == nil) { $0.readOnlyUntil = newValue } }
  }
  public var disabledUntil: Int64? {
    get { rare?.fields.disabledUntil }
    set { updateRare(clearing: newValue == nil) { $0.disabledUntil = newValue } }
  }

  /// Whether any deadline field is set.
  public var hasDeadlines: Bool { rare?.fields.hasDeadlines ?? false }

  /// Sets the four fields a user's own value has (its timer and its tried
  /// change) at once. A State with no rare fields given none is left as it
  /// is: nearly every user's write, where four setters, one of them taking
  /// an Optional TriedChange (a String inside), cost ~340 instructions for
  /// nothing (callgrind).
  mutating func setUserDeadlines(
    expiresAt: Int64?, byAdministrator: Bool, pendingUntil: Int64?, pending: TriedChange?
  ) {
    if rare == nil && expiresAt == nil && pendingUntil == nil && pending == nil { return }
    self.expiresAt = expiresAt
    self.expiryByAdministrator = byAdministrator
    self.pendingUntil = pendingUntil
    self.pending = pending
  }

  /// `clearing`: the field is set to nil, which a State without rare
  /// fields already holds (the rules clear deadlines on every toggle: a
  /// box made and dropped each time, callgrind).
  private mutating func updateRare(clearing: Bool, _ change: (inout RareFields) -> Void) {
    if clearing && rare == nil { return }
    var fields = rare?.fields ?? RareFields()
    change(&fields)
    rare = fields.isEmpty ? nil : RareBox(fields)
  }

  public init(
    checked: Bool, readOnly: Bool = false, readOnlyReason: String? = nil, heldBy: Holder? = nil,
    disabled: Bool = false, disabledReason: String? = nil, disabledBy: Holder? = nil,
    invalid: Bool = false, invalidReason: String? = nil, valueFixed: Bool = false,
    expiresAt: Int64? = nil, expiryByAdministrator: Bool = false, readOnlyUntil: Int64? = nil,
    disabledUntil: Int64? = nil, pendingUntil: Int64? = nil, pending: TriedChange? = nil
  ) {
    let fields = RareFields(
      readOnlyReason: readOnlyReason, disabledReason: disabledReason,
      invalidReason: invalidReason, pendingUntil: pendingUntil, pending: pending,
      expiresAt: expiresAt, expiryByAdministrator: expiresAt != nil && expiryByAdministrator,
      readOnlyUntil: readOnlyUntil, disabledUntil: disabledUntil)
    self.rare = fields.isEmpty ? nil : RareBox(fields)
    self.valueFixed = valueFixed
    self.checked = checked
    self.readOnly = readOnly
    self.heldBy = heldBy
    self.disabled = disabled
    self.disabledBy = disabledBy
    self.invalid = invalid
  }

  /// The State fields that differ between `self` and `other`, in wire order.
  public func changedFields(from other: SwitchState) -> [StateField] {
    var fields: [StateField] = []
    if checked != other.checked { fields.append(.checked) }
    if readOnly != other.readOnly { fields.append(.readOnly) }
    if readOnlyReason != other.readOnlyReason { fields.append(.readOnlyReason) }
    if heldBy != other.heldBy { fields.append(.heldBy) }
    if disabled != other.disabled { fields.append(.disabled) }
    if disabledReason != other.disabledReason { fields.append(.disabledReason) }
    if disabledBy != other.disabledBy { fields.append(.disabledBy) }
    if invalid != other.invalid { fields.append(.invalid) }
    if invalidReason != other.invalidReason { fields.append(.invalidReason) }
    guard hasDeadlines || other.hasDeadlines else { return fields }
    if pendingUntil != other.pendingUntil { fields.append(.pendingUntil) }
    if expiresAt != other.expiresAt { fields.append(.expiresAt) }
    if readOnlyUntil != other.readOnlyUntil { fields.append(.readOnlyUntil) }
    if disabledUntil != other.disabledUntil { fields.append(.disabledUntil) }
    return fields
  }

  /// Neither held read-only, disabled nor invalid, with no reasons: how most switches are.
  public var isFree: Bool {
    !readOnly && !disabled && heldBy == nil && disabledBy == nil && readOnlyReason == nil
      && disabledReason == nil && !invalid && invalidReason == nil && rare == nil
  }

  /// The earliest of its deadlines, when it has one: when the writer must
  /// look at it again (`Rules.expired`).
  public var nextDeadline: Int64? {
    // No array: every committed change asks this (the writer's index).
    guard hasDeadlines else { return nil }
    var earliest = expiresAt
    // A policy's hold ends with its schedule's window: no timer of its own.
    if let at = readOnlyUntil, heldBy == .admin, earliest.map({ at < $0 }) ?? true {
      earliest = at
    }
    if let at = disabledUntil, disabledBy == .admin, earliest.map({ at < $0 }) ?? true {
      earliest = at
    }
    return earliest
  }

  /// Whether the setting is on and in effect: a disabled switch does not apply.
  /// This is `effective`, the value an apply command makes real.
  public var isOnAndInEffect: Bool { checked && !disabled }

  /// This state with the apply command's verdict: cleared after a success,
  /// `invalid` with `reason` after a failure.
  public func applied(failure reason: String?) -> SwitchState {
    var next = self
    next.invalid = reason != nil
    next.invalidReason = reason
    return next
  }
}

/// The State fields; `fields` of an event lists those a change altered.
public enum StateField: Sendable, CaseIterable {
  case checked
  case readOnly
  case readOnlyReason
  case heldBy
  case disabled
  case disabledReason
  case disabledBy
  case invalid
  case invalidReason
  case pendingUntil
  case expiresAt
  case readOnlyUntil
  case disabledUntil
}

/// A switch as stored: its state and when it last changed.
public struct SwitchRecord: Equatable, Sendable {
  /// The key with its hash, made once: a change's record carries its
  /// change's, so the loop finds the answer's switch without hashing again.
  public var hashedKey: HashedKey
  public var key: String { hashedKey.string }
  public var state: SwitchState
  /// The global revision of the last change to this switch; 0 if never changed.
  public var revision: Int64
  /// Milliseconds since the epoch of the last change; nil if never changed.
  public var changedAt: Int64?

  public init(key: String, state: SwitchState, revision: Int64 = 0, changedAt: Int64? = nil) {
    self.init(key: HashedKey(key), state: state, revision: revision, changedAt: changedAt)
  }

  public init(key: HashedKey, state: SwitchState, revision: Int64 = 0, changedAt: Int64? = nil) {
    self.hashedKey = key
    self.state = state
    self.revision = revision
    self.changedAt = changedAt
  }
}

/// The words a person may write for a boolean, in a config file or on
/// switchctl's command line (docs/semantics.md): one list for both.
public enum BooleanWord {
  /// on/off, yes/no, true/false, 1/0, in any case; nil for anything else.
  public static func parse(_ word: String) -> Bool? {
    switch word.lowercased() {
    case "on", "yes", "true", "1": return true
    case "off", "no", "false", "0": return false
    default: return nil
    }
  }

  /// The accepted words for a message: "on/off, yes/no, true/false or 1/0".
  public static let choices = "on/off, yes/no, true/false or 1/0"
}
