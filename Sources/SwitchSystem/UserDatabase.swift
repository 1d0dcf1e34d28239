import Glibc

/// The system user database (`getpwnam_r`, `getpwuid_r`).
public enum UserDatabase {
  /// The uid of user `name`, nil when no such user exists. A buffer too
  /// small (ERANGE) is grown and the call retried.
  public static func uid(named name: String) -> UInt32? {
    let capacity = max(1024, sysconf(Int32(_SC_GETPW_R_SIZE_MAX)))
    return lookUpGrowingBuffer(initialCapacity: capacity) { buffer in
      var entry = passwd()
      var result: UnsafeMutablePointer<passwd>?
      let rc = getpwnam_r(name, &entry, &buffer, buffer.count, &result)
      return (rc, result == nil ? nil : entry.pw_uid)
    }
  }

  /// The name of the user `uid`, nil when the database has none.
  public static func name(of uid: UInt32) -> String? {
    let capacity = max(1024, sysconf(Int32(_SC_GETPW_R_SIZE_MAX)))
    return lookUpGrowingBuffer(initialCapacity: capacity) { buffer in
      var entry = passwd()
      var result: UnsafeMutablePointer<passwd>?
      let rc = getpwuid_r(uid, &entry, &buffer, buffer.count, &result)
      return (rc, result == nil ? nil : String(cString: entry.pw_name))
    }
  }
}
