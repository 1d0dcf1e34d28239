import Glibc

/// The listening Unix socket: bound at the configured path, or received
/// from systemd (socket activation, `LISTEN_FDS`), in which case the path
/// is systemd's and is never bound or removed here.
struct Listener {
  let fd: Int32
  let path: String
  let activated: Bool

  enum Failure: Error, CustomStringConvertible {
    case system(SystemError)
    case pathTooLong(String)
    case inUse(String)

    var description: String {
      switch self {
      case .system(let error): return "\(error)"
      case .pathTooLong(let path): return "the socket path \(path) is longer than 107 bytes"
      case .inUse(let path): return "another switchd is already serving \(path)"
      }
    }
  }

  /// The descriptor systemd passed (fd 3), if this process was socket-activated.
  static func activated(environment: [String: String], path: String) -> Listener? {
    guard let pid = environment["LISTEN_PID"].flatMap(Int32.init), pid == getpid(),
      let count = environment["LISTEN_FDS"].flatMap(Int.init), count >= 1
    else { return nil }
    unsetenv("LISTEN_PID")
    unsetenv("LISTEN_FDS")
    unsetenv("LISTEN_FDNAMES")
    let fd: Int32 = 3
    let flags = fcntl(fd, F_GETFL)
    _ = fcntl(fd, F_SETFL, flags | O_NONBLOCK)
    _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
    return Listener(fd: fd, path: boundPath(of: fd) ?? path, activated: true)
  }

  /// The file system path a Unix socket is bound to (getsockname); nil for
  /// an abstract or unnamed one, or another family.
  private static func boundPath(of fd: Int32) -> String? {
    var addr = sockaddr_un()
    var length = socklen_t(MemoryLayout<sockaddr_un>.size)
    let rc = withUnsafeMutablePointer(to: &addr) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
    }
    guard rc == 0, addr.sun_family == sa_family_t(AF_UNIX) else { return nil }
    let count = Int(length) - MemoryLayout<sa_family_t>.size
    let bytes = withUnsafeBytes(of: &addr.sun_path) { Array($0.prefix(max(0, count))) }
    guard let first = bytes.first, first != 0 else { return nil }
    return String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self)
  }

  /// Binds `path` with `mode`, creating its directory. A stale socket file
  /// left by a crash is replaced; a live one (something answers) is not.
  static func bind(path: String, mode: UInt32) throws(Failure) -> Listener {
    var addr = sockaddr_un()
    addr.sun_family = sa_family_t(AF_UNIX)
    let bytes = Array(path.utf8)
    guard bytes.count < MemoryLayout.size(ofValue: addr.sun_path) else {
      throw .pathTooLong(path)
    }
    withUnsafeMutableBytes(of: &addr.sun_path) { raw in
      for (i, b) in bytes.enumerated() { raw[i] = b }
    }
    let length = socklen_t(MemoryLayout<sa_family_t>.size + bytes.count + 1)
    try makeParentDirectory(of: path)
    if isLiveSocket(&addr, length) { throw .inUse(path) }
    unlink(path)
    let fd = socket(
      AF_UNIX, Int32(SOCK_STREAM.rawValue | SOCK_CLOEXEC.rawValue | SOCK_NONBLOCK.rawValue), 0)
    guard fd >= 0 else { throw .system(.last("socket")) }
    // Bind with a private umask so the socket never exists with looser
    // permissions than asked, then set the exact mode.
    let oldMask = umask(0o177)
    let bound = withUnsafePointer(to: &addr) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.bind(fd, $0, length) }
    }
    umask(oldMask)
    guard bound == 0 else {
      let error = SystemError.last("bind \(path)")
      Glibc.close(fd)
      throw .system(error)
    }
    guard chmod(path, mode_t(mode)) == 0, listen(fd, 1024) == 0 else {
      let error = SystemError.last("listen \(path)")
      Glibc.close(fd)
      unlink(path)
      throw .system(error)
    }
    return Listener(fd: fd, path: path, activated: false)
  }

  /// Closes the socket; removes the path only if this process bound it.
  func close() {
    _ = Glibc.close(fd)
    if !activated { unlink(path) }
  }

  private static func isLiveSocket(_ addr: inout sockaddr_un, _ length: socklen_t) -> Bool {
    let probe = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue | SOCK_CLOEXEC.rawValue), 0)
    guard probe >= 0 else { return false }
    defer { Glibc.close(probe) }
    let rc = withUnsafePointer(to: &addr) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(probe, $0, length) }
    }
    return rc == 0
  }
}

/// `mkdir -p` of the directory that holds `path` (0755 for new directories).
func makeParentDirectory(of path: String) throws(Listener.Failure) {
  guard let slash = path.lastIndex(of: "/"), slash != path.startIndex else { return }
  let directory = String(path[..<slash])
  var prefix = ""
  for component in directory.split(separator: "/") {
    prefix += "/" + component
    if mkdir(prefix, 0o755) != 0 && errno != EEXIST {
      throw .system(.last("mkdir \(prefix)"))
    }
  }
}
