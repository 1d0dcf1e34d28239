import Glibc
import SwitchSystem
import SwitchTestSupport
import Testing

@testable import SwitchDaemon

/// `Listener.bind`: the socket appears at its path with exactly its mode,
/// bound in a private directory beside it (never through the umask), and
/// nothing of that directory stays.
@Suite struct ListenerTests {
  /// The entries of `directory`, sorted.
  func entries(_ directory: String) -> [String] {
    ((try? directoryEntries(directory)) ?? []).sorted()
  }

  func mode(of path: String) -> mode_t? {
    var info = stat()
    guard lstat(path, &info) == 0, info.st_mode & S_IFMT == S_IFSOCK else { return nil }
    return info.st_mode & 0o7777
  }

  func connects(to path: String) -> Bool {
    guard let address = try? UnixSocketAddress(path) else { return false }
    let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue | SOCK_CLOEXEC.rawValue), 0)
    defer { close(fd) }
    return address.withSockaddr { connect(fd, $0, $1) } == 0
  }

  @Test(arguments: [0o600, 0o660, 0o666] as [UInt32])
  func aSocketHasItsModeAndNothingIsLeftBesideIt(mode: UInt32) throws {
    try withTemporaryDirectory { directory in
      let path = directory + "/switchd.sock"
      let listener = try Listener.bind(path: path, mode: mode)
      #expect(self.mode(of: path) == mode_t(mode))
      #expect(entries(directory) == ["switchd.sock"])
      #expect(connects(to: path))
      listener.close()
      #expect(entries(directory) == [])
    }
  }

  /// At close, what is at the path now is removed only if it is the socket
  /// this listener bound: not a file put in its place, nor another
  /// listener's socket bound there after ours was removed (a lifecycle
  /// audit: a stop deleted both).
  @Test func closingLeavesWhatReplacedItsSocket() throws {
    try withTemporaryDirectory { directory in
      let path = directory + "/switchd.sock"
      let first = try Listener.bind(path: path, mode: 0o600)
      unlink(path)
      try writeWholeFile(path, "precious data\n")
      first.close()
      #expect(try readWholeFile(path) == "precious data\n")

      unlink(path)
      let second = try Listener.bind(path: path, mode: 0o600)
      let third = try Listener.bind(path: path + ".x", mode: 0o600)
      unlink(path)
      rename(path + ".x", path)
      second.close()
      #expect(connects(to: path), "another listener's socket was removed")
      third.close()
      #expect(entries(directory) == ["switchd.sock"], "renamed, it is not at its own path")
    }
  }

  /// A path whose staging name (`.switchd-bind-XXXXXX/s` beside it) would
  /// not fit in `sun_path` is bound through `/proc/self/fd`.
  @Test func aPathNearTheLimitIsBoundThroughItsDirectory() throws {
    try withTemporaryDirectory { directory in
      var deep = directory
      while deep.utf8.count < UnixSocketAddress.maxPathBytes - 12 {
        deep += "/d"
        mkdir(deep, 0o700)
      }
      let path = deep + "/s.sock"
      #expect(path.utf8.count <= UnixSocketAddress.maxPathBytes)
      #expect((deep + "/.switchd-bind-XXXXXX/s").utf8.count > UnixSocketAddress.maxPathBytes)
      let listener = try Listener.bind(path: path, mode: 0o640)
      defer { listener.close() }
      #expect(mode(of: path) == 0o640)
      #expect(entries(deep) == ["s.sock"])
      #expect(connects(to: path))
    }
  }

  /// A socket file nobody answers on (a crash's) is replaced; one that
  /// answers is another switchd's and stays.
  @Test func aStaleSocketIsReplacedAndALiveOneIsNot() throws {
    try withTemporaryDirectory { directory in
      let path = directory + "/switchd.sock"
      let stale = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue | SOCK_CLOEXEC.rawValue), 0)
      let address = try UnixSocketAddress(path)
      #expect(address.withSockaddr { Glibc.bind(stale, $0, $1) } == 0)
      close(stale)
      #expect(!connects(to: path))
      let listener = try Listener.bind(path: path, mode: 0o600)
      defer { listener.close() }
      #expect(connects(to: path))
      #expect(throws: Listener.Failure.self) { try Listener.bind(path: path, mode: 0o600) }
      #expect(connects(to: path))
      #expect(entries(directory) == ["switchd.sock"])
    }
  }

  /// The rename into place does not replace a socket another switchd
  /// bound after `bind` probed the path, nor anything that is not a socket.
  @Test func placingNeverReplacesALiveSocket() throws {
    try withTemporaryDirectory { directory in
      let path = directory + "/switchd.sock"
      let live = try Listener.bind(path: path, mode: 0o600)
      defer { live.close() }
      let other = try Listener.bind(path: directory + "/other.sock", mode: 0o600)
      defer { other.close() }
      #expect(throws: Listener.Failure.self) {
        try Listener.place(other.path, at: path, address: try UnixSocketAddress(path))
      }
      #expect(connects(to: path))
      #expect(connects(to: directory + "/other.sock"))

      let file = directory + "/file"
      try writeWholeFile(file, "keep")
      #expect(throws: Listener.Failure.self) {
        try Listener.place(other.path, at: file, address: try UnixSocketAddress(file))
      }
      #expect(try readWholeFile(file) == "keep")
      #expect(connects(to: directory + "/other.sock"))
    }
  }

  /// A mistyped `--socket /etc/passwd` must not destroy the file: only a
  /// socket is ever replaced, and only a stale one.
  @Test func whatIsNotASocketIsNeverReplaced() throws {
    try withTemporaryDirectory { directory in
      let file = directory + "/important.conf"
      try writeWholeFile(file, "keep")
      let link = directory + "/link.sock"
      #expect(symlink(file, link) == 0)
      let fifo = directory + "/fifo"
      #expect(mkfifo(fifo, 0o600) == 0)
      for (path, kind) in [(file, "a regular file"), (link, "a symbolic link"), (fifo, "a FIFO")] {
        do {
          let listener = try Listener.bind(path: path, mode: 0o600)
          listener.close()
          Issue.record("\(path) was replaced")
        } catch {
          #expect("\(error)".contains("\(path) is \(kind)"), "\(error)")
          #expect("\(error)".contains("not a socket"), "\(error)")
        }
      }
      #expect(try readWholeFile(file) == "keep")
      var status = stat()
      #expect(lstat(link, &status) == 0 && status.st_mode & S_IFMT == S_IFLNK)
      #expect(lstat(fifo, &status) == 0 && status.st_mode & S_IFMT == S_IFIFO)
      // Nothing staged is left beside them.
      #expect(entries(directory).sorted() == ["fifo", "important.conf", "link.sock"])
    }
  }
}
