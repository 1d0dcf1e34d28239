/// What the daemon knows of whoever sent a request: identity from
/// SO_PEERCRED (never from the request) and the rights that follow from it.
public struct Caller: Equatable, Sendable {
  public var actor: Actor
  /// uid 0, the daemon's own uid, or a member of the configured admin group
  /// (under `Authorization=polkit`: uid 0, the daemon's uid, or whom polkit
  /// granted `io.switchd.administer` for this one call).
  public var isAdmin: Bool
  /// May set, toggle and reset system switches (see `Caller.peer`).
  public var mayWrite: Bool
  /// Who may write, as a refusal of a caller that may not says it.
  public var writeRequirement: String { requirement.sentence }
  /// The same as a value: a Caller is copied several times per write, and a
  /// sentence built per peer was a String retained and released at each copy.
  var requirement: WriteRequirement
  /// The user a request acts as (its `user` param); nil: the caller itself.
  public var actingAs: UInt32?
  /// Under `Authorization=polkit`, a peer other than root and the daemon's
  /// uid: its rights beyond reading are polkit's to grant, call by call.
  public var asksPolkit = false

  public init(
    actor: Actor, isAdmin: Bool, mayWrite: Bool, requirement: WriteRequirement = .writersGroup
  ) {
    self.actor = actor
    self.isAdmin = isAdmin
    self.mayWrite = mayWrite
    self.requirement = requirement
  }

  /// The value polkit authorized a set, toggle or reset to give (its
  /// `checked` detail): the rules refuse the write if it would give another
  /// (the switch changed while polkit was asked). nil: no such grant.
  public var authorizedValue: Bool?

  /// This caller with the rights polkit granted it for one call, asked
  /// with `checked` (the value the call would set; nil for none).
  public func granted(_ action: PolkitQuestion.Action, checked: Bool? = nil) -> Caller {
    var granted = self
    granted.authorizedValue = checked
    granted.asksPolkit = false
    granted.mayWrite = true
    if action == .administer { granted.isAdmin = true }
    return granted
  }

  /// Whether this caller has `privilege`.
  public func has(_ privilege: Privilege) -> Bool {
    switch privilege {
    case .anyone: return true
    case .writer: return mayWrite
    case .administrator: return isAdmin
    }
  }

  /// The peer's uid (nil for a caller that is not a peer).
  public var uid: UInt32? {
    if case .peer(let uid, _, _) = actor { return uid }
    return nil
  }

  /// The user whose values of user-scope switches a request reads or
  /// writes: the one it acts as, else the caller itself.
  public var subject: UInt32 { actingAs ?? uid ?? 0 }

  /// Whether this caller may act as `user`: itself always, another user
  /// only as an administrator.
  public func mayActAs(_ user: UInt32) -> Bool { isAdmin || user == uid }

  /// Whether the request names a user other than the caller (`user`):
  /// administering, whoever may do it.
  public var namesAnotherUser: Bool { actingAs.map { $0 != uid } ?? false }

  /// This caller as the rules of reading a switch see it: its process's
  /// gid and pid left out. No rule of `writable` or of what a user-scope
  /// switch shows reads them (they are only an actor's, shown in events),
  /// so two processes of one user read every Switch object alike.
  public var rights: Caller {
    guard case .peer(let uid, _, _) = actor else { return self }
    var rights = self
    rights.actor = .peer(uid: uid, gid: 0, pid: 0)
    return rights
  }

  /// This caller acting as `user` (nil: itself).
  public func acting(as user: UInt32?) -> Caller {
    var acting = self
    acting.actingAs = user
    return acting
  }

  /// Whether this caller may see who made a change (uid, gid, pid):
  /// administrators see every actor, a peer its own changes (same uid),
  /// nobody else another user's. A policy has no ids to hide.
  public func seesActor(_ actor: Actor) -> Bool {
    guard case .peer(let uid, _, _) = actor, !isAdmin else { return true }
    guard case .peer(let viewer, _, _) = self.actor else { return false }
    return uid == viewer
  }

  /// The rights of a peer: the one place the table "Who may do what" of
  /// docs/semantics.md is decided. `status` (`caller`), `writable` and the
  /// refusal of a write all follow from what this returns.
  /// - Parameters:
  ///   - groups: the peer's primary and supplementary groups (SO_PEERGROUPS).
  ///   - access: who administers and who writes on this machine.
  public static func peer(
    uid: UInt32, gid: UInt32, pid: Int32, groups: [UInt32], access: AccessRules
  ) -> Caller {
    rights(of: uid, actor: .peer(uid: uid, gid: gid, pid: pid), access: access) { group in
      gid == group || groups.contains(group)
    }
  }

  /// The rights of user `uid` by the group database as it was at start or
  /// at the last reload (`AccessRules.members`), found without a look-up:
  /// what `writable` in the snapshot of a watch that names this user is
  /// computed for. Not a process: its actor's gid and pid are 0.
  public static func user(_ uid: UInt32, access: AccessRules) -> Caller {
    rights(of: uid, actor: .peer(uid: uid, gid: 0, pid: 0), access: access) { group in
      access.members[group]?.contains(uid) == true
    }
  }

