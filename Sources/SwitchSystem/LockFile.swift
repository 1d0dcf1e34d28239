import Glibc

/// An exclusive advisory lock (`flock`) on a file, held for as long as the
/// value lives (the kernel drops it when the process ends, even by SIGKILL).
/// The holder writes its pid into the file, so a second process that finds
/// the lock taken can say who has it, and the newest revision it announced
/// (`AnnouncedRevision`), which outlives the process and the database file.
public struct LockFile: ~Copyable {
  public enum Failure: Error, Equatable, CustomStringConvertible {
    /// Another process holds the lock; `pid` is what it wrote (nil when it
    /// has not written yet).
    case held(path: String, pid: Int32?)
    case system(SystemError)

    public var description: String {
      switch self {
      case .held(let path, let pid?): return "\(path) is locked by process \(pid)"
      case .held(let path, nil): return "\(path) is locked by another process"
      case .system(let error): return "\(error)"
      }
    }
  }

  public let path: String
  private let descriptor: Descriptor
  /// The revision the previous holder recorded, nil when none did.
  public let recordedRevision: Int64?

  /// Takes the lock without waiting, creating the file if need be.
  public init(path: String) throws(Failure) {
    guard
      let descriptor = Descriptor(
        opening: path, O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK, mode: 0o644)
    else { throw .system(.last("open \(path)")) }
    var status = stat()
    guard fstat(descriptor.raw, &status) == 0, status.st_mode & S_IFMT == S_IFREG else {
      throw .system(SystemError(errno: EINVAL, call: "open \(path) (not a regular file)"))
    }
    if retryingEINTR({ flock(descriptor.raw, LOCK_EX | LOCK_NB) }) != 0 {
      guard errno == EWOULDBLOCK else { throw .system(.last("flock \(path)")) }
      throw .held(path: path, pid: Self.recorded(descriptor).pid)
    }
    let previous = Self.recorded(descriptor).revision
    guard ftruncate(descriptor.raw, 0) == 0 else { throw .system(.last("ftruncate \(path)")) }
    AnnouncedRevision(fd: descriptor.raw).record(previous ?? 0)
    recordedRevision = previous
    self.path = path
    self.descriptor = descriptor
  }

  /// Where the holder records the newest revision it announced. Valid while
  /// this lock lives.
  public var announcedRevision: AnnouncedRevision { AnnouncedRevision(fd: descriptor.raw) }

  /// The pid and revision the holder wrote, where the file holds them.
  private static func recorded(_ descriptor: borrowing Descriptor) -> (
    pid: Int32?, revision: Int64?
  ) {
    guard let bytes = try? descriptor.readAll(limit: 256) else { return (nil, nil) }
    let lines = String(decoding: bytes, as: UTF8.self).split(separator: "\n")
    let pid = Int32(lines.first ?? "").flatMap { $0 > 0 ? $0 : nil }
    let revision = lines.dropFirst().first.flatMap { line -> Int64? in
      guard line.hasPrefix(AnnouncedRevision.label) else { return nil }
      return Int64(line.dropFirst(AnnouncedRevision.label.count).trimmingSpaces)
    }
    return (pid, revision)
  }
}

/// The newest revision switchd announced, kept in its lock file beside the
/// database: a start on a database that is older (restored from a backup,
/// replaced, emptied) can then say that revisions will be used again.
/// Written without a sync: after a power loss it may lag, never lead.
public struct AnnouncedRevision: Sendable {
  static let label = "revision "
  let fd: Int32
  /// "PID\nrevision ", read once: `record` runs at every commit, and
  /// getpid and String formatting there were a system call and ~5k
  /// instructions of each (callgrind, strace).
  private let prefix: [UInt8]

  init(fd: Int32) {
    self.fd = fd
    prefix = Array("\(getpid())\n\(Self.label)".utf8)
  }

  /// Writes "PID\nrevision N" over the file, one fixed-width line (N padded
  /// with spaces to 20 places) so that a shorter record leaves no tail of
  /// a longer one.
  public func record(_ revision: Int64) {
    var line = prefix
    line.append(contentsOf: String(revision).utf8)
    let padding = max(0, prefix.count + 20 - line.count)
    line.append(contentsOf: repeatElement(UInt8(ascii: " "), count: padding))
    line.append(UInt8(ascii: "\n"))
    _ = line.withUnsafeBytes { raw in retryingEINTR { pwrite(fd, raw.baseAddress, raw.count, 0) } }
  }
}

extension Substring {
  fileprivate var trimmingSpaces: Substring {
    var text = self
    while text.last == " " { text = text.dropLast() }
    while text.first == " " { text = text.dropFirst() }
    return text
  }
}
