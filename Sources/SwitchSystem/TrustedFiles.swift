import CShim
import Glibc

/// Reading the files that decide who administers and which programs run as
/// the daemon's user (CONFIG.md "Files switchd trusts"), the way sshd's
/// `StrictModes` reads keys: a directory or file is used only when root or
/// the daemon's own user owns it and neither its group nor others may write
/// to it (a sticky bit does not help here), and only regular files are read.
///
/// Nothing here can block or open what is not a regular file: a directory
/// is opened with `O_DIRECTORY`; a file is looked at with `fstatat`, then
/// held with `O_PATH` (which opens nothing) and checked with `fstat`, and
/// only then is that inode opened, through /proc/self/fd, with `O_NONBLOCK`:
/// a link swapped meanwhile for one to a FIFO or a device is never opened,
/// and the checks hold for the very file that is read. (Without /proc
/// nothing is read: opening by name again could open what was swapped in.)
public struct TrustedFiles: Sendable {
  /// The uids that may own configuration: root and the daemon's own.
  public let owners: [uid_t]

  public init(daemonUID: uid_t = getuid()) {
    owners = daemonUID == 0 ? [0] : [0, daemonUID]
  }

  /// Why a path was not used. Every case names the path; the untrusted one
  /// also its owner and mode, so the fix is plain.
  public enum Problem: Error, Equatable, Sendable, CustomStringConvertible {
    case missing(path: String)
    /// Not a regular file (or, for a folder, not a directory): never opened.
    case wrongKind(path: String, kind: String, wanted: String)
    case untrusted(path: String, owner: uid_t, mode: mode_t, allowed: [uid_t])
    case system(path: String, SystemError)

    public var path: String {
      switch self {
      case .missing(let path), .wrongKind(let path, _, _), .untrusted(let path, _, _, _),
        .system(let path, _):
        return path
      }
    }

    public var description: String {
      switch self {
      case .missing(let path):
        return "\(path): does not exist"
      case .wrongKind(let path, let kind, let wanted):
        return "\(path): is \(kind), not \(wanted); it was not read"
      case .untrusted(let path, let owner, let mode, let allowed):
        let who = allowed.map(Self.named).joined(separator: " or ")
        // A link's own mode means nothing; whose it is does.
        if mode & S_IFMT == S_IFLNK {
          return "\(path): not trusted: a symbolic link owned by \(Self.named(owner)); "
            + "a link in the configuration must be owned by \(who)"
        }
        var wrong: [String] = []
        if !allowed.contains(owner) { wrong.append("it is not owned by \(who)") }
        if mode & 0o022 != 0 {
          wrong.append("its \(mode & 0o002 != 0 ? "others" : "group") may write to it")
        }
        return "\(path): not trusted: owner \(Self.named(owner)), mode \(octal(mode)): "
          + wrong.joined(separator: " and ")
          + "; configuration must be owned by \(who) and not writable by group or others"
      case .system(let path, let error):
        return "\(path): cannot be read: \(error.reason)"
      }
    }

    /// "uid 1000 (alice)", or "uid 1000" when the user database has no name.
    public static func named(_ uid: uid_t) -> String {
      UserDatabase.name(of: uid).map { "uid \(uid) (\($0))" } ?? "uid \(uid)"
    }
  }

  /// Whether `status` may be trusted: a trusted owner, and no write bit for
  /// group or others.
  public func trusts(_ status: stat) -> Bool {
    owners.contains(status.st_uid) && status.st_mode & 0o022 == 0
  }

  /// Opens a trusted directory (a symbolic link to one is followed; the
  /// link itself must have a trusted owner).
  /// - Throws: `.missing` when nothing is there.
  public func openDirectory(_ path: String) throws(Problem) -> TrustedDirectoryHandle {
    try openDirectory(at: AT_FDCWD, path, named: path)
  }

  /// The entry `name` of `directory`, a trusted directory.
  public func openDirectory(
    in directory: borrowing TrustedDirectoryHandle, _ name: String
  ) throws(Problem) -> TrustedDirectoryHandle {
    try openDirectory(at: directory.descriptor.raw, name, named: directory.path + "/" + name)
  }

  private func openDirectory(
    at base: Int32, _ name: String, named path: String
  ) throws(Problem) -> TrustedDirectoryHandle {
    try checkLink(at: base, name, named: path, wanted: "a directory")
    let fd = retryingEINTR {
      openat(base, name, O_RDONLY | O_DIRECTORY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY)
    }
    guard fd >= 0 else {
      if errno == ENOTDIR {
        throw .wrongKind(path: path, kind: "not a directory", wanted: "a directory")
      }
      throw errno == ENOENT ? .missing(path: path) : .system(path: path, .last("open"))
    }
    let descriptor = Descriptor(fd)
    let status = try fileStatus(of: descriptor.raw, named: path)
    guard trusts(status) else {
      throw .untrusted(path: path, owner: status.st_uid, mode: status.st_mode, allowed: owners)
    }
    return TrustedDirectoryHandle(path: path, descriptor: descriptor)
  }

  /// Reads the regular file `name` of `directory` whole (at most `limit`
  /// bytes), never opening anything else.
  /// - Throws: `.missing` when there is no such entry.
  public func read(
    _ name: String, in directory: borrowing TrustedDirectoryHandle, limit: Int
  ) throws(Problem) -> [UInt8] {
    try read(name, in: directory, limit: limit, beforeOpening: {})
  }

