import Glibc
import SwitchProtocol
import SwitchSystem

/// `switchctl backup FILE`: a consistent copy of the daemon's database.
///
/// The daemon never opens a path a client names: it makes the copy in its
/// own directory and passes it, open read-only, with its answer (SCM_RIGHTS).
/// switchctl creates FILE itself, with the caller's own rights, before it
/// asks, so a directory the caller may not write fails here and the daemon
/// writes nothing on the caller's behalf. FILE must not exist (`O_EXCL`,
/// mode 0600): a backup never overwrites, since writing over the live
/// database would destroy it. On any failure the file created is removed.
enum BackupCommand {
  /// Seconds to wait for the copy: a big database on a slow disk takes
  /// longer than the 30 s other calls get.
  static let receiveTimeout = 600

  /// Creates `path`, lets `ask` make the call (returning the result and the
  /// descriptor passed with it, which this then owns), copies the backup
  /// into the file and syncs it. Returns the daemon's result.
  static func run(
    to path: String, ask: () throws(Failure) -> (result: JSONValue, copy: Int32?)
  ) throws(Failure) -> BackupResult {
    guard
      let target = Descriptor(opening: path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, mode: 0o600)
    else {
      let code = errno
      let hint =
        code == EEXIST ? " (backup never overwrites: remove it or choose another name)" : ""
      throw .local("cannot create \(path): \(describeErrno(code))\(hint)")
    }
    var kept = false
    defer { if !kept { unlink(path) } }
    let (result, passed) = try ask()
    guard let passed else {
      throw .local("switchd answered backup without passing the copy's descriptor")
    }
    let copy = Descriptor(passed)
    let backup = try decode(result, as: BackupResult.self)
    // Whatever answers on the socket may pass any descriptor: only a file
    // of the size announced is copied, so a pipe or /dev/zero cannot fill
    // the caller's disk (switchctl is often run as root).
    var status = stat()
    guard fstat(copy.raw, &status) == 0, status.st_mode & S_IFMT == S_IFREG else {
      throw .local("the descriptor switchd passed is not a file; nothing was copied")
    }
    guard backup.bytes >= 0, Int64(status.st_size) == backup.bytes else {
      throw .local(
        "the copy switchd passed has \(status.st_size) bytes, not the \(backup.bytes) it announced")
    }
    let written = try copyAll(from: copy, to: target, path: path, limit: backup.bytes)
    if written != backup.bytes {
      throw .local(
        "the copy switchd passed has \(written) bytes, not the \(backup.bytes) it announced")
    }
    guard fsync(target.raw) == 0 else {
      throw .local("cannot sync \(path): \(describeErrno(errno))")
    }
    kept = true
    return backup
  }

  /// The text line: where the copy went and which revision it is as of.
  static func summary(_ backup: BackupResult, path: String) -> String {
    "backup of revision \(backup.revision) written to \(path) (\(backup.bytes) bytes)"
  }

  /// Copies `source` from its start to its end, or to `limit` bytes and
  /// one more (a file that grew), into `target`; the bytes copied.
  private static func copyAll(
    from source: borrowing Descriptor, to target: borrowing Descriptor, path: String,
    limit: Int64
  ) throws(Failure) -> Int64 {
    var buffer = [UInt8](repeating: 0, count: 1 << 16)
    var total: Int64 = 0
    while true {
      let asked = Int(min(Int64(buffer.count), limit + 1 - total))
      let n = buffer.withUnsafeMutableBytes { raw in
        retryingEINTR { pread(source.raw, raw.baseAddress, asked, off_t(total)) }
      }
      if n < 0 { throw .local("cannot read the copy switchd passed: \(describeErrno(errno))") }
      if n == 0 { return total }
      var offset = 0
      while offset < n {
        let m = buffer.withUnsafeBytes { raw in
          retryingEINTR { write(target.raw, raw.baseAddress! + offset, n - offset) }
        }
        if m <= 0 { throw .local("cannot write \(path): \(describeErrno(errno))") }
        offset += m
      }
      total += Int64(n)
      if total > limit { return total }
    }
  }
}
