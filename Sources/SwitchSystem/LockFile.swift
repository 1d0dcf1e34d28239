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
    /// The file is not the daemon's own (`TrustedDirectory.ownFileProblem`).
    case untrusted(path: String, reason: String)
    case system(SystemError)

    public var description: String {
      switch self {
      case .held(let path, let pid?): return "\(path) is locked by process \(pid)"
      case .held(let path, nil): return "\(path) is locked by another process"
      case .untrusted(let path, let reason):
        return "\(TrustedDirectory.Failure.untrusted(path: path, reason: reason))"
      case .system(let error): return "\(error)"
      }
    }
  }

  public let path: String
  private let descriptor: Descriptor
  /// The revision the previous holder recorded, nil when none did.
  public let recordedRevision: Int64?
  /// The file's first page, mapped shared, where `AnnouncedRevision` writes
  /// (nil when it could not be mapped: then it writes with pwrite).
  private let mapping: UnsafeMutableRawPointer?

  /// Takes the lock without waiting, creating the file if need be.
  public init(path: String) throws(Failure) {
    guard
      let descriptor = Descriptor(
        opening: path, O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK, mode: 0o644)
    else { throw .system(.last("open \(path)")) }
    var status = stat()
    guard fstat(descriptor.raw, &status) == 0 else { throw .system(.last("fstat \(path)")) }
    // Whose file was opened, not whose was looked at before: in a sticky
    // folder another user may have made it in between.
    if let reason = TrustedDirectory.ownFileProblem(status, uid: getuid()) {
      throw .untrusted(path: path, reason: reason)
    }
    if retryingEINTR({ flock(descriptor.raw, LOCK_EX | LOCK_NB) }) != 0 {
      guard errno == EWOULDBLOCK else { throw .system(.last("flock \(path)")) }
      throw .held(path: path, pid: Self.recorded(descriptor).pid)
    }
    let previous = Self.recorded(descriptor).revision
    guard ftruncate(descriptor.raw, 0) == 0 else { throw .system(.last("ftruncate \(path)")) }
    // Written through the file first, so that its block exists before it is
    // mapped: a store into a mapped page with no block behind it could
    // fail on a full disk with SIGBUS.
    AnnouncedRevision(fd: descriptor.raw, mapping: nil).record(previous ?? 0)
    let mapped = mmap(
      nil, AnnouncedRevision.mappedBytes, PROT_READ | PROT_WRITE, MAP_SHARED, descriptor.raw, 0)
    mapping = mapped == MAP_FAILED ? nil : mapped
    recordedRevision = previous
    self.path = path
    self.descriptor = descriptor
  }

  deinit {
    // Not unmapped but replaced by anonymous memory at the same address: a
    // writer thread still holding the AnnouncedRevision (a daemon failing
    // after it started one, on its way out) writes there harmlessly, and
    // the file is let go (a mapping holds the open file, and with it the
    // flock, until it goes).
    if let mapping {
      _ = mmap(
        mapping, AnnouncedRevision.mappedBytes, PROT_READ | PROT_WRITE,
        MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0)
    }
  }

  /// Where the holder records the newest revision it announced. Valid while
  /// this lock lives.
  public var announcedRevision: AnnouncedRevision {
    AnnouncedRevision(fd: descriptor.raw, mapping: mapping)
  }

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
///
/// `record` runs at every commit, so it writes into the lock file's page
/// mapped shared: a store into the page cache, no system call (a pwrite was
/// one per commit, strace), and as lasting as the pwrite was: the page
/// cache outlives the process, even a SIGKILL. (Truncating the lock file
/// under a running switchd would end it with SIGBUS, as truncating SQLite's
/// own mapped `-shm` file would end any SQLite process.)
public struct AnnouncedRevision: @unchecked Sendable {
  static let label = "revision "
  /// The widest revision, in digits (with a minus sign).
  static let width = 20
  /// How much of the lock file is mapped: its first page, which holds the record.
  static let mappedBytes = 4096
  let fd: Int32
  /// The lock file's first page, or nil.
  let mapping: UnsafeMutableRawPointer?
  /// "PID\nrevision ", read once (getpid and String formatting per commit
  /// were a system call and ~5k instructions, callgrind, strace).
  private let prefix: [UInt8]

  init(fd: Int32, mapping: UnsafeMutableRawPointer?) {
    self.fd = fd
    self.mapping = mapping
    prefix = Array("\(getpid())\n\(Self.label)".utf8)
  }

  /// Writes "PID\nrevision N" over the file, one fixed-width line (N padded
  /// with spaces to 20 places) so that a shorter record leaves no tail of
  /// a longer one. Through the mapping only the number is written: the
  /// line before it was written with the file and stays.
  public func record(_ revision: Int64) {
    if let mapping {
      Self.write(revision, to: mapping + prefix.count)
      return
    }
    let count = prefix.count + Self.width + 1
    withUnsafeTemporaryAllocation(byteCount: count, alignment: 1) { line in
      line.copyBytes(from: prefix)
      Self.write(revision, to: line.baseAddress! + prefix.count)
      _ = retryingEINTR { pwrite(fd, line.baseAddress, count, 0) }
    }
  }

  /// N left-aligned in `width` places, then a newline. The digits are
  /// worked out here, not through `String(revision)`: that made and freed
  /// a string at every commit (~450 instructions of a one-write commit's
  /// ~23k, callgrind).
  private static func write(_ revision: Int64, to target: UnsafeMutableRawPointer) {
    var offset = 0
    if revision < 0 {
      target.storeBytes(of: UInt8(ascii: "-"), toByteOffset: 0, as: UInt8.self)
      offset = 1
    }
    var rest = revision.magnitude
    var digits = 1
    while rest >= 10 {
      rest /= 10
      digits += 1
    }
    rest = revision.magnitude
    for place in stride(from: offset + digits - 1, through: offset, by: -1) {
      target.storeBytes(
        of: UInt8(ascii: "0") + UInt8(rest % 10), toByteOffset: place, as: UInt8.self)
      rest /= 10
    }
    offset += digits
    while offset < width {
      target.storeBytes(of: UInt8(ascii: " "), toByteOffset: offset, as: UInt8.self)
      offset += 1
    }
    target.storeBytes(of: UInt8(ascii: "\n"), toByteOffset: width, as: UInt8.self)
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
