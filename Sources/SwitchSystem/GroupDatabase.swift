import Glibc

/// The system group database (`getgrnam_r`).
public enum GroupDatabase {
  /// The gid of group `name`, nil when no such group exists. A buffer too
  /// small for a large group (ERANGE) is grown and the call retried, so a
  /// group with thousands of members is not taken for a missing one.
  public static func gid(named name: String) -> UInt32? {
    gid(named: name, initialCapacity: max(1024, sysconf(Int32(_SC_GETGR_R_SIZE_MAX))))
  }

  static func gid(named name: String, initialCapacity: Int) -> UInt32? {
    lookUpGrowingBuffer(initialCapacity: initialCapacity) { buffer in
      var entry = group()
      var result: UnsafeMutablePointer<group>?
      let rc = getgrnam_r(name, &entry, &buffer, buffer.count, &result)
      return (rc, result == nil ? nil : entry.gr_gid)
    }
  }
}
