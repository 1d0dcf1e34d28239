import Glibc
import Testing

@testable import SwitchSystem

/// Who is in a group by the user and group databases: what the daemon keeps
/// so that the loop knows a named user's rights without a look-up.
@Suite struct GroupMembersTests {
  @Test func aUsersPrimaryGroupCountsThoughTheGroupDoesNotListThem() {
    // root's primary group is 0 on every Linux, and group 0 lists nobody.
    #expect(GroupDatabase.memberUIDs(of: [0])[0]?.contains(0) == true)
    var seen: [UInt32: UInt32] = [:]
    UserDatabase.forEachUser { uid, gid in seen[uid] = gid }
    #expect(seen[0] == 0)
    // The enumeration can be run again (its cursor is rewound each time).
    var again = 0
    UserDatabase.forEachUser { _, _ in again += 1 }
    #expect(again == seen.count)
  }

  @Test func listedMembersCountAndEveryGroupAskedForHasAnEntry() {
    let missing = UInt32.max - 7
    let members = GroupDatabase.memberUIDs(of: [missing])
    #expect(members[missing] == [])
    #expect(GroupDatabase.memberNames(gid: missing).isEmpty)
    #expect(GroupDatabase.memberUIDs(of: []).isEmpty)
    // Every name a group lists that is a user is found by its uid.
    var gids: [UInt32] = []
    setgrent()
    while let entry = getgrent() { gids.append(entry.pointee.gr_gid) }
    endgrent()
    for gid in gids {
      let names = GroupDatabase.memberNames(gid: gid)
      let uids = GroupDatabase.memberUIDs(of: [gid])[gid] ?? []
      for name in names {
        if let uid = UserDatabase.uid(named: name) { #expect(uids.contains(uid), "\(name)") }
      }
    }
  }
}
