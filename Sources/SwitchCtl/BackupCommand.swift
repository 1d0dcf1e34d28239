import CShim
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
/// database would destroy it. On any failure the file created is removed
/// if its name still leads to it: when someone renamed it and put another
/// file in its place meanwhile, nothing is removed. (A check, not a lock:
/// whoever may rename in that folder could still swap the two between the
/// check and the unlink; in a sticky folder such as /tmp nobody else can.)
enum BackupCommand {

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
    defer { if !kept { removeIfStill(target, at: path) } }
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
    // (Below 2^56 bytes, so that the arithmetic on it cannot overflow.)
    guard backup.bytes >= 0, backup.bytes < 1 << 56, Int64(status.st_size) == backup.bytes else {
      throw .local(
        "the copy switchd passed has \(status.st_size) bytes, not the \(backup.bytes) it announced")
    }
    let written = try copyAll(from: copy, to: target, path: path, size: backup.bytes)
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

  /// Removes `path` if it is still the file `created` is open on.
  private static func removeIfStill(_ created: borrowing Descriptor, at path: String) {
    var mine = stat()
    var named = stat()
    guard fstat(created.raw, &mine) == 0, lstat(path, &named) == 0,
      mine.st_dev == named.st_dev, mine.st_ino == named.st_ino
    else { return }
    unlink(path)
  }

  /// The text line: where the copy went and which revision it is as of.
  static func summary(_ backup: BackupResult, path: String) -> String {
    "backup of revision \(backup.revision) written to \(path) (\(backup.bytes) bytes)"
  }

  /// Copies `source` into `target`, `size` bytes: the data only, hole by
  /// hole (SEEK_DATA, SEEK_HOLE), and `target` then cut to `size`, so a
  /// sparse file announced as a terabyte takes on the caller's disk what it
  /// took on the sender's. Without SEEK_DATA (EINVAL), all of it. Where the
  /// data read ended, or `size`; more when the file grew meanwhile.
  private static func copyAll(
    from source: borrowing Descriptor, to target: borrowing Descriptor, path: String,
    size: Int64
  ) throws(Failure) -> Int64 {
    var buffer = [UInt8](repeating: 0, count: 1 << 16)
    var position: Int64 = 0
    var reached: Int64 = 0
    while position <= size {
      var start = Int64(lseek(source.raw, off_t(position), Int32(SHIM_SEEK_DATA)))
      if start < 0 && errno == ENXIO { break }  // no data from here on
      var end = start >= 0 ? Int64(lseek(source.raw, off_t(start), Int32(SHIM_SEEK_HOLE))) : -1
      if start < 0 || end < 0 {
        guard errno == EINVAL else {
          throw .local("cannot read the copy switchd passed: \(describeErrno(errno))")
        }
        (start, end) = (position, size + 1)  // no holes known: read it all
      }
      // To `size` and one byte more, which says the file grew.
      end = min(end, size + 1)
      var offset = start
      while offset < end {
        let asked = Int(min(Int64(buffer.count), end - offset))
        let n = buffer.withUnsafeMutableBytes { raw in
          retryingEINTR { pread(source.raw, raw.baseAddress, asked, off_t(offset)) }
        }
        if n < 0 { throw .local("cannot read the copy switchd passed: \(describeErrno(errno))") }
        if n == 0 { return reached }  // shorter than announced
        try writeAll(buffer, count: n, to: target, at: offset, path: path)
        offset += Int64(n)
        reached = max(reached, offset)
      }
      position = end
    }
    guard ftruncate(target.raw, off_t(size)) == 0 else {
      throw .local("cannot write \(path): \(describeErrno(errno))")
    }
    return max(reached, size)
  }

  private static func writeAll(
    _ buffer: [UInt8], count: Int, to target: borrowing Descriptor, at position: Int64,
    path: String
  ) throws(Failure) {
    var done = 0
    while done < count {
      let m = buffer.withUnsafeBytes { raw in
        retryingEINTR {
          pwrite(target.raw, raw.baseAddress! + done, count - done, off_t(position) + off_t(done))
        }
      }
      if m <= 0 { throw .local("cannot write \(path): \(describeErrno(errno))") }
      done += m
    }
  }
}
