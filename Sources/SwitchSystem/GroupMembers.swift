import Glibc

extension GroupDatabase {
  /// The uids in each of `gids`, as the user and group databases say: the
  /// users whose primary group it is (passwd) and the group's listed
  /// members (group). Both halves, because a user is in their primary group
  /// without being listed in it. Reads the whole user database once: for
  /// start and reload, never for a request.
  public static func memberUIDs(of gids: [UInt32]) -> [UInt32: Set<UInt32>] {
    var members: [UInt32: Set<UInt32>] = [:]
    for gid in gids { members[gid] = [] }
    guard !gids.isEmpty else { return members }
    UserDatabase.forEachUser { uid, primary in members[primary]?.insert(uid) }
    for gid in gids {
      for name in memberNames(gid: gid) {
        if let uid = UserDatabase.uid(named: name) { members[gid]?.insert(uid) }
      }
    }
    return members
  }

  /// The names a group lists as its members (`getgrgid_r`); none when the
  /// group does not exist.
  static func memberNames(gid: UInt32) -> [String] {
    let capacity = max(1024, sysconf(Int32(_SC_GETGR_R_SIZE_MAX)))
    let names = lookUpGrowingBuffer(initialCapacity: capacity) { buffer -> (Int32, [String]?) in
      var entry = group()
      var result: UnsafeMutablePointer<group>?
      let rc = getgrgid_r(gid, &entry, &buffer, buffer.count, &result)
      guard rc == 0, result != nil, var member = entry.gr_mem else { return (rc, nil) }
      var names: [String] = []
      while let name = member.pointee {
        names.append(String(cString: name))
        member += 1
      }
      return (rc, names)
    }
    return names ?? []
  }
}

extension UserDatabase {
  /// Calls `body` with the uid and primary gid of every user (`getpwent_r`).
  /// The enumeration's cursor is one for the whole process, so one runs at
  /// a time.
  public static func forEachUser(_ body: (_ uid: UInt32, _ gid: UInt32) -> Void) {
    enumeration.withLock { _ in
      setpwent()
      defer { endpwent() }
      let capacity = max(1024, sysconf(Int32(_SC_GETPW_R_SIZE_MAX)))
      // A buffer too small is grown and the same entry read again (ERANGE
      // does not move the cursor).
      while let user = lookUpGrowingBuffer(
        initialCapacity: capacity,
        { buffer -> (Int32, (uid: UInt32, gid: UInt32)?) in
          var entry = passwd()
          var result: UnsafeMutablePointer<passwd>?
          let rc = getpwent_r(&entry, &buffer, buffer.count, &result)
          return (rc, result == nil ? nil : (entry.pw_uid, entry.pw_gid))
        })
      {
        body(user.uid, user.gid)
      }
    }
  }

  private static let enumeration = ThreadLock(())
}
