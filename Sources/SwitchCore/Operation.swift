/// A request to change one switch, as the rules see it.
public enum Operation: Equatable, Sendable {
  case set(checked: Bool, ifRevision: Int64?)
  case toggle(ifRevision: Int64?)
  case reset
  case lock(reason: String?, checked: Bool?)
  case unlock
  case disable(reason: String?)
  case enable

  public var cause: Cause {
    switch self {
    case .set: return .set
    case .toggle: return .toggle
    case .reset: return .reset
    case .lock: return .lock
    case .unlock: return .unlock
    case .disable: return .disable
    case .enable: return .enable
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
    }
  }

  /// Administrator verbs: lock, unlock, disable, enable.
  public var isAdministrative: Bool {
    switch self {
    case .set, .toggle, .reset: return false
    case .lock, .unlock, .disable, .enable: return true
    }
  }
}
