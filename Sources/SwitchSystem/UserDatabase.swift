import Glibc

/// The system user database (`getpwnam_r`, `getpwuid_r`).
public enum UserDatabase {
  /// The uid of user `name`, nil when no such user exists.
  public static func uid(named name: String) -> UInt32? {
    lookUp({ getpwnam_r(name, &$0, &$1, $1.count, &$2) }, reading: \.pw_uid)
  }

  /// The name of the user `uid`, nil when the database has none.
  public static func name(of uid: UInt32) -> String? {
    lookUp({ getpwuid_r(uid, &$0, &$1, $1.count, &$2) }, reading: { String(cString: $0.pw_name) })
  }

  /// One `getpw*_r` lookup (`call`); `read` takes what is needed from the entry while its
  /// buffer lives (its strings point into it). A buffer too small (ERANGE) is grown and the
  /// call retried.
  private static func lookUp<Found>(
    _ call: (inout passwd, inout [CChar], inout UnsafeMutablePointer<passwd>?) -> Int32,
    reading read: (passwd) -> Found
  ) -> Found? {
    let capacity = max(1024, sysconf(Int32(_SC_GETPW_R_SIZE_MAX)))
    return lookUpGrowingBuffer(initialCapacity: capacity) { buffer in
      var entry = passwd()
      var result: UnsafeMutablePointer<passwd>?
      let rc = call(&entry, &buffer, &result)
      return (rc, result == nil ? nil : read(entry))
    }
  }
}
