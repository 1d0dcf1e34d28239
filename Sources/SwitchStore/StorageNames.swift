import SwitchCore

// How SwitchCore's enums are spelled in the database.
//
// Written out here rather than taken from case names or the wire spelling: these strings are a
// file format, so renaming a case or a wire name must not change what old files mean. Adding a
// name is a schema change (a migration), since an older switchd would read it as damage.

// The names are StaticStrings: bound without a copy (SQLiteStatement.bind(_: StaticString)).

extension Holder {
  var storageName: StaticString {
    switch self {
    case .policy: return "policy"
    case .admin: return "admin"
    case .dependency: return "dependency"
    }
  }

  init?(storageName: String) {
    switch storageName {
    case "policy": self = .policy
    case "admin": self = .admin
    case "dependency": self = .dependency
    default: return nil
    }
  }
}

extension Cause {
  var storageName: StaticString {
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

  init?(storageName: String) {
    switch storageName {
    case "set": self = .set
    case "toggle": self = .toggle
    case "reset": self = .reset
    case "lock": self = .lock
    case "unlock": self = .unlock
    case "disable": self = .disable
    case "enable": self = .enable
    case "policy": self = .policy
    case "dependency": self = .dependency
    case "apply": self = .apply
    case "reconcile": self = .reconcile
    case "external": self = .external
    case "drift": self = .drift
    case "expiry": self = .expiry
    case "confirm": self = .confirm
    case "revert": self = .revert
    default: return nil
    }
  }
}

extension Actor {
  /// `changes.actor_source` of a change the system made (schema migration 5).
  static let systemStorageName = "system"
  /// `changes.actor_source` of a change a deadline made (schema migration 6).
  static let timerStorageName = "timer"

  /// `changes.actor_source`: NULL when the cause and null ids say who it was.
  var storageSource: String? {
    switch self {
    case .system: return Actor.systemStorageName
    case .timer: return Actor.timerStorageName
    case .peer, .policy, .reconcile: return nil
    }
  }

  /// The actor of a row with null ids, by its `actor_source` and cause.
  static func stored(source: String?, cause: Cause) -> Actor {
    switch source {
    case systemStorageName?: return .system
    case timerStorageName?: return .timer
    default: return .configuration(cause)
    }
  }
}

extension TriedChange {
  /// `pending` as stored: "uid gid pid bootDeadline revertOnDisconnect bootID" (a boot id
  /// has no spaces). Only a client makes a tried change, so the maker is a peer.
  var storageText: String? {
    guard case .peer(let uid, let gid, let pid) = maker else { return nil }
    return "\(uid) \(gid) \(pid) \(bootDeadline) \(revertOnDisconnect ? 1 : 0) \(bootID)"
  }

  init?(storageText: String) {
    let parts = storageText.split(separator: " ", omittingEmptySubsequences: false)
    guard parts.count == 6, let uid = UInt32(parts[0]), let gid = UInt32(parts[1]),
      let pid = Int32(parts[2]), let deadline = Int64(parts[3]), parts[4] == "0" || parts[4] == "1"
    else { return nil }
    self.init(
      maker: .peer(uid: uid, gid: gid, pid: pid), bootDeadline: deadline, bootID: String(parts[5]),
      revertOnDisconnect: parts[4] == "1")
  }
}
