import CShim
import Glibc
import SwitchSystem

/// The listening Unix socket: bound at the configured path, or received
/// from systemd (socket activation, `LISTEN_FDS`), in which case the path
/// is systemd's and is never bound or removed here.
struct Listener {
  let fd: Int32
  let path: String
  let activated: Bool
  /// The socket file this process bound (device, inode): removed at close
  /// only while it is still the one at `path`. nil when socket-activated.
  var boundFile: (device: UInt64, inode: UInt64)? = nil

  enum Failure: Error, CustomStringConvertible {
    case system(SystemError)
    case pathTooLong(UnixSocketAddress.PathTooLong)
    case inUse(String)
    /// Something other than a socket is at the path: never switchd's to replace.
    case notASocket(String, kind: String)

    var description: String {
      switch self {
      case .system(let error): return "\(error)"
      case .pathTooLong(let problem): return "\(problem)"
      case .inUse(let path): return "another switchd is already serving \(path)"
      case .notASocket(let path, let kind):
        return "\(path) is \(kind), not a socket; remove it or choose another path"
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
  /// file left by a crash is replaced; a live one (something answers) is
  /// not, nor anything that is not a socket.
  ///
  /// The socket is bound in a new private directory beside `path`, given
  /// its mode there and renamed into place: it never exists at `path` with
  /// looser permissions than `mode`, and the process's umask is never
  /// changed for it (a umask narrowed while binding narrowed the files
  /// every other thread made meanwhile: a test's for another user, or an
  /// apply command's).
  static func bind(path: String, mode: UInt32) throws(Failure) -> Listener {
    let address: UnixSocketAddress
    do throws(UnixSocketAddress.PathTooLong) {
      address = try UnixSocketAddress(path)
    } catch {
      throw .pathTooLong(error)
    }
    if isLiveSocket(address) { throw .inUse(path) }
    let staging = try Staging(beside: path)
    defer { staging.remove() }
    let fd = socket(
      AF_UNIX, Int32(SOCK_STREAM.rawValue | SOCK_CLOEXEC.rawValue | SOCK_NONBLOCK.rawValue), 0)
    guard fd >= 0 else { throw .system(.last("socket")) }
    let owned = Descriptor(fd)
    guard staging.address.withSockaddr({ Glibc.bind(fd, $0, $1) }) == 0 else {
      throw .system(.last("bind \(path)"))
    }
    guard chmod(staging.socket, mode_t(mode)) == 0 else {
      throw .system(.last("chmod \(staging.socket)"))
    }
    guard listen(fd, 1024) == 0 else { throw .system(.last("listen \(path)")) }
    // Its identity before the rename, which keeps it: read after, the path
    // could already name another's.
    guard let bound = socketFile(at: staging.socket) else {
      throw .system(.last("lstat \(staging.socket)"))
    }
    try place(staging.socket, at: path, address: address)
    return Listener(fd: owned.release(), path: path, activated: false, boundFile: bound)
  }

  /// Renames the bound socket to `path`. Something there is replaced only
  /// when it is a stale socket, at once, in one step: a live one stays
  /// (another switchd may have bound `path` since `bind` looked), and
  /// anything else (a file, a link, a FIFO) is not switchd's: a mistyped
  /// `--socket /etc/passwd` must not destroy it.
  static func place(
    _ socket: String, at path: String, address: UnixSocketAddress
  ) throws(Failure) {
    if shim_rename_noreplace(socket, path) == 0 { return }
    let failure = errno
    // EINVAL, ENOSYS: a file system or kernel without RENAME_NOREPLACE.
    guard failure == EEXIST || failure == EINVAL || failure == ENOSYS else {
      throw .system(.last("rename \(socket) to \(path)"))
    }
    // Something is there, or the file system cannot say.
    var status = stat()
    if lstat(path, &status) == 0, status.st_mode & S_IFMT != S_IFSOCK {
      throw .notASocket(path, kind: TrustedFiles.kind(status.st_mode))
    }
    if isLiveSocket(address) { throw .inUse(path) }
    guard rename(socket, path) == 0 else {
      throw .system(.last("rename \(socket) to \(path)"))
    }
  }

  /// The private directory a socket is bound in before it is renamed into
  /// place (`bind`), with the address to bind. The socket's own address
  /// (getsockname, `ss -xl`) stays the staging one, which is gone: nothing
  /// reads it (`UnixSocketAddress.boundPath` is asked only of the sockets
  /// systemd passes). A SIGKILL between `mkdtemp` and `remove` leaves an
  /// empty `.switchd-bind-*` directory beside the socket; it is not swept
  /// at start, as another switchd may be binding beside it then.
  private struct Staging {
    let directory: String
    /// The socket's path in `directory`.
    let socket: String
    /// `socket`, or when that is too long for `sun_path` the same place
    /// through `/proc/self/fd` and `directoryFD` (-1 when not needed).
    let address: UnixSocketAddress
    let directoryFD: Int32

    init(beside path: String) throws(Failure) {
      let parent = TrustedDirectory.folder(of: path)
      var template = Array((parent + "/.switchd-bind-XXXXXX").utf8CString)
      guard mkdtemp(&template) != nil else {
        throw .system(.last("mkdtemp in \(parent)"))
      }
      directory = String(
        decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
      socket = directory + "/s"
      // mkdtemp's 0700 is narrowed by the umask; the owner must search it.
      chmod(directory, 0o700)
      if let direct = try? UnixSocketAddress(socket) {
        address = direct
        directoryFD = -1
        return
      }
      directoryFD = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
      if directoryFD >= 0, let viaFD = try? UnixSocketAddress("/proc/self/fd/\(directoryFD)/s") {
        address = viaFD
      } else {
        let error = SystemError.last("open \(directory)")
        if directoryFD >= 0 { _ = Glibc.close(directoryFD) }
        rmdir(directory)
        throw .system(error)
      }
    }

    /// Removes the directory, and the socket when it was not renamed.
    func remove() {
      unlink(socket)
      rmdir(directory)
      if directoryFD >= 0 { _ = Glibc.close(directoryFD) }
    }
  }

  /// Closes the socket; removes the path only if this process bound it
  /// and the socket there is still that one: a file put in its place, or
  /// another switchd's socket bound there since ours was removed, is not
  /// this process's to delete (an audit: a stop deleted both).
  /// (Looked at before the socket is closed: while it is open its inode
  /// cannot be another file's. Between the look and the unlink the path
  /// can still change; no call removes a name only if it is a given inode.)
  func close() {
    if let boundFile, let there = Self.socketFile(at: path),
      there.device == boundFile.device && there.inode == boundFile.inode
    {
      unlink(path)
    }
    _ = Glibc.close(fd)
  }

  /// The device and inode of the socket at `path`; nil when there is none
  /// or something else is there.
  private static func socketFile(at path: String) -> (device: UInt64, inode: UInt64)? {
    var status = stat()
    guard lstat(path, &status) == 0, status.st_mode & S_IFMT == S_IFSOCK else { return nil }
    return (UInt64(status.st_dev), UInt64(status.st_ino))
  }

  private static func isLiveSocket(_ address: UnixSocketAddress) -> Bool {
    let probe = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue | SOCK_CLOEXEC.rawValue), 0)
    guard probe >= 0 else { return false }
    let owned = Descriptor(probe)
    return address.withSockaddr { connect(owned.raw, $0, $1) } == 0
  }
}
