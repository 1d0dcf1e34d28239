/// What the daemon knows of whoever sent a request: identity from
/// SO_PEERCRED (never from the request) and the rights that follow from it.
public struct Caller: Equatable, Sendable {
  public var actor: Actor
  /// uid 0, or a member of the configured admin group.
  public var isAdmin: Bool
  /// May set, toggle and reset: no `Writers` group is configured, the peer is
  /// in it, or the peer is an administrator.
  public var mayWrite: Bool

  public init(actor: Actor, isAdmin: Bool, mayWrite: Bool) {
    self.actor = actor
    self.isAdmin = isAdmin
    self.mayWrite = mayWrite
  }

  /// The rights of a peer, from the table "Who may do what" in SEMANTICS.md.
  /// - Parameters:
  ///   - groups: the peer's primary and supplementary groups (SO_PEERGROUPS).
  ///   - adminGroup: gid of `AdminGroup`, nil when unset or missing (root only).
  ///   - writersGroup: gid of `Writers`, nil when unset (everyone writes).
  public static func peer(
    uid: UInt32, gid: UInt32, pid: Int32, groups: [UInt32], adminGroup: UInt32?,
    writersGroup: UInt32?
  ) -> Caller {
    func isMember(_ group: UInt32) -> Bool { gid == group || groups.contains(group) }
    let isAdmin = uid == 0 || adminGroup.map(isMember) == true
    let mayWrite = isAdmin || writersGroup.map(isMember) ?? true
    return Caller(actor: .peer(uid: uid, gid: gid, pid: pid), isAdmin: isAdmin, mayWrite: mayWrite)
  }
}
