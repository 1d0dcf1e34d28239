import Glibc
import SwitchTestSupport
import Testing

@testable import SwitchSystem

@Suite struct LockFileTests {
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
      let again = try LockFile(path: path)
      #expect(again.path == path)
    }
  }

  @Test func aLockFileLeftByAnEndedHolderIsTakenOver() throws {
    try withTemporaryDirectory { base in
      let path = base + "/switches.db.lock"
      let fd = open(path, O_WRONLY | O_CREAT, 0o644)
      _ = write(fd, "999999\n", 7)
      close(fd)
      _ = try LockFile(path: path)
    }
  }
}
