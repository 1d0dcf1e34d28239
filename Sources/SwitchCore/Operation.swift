/// A request to change one switch, as the rules see it.
public enum Operation: Equatable, Sendable {
  case set(checked: Bool, ifRevision: Int64?)
  case toggle(ifRevision: Int64?)
  case reset
  case lock(reason: String?, checked: Bool?)
  case unlock
  case disable(reason: String?)
  case enable
  /// Runs the apply command again with the effective value; changes no value.
  case apply
  /// Carries out the earliest deadline of the switch that has passed
  /// (`Rules.expired`): switchd's own, at the deadline; nobody asks for it.
  case expire
  /// Keeps a tried change (rule 20): its maker or an administrator.
  case confirm
  /// Undoes a tried change now: its maker or an administrator, or switchd
  /// for the maker at the deadline or when its connection closed.
  case revert

  public var cause: Cause {
    switch self {
    case .set: return .set
    case .toggle: return .toggle
    case .reset: return .reset
    case .lock: return .lock
    case .unlock: return .unlock
    case .disable: return .disable
    case .enable: return .enable
    case .apply: return .apply
    case .expire: return .expiry
    case .confirm: return .confirm
    case .revert: return .revert
    }
  }

  /// `confirm` and `revert`: they settle a tried change of a value (rule 20).
  public var settlesTrial: Bool { self == .confirm || self == .revert }

  /// set, toggle and reset: they change a value, which is a user's own
  /// on a user-scope switch; the others act on the switch for everyone
  /// (`apply` needs the same privilege as a write but changes no value).
  public var changesValue: Bool {
    switch self {
    case .set, .toggle, .reset: return true
    // confirm and revert settle a tried change: a value written before.
    case .lock, .unlock, .disable, .enable, .apply, .expire, .confirm, .revert: return false
    }
  }

  /// The verb for a person: "You may not lock wifi".
  public var verb: String {
    switch self {
    case .set: return "set"
    case .toggle: return "toggle"
    case .reset: return "reset"
    case .lock: return "lock"
    case .unlock: return "unlock"
    case .disable: return "disable"
    case .enable: return "enable"
    case .apply: return "apply"
    case .expire: return "expire"
    case .confirm: return "confirm"
    case .revert: return "revert"
    }
  }

  /// What the caller must be: the Writers group for set, toggle and reset,
  /// an administrator for lock, unlock, disable and enable.
  public var privilege: Privilege { cause.privilege }
}

/// What a caller must be to ask for something (docs/protocol.md "Methods",
/// column "who"; docs/semantics.md "Who may do what"). The one table of it: the
/// protocol's methods take theirs from here.
public enum Privilege: Sendable, Equatable {
  /// Reads, watches, history, status.
  case anyone
  /// Changes a value: members of the `Writers` group (everyone when none is set).
  case writer
  /// Holds, disables, or changes the configuration.
  case administrator
}

extension Cause {
  /// What a caller must be to make a change of this cause. A policy change
  /// comes from the configuration, which only an administrator may reload.
  public var privilege: Privilege {
    switch self {
    case .set, .toggle, .reset, .apply: return .writer
    case .lock, .unlock, .disable, .enable, .policy, .reconcile: return .administrator
    // switchd's own, following the system; no caller asks for it.
    case .external, .drift, .expiry: return .administrator
    // Made with another change, by whoever may make that one; nobody asks for it.
    case .dependency: return .anyone
    // The rules decide: the tried change's maker, or an administrator.
    case .confirm, .revert: return .anyone
    }
  }
}
