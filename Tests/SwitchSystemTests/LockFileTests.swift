import Glibc
import SwitchTestSupport
import Testing

@testable import SwitchSystem

@Suite struct LockFileTests {
  /// The lock again, once this process has let it go. A child that another
  /// test is spawning at that moment holds a copy of the descriptor and of
  /// the mapping from its fork until its exec, and with them the flock, so
  /// the lock can read as held by this pid for that long (close-on-exec
  /// closes it only at the exec): wait for that, not longer.
  private func reacquire(_ path: String) throws -> LockFile {
    let deadline = monotonicSeconds() + 10
    while true {
      do throws(LockFile.Failure) {
        return try LockFile(path: path)
      } catch {
        guard case .held(_, let pid) = error, pid == getpid(), monotonicSeconds() < deadline
        else { throw error }
        usleep(10_000)  // poll interval, as `pollUntil`
      }
    }
  }

  @Test func aSecondHolderIsRefusedAndToldThePID() throws {
    try withTemporaryDirectory { base in
      let path = base + "/switches.db.lock"
      let first = try LockFile(path: path)
      // flock locks belong to an open file description, so a second open in
      // this same process conflicts as another process would.
      #expect(throws: LockFile.Failure.held(path: path, pid: getpid())) {
        _ = try LockFile(path: path)
      }
      _ = consume first
      let again = try reacquire(path)
      #expect(again.path == path)
    }
  }

  @Test func aLockFileLeftByAnEndedHolderIsTakenOver() throws {
    try withTemporaryDirectory { base in
      let path = base + "/switches.db.lock"
      let fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0o644)
      _ = write(fd, "999999\n", 7)
      close(fd)
      _ = try LockFile(path: path)
    }
  }

  /// Whose file was opened decides, not whose was looked at before the
  /// open: in a sticky folder another user may make it in between. Nor is
  /// a second name of another file taken (its contents would be rewritten).
  @Test(.needsRoot("plants a lock file owned by another uid"))
  func aLockFileOfAnotherUserOrWithTwoNamesIsRefusedAndLeftAlone() throws {
    try withTemporaryDirectory { base in
      let path = base + "/switches.db.lock"
      try writeWholeFile(path, "theirs")
      #expect(chown(path, 65534, 65534) == 0)
      #expect(throws: LockFile.Failure.self) { _ = try LockFile(path: path) }
      #expect(try readWholeFile(path) == "theirs")
      unlink(path)

      let victim = base + "/victim"
      try writeWholeFile(victim, "keep")
      #expect(link(victim, path) == 0)
      #expect(throws: LockFile.Failure.self) { _ = try LockFile(path: path) }
      #expect(try readWholeFile(victim) == "keep")
    }
  }

  /// The record is one fixed-width line after the pid: a shorter revision
  /// written over a longer one leaves no tail, and the next holder reads it.
  @Test(arguments: [0, 7, 10, 1_234_567, Int64.max, -42, Int64.min] as [Int64])
  func theAnnouncedRevisionIsReadByTheNextHolder(_ revision: Int64) throws {
    try withTemporaryDirectory { base in
      let path = base + "/switches.db.lock"
      let first = try LockFile(path: path)
      first.announcedRevision.record(9_999_999_999)
      first.announcedRevision.record(revision)
      let text = try #require(readFile(path))
      let number = String(revision)
      #expect(
        text == "\(getpid())\nrevision \(number)"
          + String(repeating: " ", count: 20 - number.count) + "\n")
      _ = consume first
      let next = try reacquire(path)
      #expect(next.recordedRevision == revision)
    }
  }

  /// A record made after its lock was let go (a writer thread still
  /// running while a failing daemon returns) neither faults nor reaches the
  /// file, and the lock is free for the next holder.
  @Test func aRecordAfterTheLockIsGoneIsHarmless() throws {
    try withTemporaryDirectory { base in
      let path = base + "/switches.db.lock"
      let first = try LockFile(path: path)
      let announced = first.announcedRevision
      announced.record(41)
      let before = readFile(path)
      _ = consume first
      announced.record(42)
      #expect(readFile(path) == before)
      let next = try reacquire(path)
      #expect(next.recordedRevision == 41)
    }
  }

  private func readFile(_ path: String) -> String? {
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { return nil }
    defer { close(fd) }
    var bytes = [UInt8](repeating: 0, count: 256)
    let n = read(fd, &bytes, bytes.count)
    return n < 0 ? nil : String(decoding: bytes[..<n], as: UTF8.self)
  }
}