  /// `Caller.peer` and `Caller.user`: the same rules, with the groups
  /// known in their two ways (`isMember`).
  private static func rights(
    of uid: UInt32, actor: Actor, access: AccessRules, isMember: (UInt32) -> Bool
  ) -> Caller {
    let isOwner = uid == 0 || uid == access.daemonUID
    if access.authorization == .polkit {
      // polkit decides the rest, per call (`PolkitQuestion`): until it has,
      // nobody but the owners has a right beyond reading (fail closed).
      var caller = Caller(actor: actor, isAdmin: isOwner, mayWrite: isOwner, requirement: .polkit)
      caller.asksPolkit = !isOwner
      return caller
    }
    let isAdmin = isOwner || access.adminGroup.map(isMember) == true
    let mayWrite: Bool
    let requirement: WriteRequirement
    switch access.writers {
    case .humanAccounts:
      mayWrite = isAdmin || access.humanUIDs.contains(uid)
      requirement = .humanAccounts(access.humanUIDs)
    case .members(let group, let name):
      mayWrite = isAdmin || isMember(group)
      requirement = .members(groupName: name)
    case .missing:
      mayWrite = isAdmin
      requirement = .administrators
    }
    return Caller(actor: actor, isAdmin: isAdmin, mayWrite: mayWrite, requirement: requirement)
  }
}

/// Everything besides the peer itself that decides its rights, resolved
/// by the daemon at start and at reload from `switchd.conf`, the group
/// database and `/etc/login.defs`.
public struct AccessRules: Equatable, Sendable {
  /// The uid the daemon runs as: it administers its own daemon (a user's
  /// own switchd is that user's).
  public var daemonUID: UInt32
  /// gid of `AdminGroup`, nil when unset or missing (root and the daemon's uid only).
  public var adminGroup: UInt32?
  public var writers: WritersGroup
  /// Human accounts: `UID_MIN`…`UID_MAX` of login.defs (`LoginDefs`).
  public var humanUIDs: ClosedRange<UInt32>
  /// The uids in the admin group and the Writers group, by gid: users whose
  /// primary group it is (passwd) and its listed members (group). Kept so
  /// that the loop knows a named user's rights (`Caller.user`) without a
  /// look-up that could block it; as current as the last start or reload.
  public var members: [UInt32: Set<UInt32>]
  /// `Authorization=`: under polkit the groups above decide nothing.
  public var authorization: Authorization

  public init(
    daemonUID: UInt32, adminGroup: UInt32? = nil, writers: WritersGroup = .humanAccounts,
    humanUIDs: ClosedRange<UInt32> = LoginDefs.defaultHumanUIDs,
    members: [UInt32: Set<UInt32>] = [:], authorization: Authorization = .builtin
  ) {
    self.authorization = authorization
    self.daemonUID = daemonUID
    self.adminGroup = adminGroup
    self.writers = writers
    self.humanUIDs = humanUIDs
    self.members = members
  }

  /// The groups whose members `members` keeps: the admin and Writers groups.
  public var groupsWithRights: [UInt32] {
    var groups: [UInt32] = []
    if let adminGroup { groups.append(adminGroup) }
    if case .members(let gid, _) = writers, gid != adminGroup { groups.append(gid) }
    return groups
  }
}

/// Who may change system switches, as a caller's refusal says it.
public enum WriteRequirement: Equatable, Sendable {
  /// A caller made without access rules.
  case writersGroup
  /// `Authorization=polkit`: polkit did not grant this call.
  case polkit
  /// No `Writers` group: human accounts, by their uids.
  case humanAccounts(ClosedRange<UInt32>)
  /// `Writers=` names this group.
  case members(groupName: String)
  /// `Writers=` names a group that does not exist.
  case administrators

  public var sentence: String {
    switch self {
    case .writersGroup: WritersGroup.membersRequirement
    case .polkit: "polkit did not authorize io.switchd.write"
    case .humanAccounts(let uids):
      "only human accounts (uid \(uids.lowerBound)–\(uids.upperBound))"
        + " and administrators may change system switches"
    case .members(let name): "only members of the group \(name) may change system switches"
    case .administrators: "only administrators may change system switches"
    }
  }
}

/// Who may set, toggle and reset system switches, from the `Writers`
/// setting. Administrators always may.
public enum WritersGroup: Equatable, Sendable {
  /// No `Writers` group is configured: human accounts write, system accounts do not.
  case humanAccounts
  /// Members of this gid write; `name` is the setting, as refusals say it.
  case members(UInt32, name: String)
  /// `Writers` names a group that does not exist. It was set to restrict, so
  /// nobody but administrators writes: a typo must not open writes to all.
  case missing(name: String)

  /// The refusal's sentence of a caller made without access rules.
  public static let membersRequirement = "only members of the Writers group may change switches"

  /// `name` is the setting (nil or empty: unset); `lookUp` finds its gid.
  public static func resolve(_ name: String?, lookUp: (String) -> UInt32?) -> WritersGroup {
    guard let name, !name.isEmpty else { return .humanAccounts }
    guard let gid = lookUp(name) else { return .missing(name: name) }
    return .members(gid, name: name)
  }

  /// The warning to log for a group that does not exist, nil otherwise.
  public var warning: String? {
    guard case .missing(let name) = self else { return nil }
    return "Writers group \(name) does not exist: only administrators may change system switches"
  }
}
