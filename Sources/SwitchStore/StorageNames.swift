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

/// `changes.what` (schema migration 8): a change's cause (bits 0–7), who
/// made it when its ids are NULL (`Actor.storageSource`, bits 8–11) and
/// its State's and previous State's `checked` (bits 12 and 13), in one
/// integer: a row's column costs its insert more than the bits do.
enum ChangeWhat {
  static func of(
    cause: Cause, source: Int64, checked: Bool, previousChecked: Bool
  ) -> Int64 {
    cause.storageCode | source << 8 | (checked ? 1 << 12 : 0) | (previousChecked ? 1 << 13 : 0)
  }

  /// The SQL of `what`'s parts, as `SQL.changeColumns` reads them.
  static let causeSQL = "(what & 255)"
  static let sourceSQL = "((what >> 8) & 15)"
  static let checkedSQL = "((what >> 12) & 1)"
  static let previousCheckedSQL = "((what >> 13) & 1)"
}

/// `changes.actor` (schema migration 9): the uid (bits 0–31) and gid
/// (bits 32–63) of who made a change, in one integer; NULL when the change
/// names no peer (`changes.what` says who then).
enum ActorIDs {
  static func of(uid: UInt32, gid: UInt32) -> Int64 {
    Int64(bitPattern: UInt64(uid) | UInt64(gid) << 32)
  }

  /// The SQL of its parts, as `SQL.changeColumns` reads them (NULL stays NULL).
  static let uidSQL = "(actor & 4294967295)"
  static let gidSQL = "((actor >> 32) & 4294967295)"
}

extension Cause {
  /// Its number in `changes.what`. Migration 8 maps the names older files
  /// hold to these: a number, once given, means that cause for ever.
  var storageCode: Int64 {
    switch self {
    case .set: return 1
    case .toggle: return 2
    case .reset: return 3
    case .lock: return 4
    case .unlock: return 5
    case .disable: return 6
    case .enable: return 7
    case .policy: return 8
    case .dependency: return 9
    case .apply: return 10
    case .reconcile: return 11
    case .external: return 12
    case .drift: return 13
    case .expiry: return 14
    case .confirm: return 15
    case .revert: return 16
    }
  }

  init?(storageCode: Int64) {
    guard let cause = Cause.allCases.first(where: { $0.storageCode == storageCode }) else {
      return nil
    }
    self = cause
  }
}

extension Actor {
  /// Who made a change whose ids are NULL, in `changes.what`: 0 when its
  /// cause says (a policy file, switchd's reconcile), 1 the system (schema
  /// migration 5's `actor_source` 'system'), 2 a deadline (migration 6's 'timer').
  var storageSource: Int64 {
    switch self {
    case .system: return 1
    case .timer: return 2
    case .peer, .policy, .reconcile: return 0
    }
  }

  /// The actor of a row with null ids, by its source and cause; nil for a
  /// source this build does not know.
  static func stored(source: Int64, cause: Cause) -> Actor? {
    switch source {
    case 0: return .configuration(cause)
    case 1: return .system
    case 2: return .timer
    default: return nil
    }
  }
}

extension TriedChange {
  /// `pending` as stored: "uid gid pid bootDeadline revertOnDisconnect makerIsAdministrator
  /// bootID" (flags 0 or 1; a boot id has no spaces, and comes last). Only a client makes a
  /// tried change, so the maker is a peer. Text of six fields, without the administrator's
  /// flag, is what builds before migration 12 wrote: not an administrator.
  var storageText: String? {
    guard case .peer(let uid, let gid, let pid) = maker else { return nil }
    let flags = "\(revertOnDisconnect ? 1 : 0) \(makerIsAdministrator ? 1 : 0)"
    return "\(uid) \(gid) \(pid) \(bootDeadline) \(flags) \(bootID)"
  }

  init?(storageText: String) {
    let parts = storageText.split(separator: " ", omittingEmptySubsequences: false)
    let isFlag = { (part: Substring) in part == "0" || part == "1" }
    guard parts.count == 6 || (parts.count == 7 && isFlag(parts[5])), let uid = UInt32(parts[0]),
      let gid = UInt32(parts[1]), let pid = Int32(parts[2]), let deadline = Int64(parts[3]),
      isFlag(parts[4]), let bootID = parts.last, !bootID.isEmpty
    else { return nil }
    self.init(
      maker: .peer(uid: uid, gid: gid, pid: pid),
      makerIsAdministrator: parts.count == 7 && parts[5] == "1", bootDeadline: deadline,
      bootID: String(bootID), revertOnDisconnect: parts[4] == "1")
  }
}
