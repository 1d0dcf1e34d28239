import Glibc

/// The system user database (`getpwnam_r`).
public enum UserDatabase {
  /// The uid of user `name`, nil when no such user exists. A buffer too
  /// small (ERANGE) is grown and the call retried.
  public static func uid(named name: String) -> UInt32? {
    var capacity = max(1024, sysconf(Int32(_SC_GETPW_R_SIZE_MAX)))
    while true {
      var entry = passwd()
      var result: UnsafeMutablePointer<passwd>?
      var buffer = [CChar](repeating: 0, count: capacity)
      let rc = getpwnam_r(name, &entry, &buffer, buffer.count, &result)
      if rc == ERANGE && capacity < GroupDatabase.maxBufferBytes {
        capacity *= 2
        continue
      }
      guard rc == 0, result != nil else { return nil }
      return entry.pw_uid
    }
  }
}
