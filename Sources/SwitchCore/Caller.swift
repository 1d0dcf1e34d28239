/// What the daemon knows of whoever sent a request: identity from
/// SO_PEERCRED (never from the request) and the rights that follow from it.
public struct Caller: Equatable, Sendable {
  public var actor: Actor
  /// uid 0, or a member of the configured admin group.
  public var isAdmin: Bool
  /// May set, toggle and reset (see `WritersGroup`).
  public var mayWrite: Bool

  public init(actor: Actor, isAdmin: Bool, mayWrite: Bool) {
    self.actor = actor
    self.isAdmin = isAdmin
    self.mayWrite = mayWrite
  }

  /// Whether this caller has `privilege`.
  public func has(_ privilege: Privilege) -> Bool {
    switch privilege {
    case .anyone: return true
    case .writer: return mayWrite
    case .administrator: return isAdmin
    }
  }

  /// The rights of a peer, from the table "Who may do what" in docs/semantics.md.
  /// - Parameters:
  ///   - groups: the peer's primary and supplementary groups (SO_PEERGROUPS).
  ///   - adminGroup: gid of `AdminGroup`, nil when unset or missing (root only).
  ///   - writers: who the `Writers` setting lets write.
  public static func peer(
    uid: UInt32, gid: UInt32, pid: Int32, groups: [UInt32], adminGroup: UInt32?,
    writers: WritersGroup
  ) -> Caller {
    func isMember(_ group: UInt32) -> Bool { gid == group || groups.contains(group) }
    let isAdmin = uid == 0 || adminGroup.map(isMember) == true
    let mayWrite: Bool
    switch writers {
    case .everyone: mayWrite = true
    case .members(let group): mayWrite = isAdmin || isMember(group)
    case .missing: mayWrite = isAdmin
    }
    return Caller(actor: .peer(uid: uid, gid: gid, pid: pid), isAdmin: isAdmin, mayWrite: mayWrite)
  }
}

/// Who may set, toggle and reset, from the `Writers` setting. Administrators
/// always may.
public enum WritersGroup: Equatable, Sendable {
  /// No `Writers` group is configured: everyone writes.
  case everyone
  /// Members of this gid write.
  case members(UInt32)
  /// `Writers` names a group that does not exist. It was set to restrict, so
  /// nobody but administrators writes: a typo must not open writes to all.
  case missing(name: String)

  /// `name` is the setting (nil or empty: unset); `lookUp` finds its gid.
  public static func resolve(_ name: String?, lookUp: (String) -> UInt32?) -> WritersGroup {
    guard let name, !name.isEmpty else { return .everyone }
    guard let gid = lookUp(name) else { return .missing(name: name) }
    return .members(gid)
  }

  /// The warning to log for a group that does not exist, nil otherwise.
  public var warning: String? {
    guard case .missing(let name) = self else { return nil }
    return "Writers group \(name) does not exist: only administrators may change switches"
  }
}
