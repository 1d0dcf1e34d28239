import Glibc
import SwitchSystem

/// The listening Unix socket: bound at the configured path, or received
/// from systemd (socket activation, `LISTEN_FDS`), in which case the path
/// is systemd's and is never bound or removed here.
struct Listener {
  let fd: Int32
  let path: String
  let activated: Bool

  enum Failure: Error, CustomStringConvertible {
    case system(SystemError)
    case pathTooLong(UnixSocketAddress.PathTooLong)
    case inUse(String)

    var description: String {
      switch self {
      case .system(let error): return "\(error)"
      case .pathTooLong(let problem): return "\(problem)"
      case .inUse(let path): return "another switchd is already serving \(path)"
      }
    }
  }

  /// The sockets systemd passed, if this process was socket-activated: by
  /// their `FileDescriptorName=` in LISTEN_FDNAMES, `varlink` for the
  /// varlink socket and any other name (or none: one fd, an older unit) for
  /// JSON-RPC. `jsonRPC` nil: no JSON-RPC socket among them.
  static func activated(
    environment: [String: String], path: String
  ) -> (jsonRPC: Listener?, varlink: Listener?)? {
    guard let pid = environment["LISTEN_PID"].flatMap(Int32.init), pid == getpid(),
      let count = environment["LISTEN_FDS"].flatMap(Int.init), count >= 1
    else { return nil }
    unsetenv("LISTEN_PID")
    unsetenv("LISTEN_FDS")
    unsetenv("LISTEN_FDNAMES")
    let names = (environment["LISTEN_FDNAMES"] ?? "").split(
      separator: ":", omittingEmptySubsequences: false)
    var found: (jsonRPC: Listener?, varlink: Listener?) = (nil, nil)
    for index in 0..<min(count, 64) {
      let fd = Int32(3 + index)
      let flags = fcntl(fd, F_GETFL)
      _ = fcntl(fd, F_SETFL, flags | O_NONBLOCK)
      _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
      let listener = Listener(
        fd: fd, path: UnixSocketAddress.boundPath(of: fd) ?? path, activated: true)
      if index < names.count && names[index] == varlinkName {
        if found.varlink == nil { found.varlink = listener } else { Glibc.close(fd) }
      } else if found.jsonRPC == nil {
        found.jsonRPC = listener
      } else {
        Glibc.close(fd)
      }
    }
    return found
  }

  /// The varlink socket's `FileDescriptorName=` (systemd/switchd-varlink.socket).
  static let varlinkName = "varlink"

  /// Binds `path` with `mode` (its directory must exist). A stale socket
  /// file left by a crash is replaced; a live one (something answers) is not.
  static func bind(path: String, mode: UInt32) throws(Failure) -> Listener {
    let address: UnixSocketAddress
    do throws(UnixSocketAddress.PathTooLong) {
      address = try UnixSocketAddress(path)
    } catch {
      throw .pathTooLong(error)
    }
    if isLiveSocket(address) { throw .inUse(path) }
    unlink(path)
    let fd = socket(
      AF_UNIX, Int32(SOCK_STREAM.rawValue | SOCK_CLOEXEC.rawValue | SOCK_NONBLOCK.rawValue), 0)
    guard fd >= 0 else { throw .system(.last("socket")) }
    let owned = Descriptor(fd)
    // Bind with a private umask so the socket never exists with looser
    // permissions than asked, then set the exact mode.
    let oldMask = umask(0o177)
    let bound = address.withSockaddr { Glibc.bind(fd, $0, $1) }
    umask(oldMask)
    guard bound == 0 else { throw .system(.last("bind \(path)")) }
    guard chmod(path, mode_t(mode)) == 0, listen(fd, 1024) == 0 else {
      let error = SystemError.last("listen \(path)")
      unlink(path)
      throw .system(error)
    }
    return Listener(fd: owned.release(), path: path, activated: false)
  }

  /// Closes the socket; removes the path only if this process bound it.
  func close() {
    _ = Glibc.close(fd)
    if !activated { unlink(path) }
  }

  private static func isLiveSocket(_ address: UnixSocketAddress) -> Bool {
    let probe = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue | SOCK_CLOEXEC.rawValue), 0)
    guard probe >= 0 else { return false }
    let owned = Descriptor(probe)
    return address.withSockaddr { connect(owned.raw, $0, $1) } == 0
  }
}