  /// `read`, running `beforeOpening` between the checks and the open (a
  /// test swaps the file there).
  func read(
    _ name: String, in directory: borrowing TrustedDirectoryHandle, limit: Int,
    beforeOpening: () -> Void
  ) throws(Problem) -> [UInt8] {
    let path = directory.path + "/" + name
    let base = directory.descriptor.raw
    try checkLink(at: base, name, named: path, wanted: "a regular file")
    // The inode is held (O_PATH, which opens nothing) and checked before it
    // is opened, then opened itself: a link swapped for one to a FIFO or a
    // device between the check above and the open is never opened.
    let handle = retryingEINTR { shim_open_path(base, name) }
    guard handle >= 0 else {
      throw errno == ENOENT ? .missing(path: path) : .system(path: path, .last("open"))
    }
    let held = Descriptor(handle)
    let status = try fileStatus(of: held.raw, named: path)
    guard status.st_mode & S_IFMT == S_IFREG else {
      throw .wrongKind(path: path, kind: Self.kind(status.st_mode), wanted: "a regular file")
    }
    guard trusts(status) else {
      throw .untrusted(path: path, owner: status.st_uid, mode: status.st_mode, allowed: owners)
    }
    beforeOpening()
    let fd = retryingEINTR { shim_reopen_for_reading(held.raw) }
    guard fd >= 0 else {
      // No /proc: opening by name again could open whatever was swapped
      // in (a FIFO, a device), so nothing is opened.
      throw .system(path: path, .last("open through /proc/self/fd (is /proc mounted?)"))
    }
    let file = Descriptor(fd)  // the inode checked: /proc/self/fd names no path
    do throws(SystemError) {
      return try file.readAll(limit: limit)
    } catch {
      throw .system(path: path, error)
    }
  }

  /// Before anything is opened: the entry must be of the kind wanted, or a
  /// symbolic link with a trusted owner to one. A FIFO, socket or device is
  /// refused here, so that opening it cannot block or reach a driver.
  private func checkLink(
    at base: Int32, _ name: String, named path: String, wanted: String
  ) throws(Problem) {
    var entry = stat()
    guard fstatat(base, name, &entry, AT_SYMLINK_NOFOLLOW) == 0 else {
      throw errno == ENOENT ? .missing(path: path) : .system(path: path, .last("lstat"))
    }
    var target = entry
    if entry.st_mode & S_IFMT == S_IFLNK {
      guard owners.contains(entry.st_uid) else {
        throw .untrusted(path: path, owner: entry.st_uid, mode: entry.st_mode, allowed: owners)
      }
      guard fstatat(base, name, &target, 0) == 0 else {
        if errno == ENOENT {
          throw .wrongKind(path: path, kind: "a symbolic link to nothing", wanted: wanted)
        }
        throw .system(path: path, .last("stat"))
      }
    }
    let wantedType = wanted == "a directory" ? S_IFDIR : S_IFREG
    guard target.st_mode & S_IFMT == wantedType else {
      let kind = Self.kind(target.st_mode)
      throw .wrongKind(
        path: path, kind: entry.st_mode & S_IFMT == S_IFLNK ? "a symbolic link to \(kind)" : kind,
        wanted: wanted)
    }
  }

  private func fileStatus(of fd: Int32, named path: String) throws(Problem) -> stat {
    var status = stat()
    guard fstat(fd, &status) == 0 else { throw .system(path: path, .last("fstat")) }
    return status
  }

  /// What a file of mode `mode` is, for a person.
  public static func kind(_ mode: mode_t) -> String {
    switch mode & S_IFMT {
    case S_IFREG: return "a regular file"
    case S_IFDIR: return "a directory"
    case S_IFIFO: return "a FIFO (named pipe)"
    case S_IFSOCK: return "a socket"
    case S_IFCHR: return "a character device"
    case S_IFBLK: return "a block device"
    case S_IFLNK: return "a symbolic link"
    default: return "not a regular file"
    }
  }
}

/// An open directory that passed `TrustedFiles`' checks, and the path it
/// was opened by (for messages). Entries are opened relative to it, so a
/// rename of the path after the check changes nothing that is read.
public struct TrustedDirectoryHandle: ~Copyable {
  public let path: String
  let descriptor: Descriptor

  /// The names of its entries (not `.` and `..`), sorted bytewise. A name
  /// that is not UTF-8 comes with each bad byte as U+FFFD and `valid`
  /// false: it can be named in a message, not opened by that text.
  public func names() throws(TrustedFiles.Problem) -> [(name: String, valid: Bool)] {
    let copy = dup(descriptor.raw)
    guard copy >= 0, let dir = fdopendir(copy) else {
      throw .system(path: path, .last("opendir"))
    }
    defer { closedir(dir) }
    rewinddir(dir)  // the copy shares the offset of the descriptor
    var names: [(name: String, valid: Bool)] = []
    while let entry = readdir(dir) {
      let (name, valid) = withUnsafeBytes(of: entry.pointee.d_name) { raw in
        let bytes = raw.bindMemory(to: CChar.self).baseAddress!
        let checked = String(validatingCString: bytes)
        return (checked ?? String(cString: bytes), checked != nil)
      }
      if name != "." && name != ".." { names.append((name, valid)) }
    }
    names.sort { Array($0.name.utf8).lexicographicallyPrecedes(Array($1.name.utf8)) }
    return names
  }
}

/// "0644": a mode's permission bits in octal, four digits.
public func octal(_ mode: mode_t) -> String {
  let digits = String(mode & 0o7777, radix: 8)
  return String(repeating: "0", count: max(0, 4 - digits.count)) + digits
}
