import Glibc
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

@Suite struct GroupDatabaseTests {
  /// A buffer too small for the entry (ERANGE) is grown, not taken for "no such group".
  @Test func aBufferTooSmallIsGrown() {
    #expect(GroupDatabase.gid(named: "root", initialCapacity: 1) == 0)
    #expect(GroupDatabase.gid(named: "root") == 0)
  }

  @Test func aMissingGroupIsNil() {
    #expect(GroupDatabase.gid(named: "no-such-group-switchd-test") == nil)
  }
}

@Suite struct UnixSocketAddressTests {
  @Test func aPathIncludesItsNULAndAnAbstractNameDoesNot() throws {
    let offset = MemoryLayout<sockaddr_un>.offset(of: \.sun_path)!
    #expect(try UnixSocketAddress("/run/x.sock").length == socklen_t(offset + 12))
    #expect(try UnixSocketAddress("@x").length == socklen_t(offset + 2))
  }

  @Test func theLimitIs107Bytes() throws {
    #expect(UnixSocketAddress.maxPathBytes == 107)
    _ = try UnixSocketAddress("/" + String(repeating: "a", count: 106))
    let long = "/" + String(repeating: "a", count: 107)
    #expect(throws: UnixSocketAddress.PathTooLong(path: long)) {
      _ = try UnixSocketAddress(long)
    }
    #expect(throws: UnixSocketAddress.PathTooLong.self) { _ = try UnixSocketAddress("") }
  }
}
