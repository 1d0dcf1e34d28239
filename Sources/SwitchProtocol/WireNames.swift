import SwitchCore

// The wire spelling of SwitchCore's enums, in one place.

extension Holder {
  public var wireName: String {
    switch self {
    case .policy: return "policy"
    case .admin: return "admin"
    case .dependency: return "dependency"
    }
  }

  public init?(wireName: String) {
    guard let match = Holder.allCases.first(where: { $0.wireName == wireName }) else { return nil }
    self = match
  }
}

extension Cause {
  public var wireName: String {
    switch self {
    case .set: return "set"
    case .toggle: return "toggle"
    case .reset: return "reset"
    case .lock: return "lock"
    case .unlock: return "unlock"
    case .disable: return "disable"
    case .enable: return "enable"
    case .policy: return "policy"
    case .dependency: return "dependency"
    case .apply: return "apply"
    case .reconcile: return "reconcile"
    case .external: return "external"
    case .drift: return "drift"
    case .expiry: return "expiry"
    case .confirm: return "confirm"
    case .revert: return "revert"
    }
  }

  public init?(wireName: String) {
    guard let match = Cause.allCases.first(where: { $0.wireName == wireName }) else { return nil }
    self = match
  }
}

extension StateField {
  public var wireName: String {
    switch self {
    case .checked: return "checked"
    case .readOnly: return "readOnly"
    case .readOnlyReason: return "readOnlyReason"
    case .heldBy: return "heldBy"
    case .disabled: return "disabled"
    case .disabledReason: return "disabledReason"
    case .disabledBy: return "disabledBy"
    case .invalid: return "invalid"
    case .invalidReason: return "invalidReason"
    case .pendingUntil: return "pendingUntil"
    case .expiresAt: return "expiresAt"
    case .readOnlyUntil: return "readOnlyUntil"
    case .disabledUntil: return "disabledUntil"
    }
  }
}

extension StateField {
  public init?(wireName: String) {
    guard let match = StateField.allCases.first(where: { $0.wireName == wireName }) else {
      return nil
    }
    self = match
  }
}

extension Scope {
  /// `scope` of a Switch object: the word `Scope=` takes.
  public var wireName: String { configName }
}

extension Actor {
  /// `source` of an Actor object: who, when no client made the change.
  public var source: String? {
    switch self {
    case .peer: return nil
    case .policy: return "policy"
    case .reconcile: return "reconcile"
    case .system: return "system"
    case .timer: return "timer"
    }
  }
}
