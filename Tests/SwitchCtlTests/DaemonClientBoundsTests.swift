import Glibc
import SwitchSystem
import SwitchTestSupport
import Testing

@testable import SwitchCtl

/// What answers on the socket may not be switchd: a call's wait is bounded
/// as a whole (a trickle of bytes does not reset it), and notifications
/// before its answer are bounded in bytes (a flood is refused, not queued
/// without end). switchctl is often run as root against a path it is given.
@Suite struct DaemonClientBoundsTests {
  /// Listens at `path` and runs `serve` on the first connection, after
  /// reading its request.
  static func fakeDaemon(at path: String, _ serve: @escaping @Sendable (Int32) -> Void) throws
    -> TestThread<Void>
  {
    let listener = try listeningSocket(at: path)
    return TestThread {
      let fd = accept(listener, nil, nil)
      var buffer = [UInt8](repeating: 0, count: 4096)
      _ = recv(fd, &buffer, buffer.count, 0)
      serve(fd)
      close(fd)
      close(listener)
    }
  }

  /// Sends `bytes` whole; false once the peer is gone.
  static func sendAll(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
    var offset = 0
    while offset < bytes.count {
      let sent = bytes.withUnsafeBytes {
        send(fd, $0.baseAddress! + offset, bytes.count - offset, Int32(MSG_NOSIGNAL))
      }
      if sent <= 0 { return false }
      offset += sent
    }
    return true
  }

  @Test func notificationsBeforeTheAnswerAreBoundedInBytes() throws {
    let directory = try makeTemporaryDirectory()
    defer { removeTree(directory) }
    let path = directory + "/fake.sock"
    // Endless 64 KiB notifications, never an answer, until switchctl leaves.
    let server = try Self.fakeDaemon(at: path) { fd in
      let filler = String(repeating: "x", count: 64 << 10)
      let line = Array(
        (#"{"jsonrpc":"2.0","method":"changed","params":{"filler":""# + filler + "\"}}\n").utf8)
      while Self.sendAll(fd, line) {}
    }
    do {
      let client = try DaemonClient.connect(to: path, receiveTimeout: 3600)
      #expect(throws: ClientError.flooded(path: path)) { _ = try client.call(.status, []) }
    }  // the client is gone: the fake's next send fails
    server.join()
  }

  @Test func aTrickleOfBytesDoesNotStretchTheCallsWait() throws {
    let directory = try makeTemporaryDirectory()
    defer { removeTree(directory) }
    let path = directory + "/fake.sock"
    // A space every 50 ms, never a line, until switchctl leaves.
    let server = try Self.fakeDaemon(at: path) { fd in
      while Self.sendAll(fd, [0x20]) { usleep(50_000) }
    }
    do {
      let client = try DaemonClient.connect(to: path, receiveTimeout: 1)
      let started = monotonicSeconds()
      #expect(throws: ClientError.timedOut(path: path, seconds: 1)) {
        _ = try client.call(.status, [])
      }
      // A lower bound only: the whole second was waited.
      #expect(monotonicSeconds() - started >= 0.99)
    }
    server.join()
  }

  /// `watch` waits for events without end, but not for the watch's answer:
  /// a socket that accepts and never answers ends it with a sentence that
  /// says so.
  @Test func aWatchWhoseAnswerNeverComesEnds() throws {
    let directory = try makeTemporaryDirectory()
    defer { removeTree(directory) }
    let path = directory + "/mute.sock"
    // Reads the request, then says nothing until switchctl leaves.
    let server = try Self.fakeDaemon(at: path) { fd in
      var byte: UInt8 = 0
      _ = recv(fd, &byte, 1, 0)
    }
    let console = CapturedConsole()
    var watcher = Watcher(socketPath: path, patterns: [], since: nil, json: false, console: console)
    watcher.answerTimeout = 1
    do {
      let code = try watcher.run()
      Issue.record("the watch ended with \(code) instead of timing out")
    } catch {
      #expect(
        error.lines == [
          "switchctl: switchd at \(path) did not answer within 1 second; it may be stuck"
        ])
    }
    server.join()
  }

  /// switchd's varlink socket (it waits for a NUL a JSON-RPC line never
  /// sends) is refused before connecting, as a usage error: it timed out
  /// after 30 s (an audit). Nothing listens here: the name alone decides.
  @Test func theVarlinkSocketIsRefusedAtOnce() {
    for path in ["/run/switchd/io.switchd.Switches", "io.switchd.Switches"] {
      #expect(throws: ClientError.varlinkSocket(path: path)) {
        try DaemonClient.connect(to: path, receiveTimeout: 30)
      }
      #expect(Failure.client(.varlinkSocket(path: path)).exitCode.rawValue == 2)
    }
  }
}

/// A write whose connection ends before its answer may have been carried
/// out (switchd commits, then answers): switchctl says it does not know,
/// where a read just failed (the scripts audit: "closed the connection
/// before answering" read as "nothing changed").
@Suite struct UnansweredWriteTests {
  @Test func aWriteCutOffSaysItsOutcomeIsUnknownAndAReadDoesNot() throws {
    for (arguments, unknown) in [(["toggle", "wifi"], true), (["get", "wifi"], false)] {
      let directory = try makeTemporaryDirectory()
      defer { removeTree(directory) }
      let path = directory + "/fake.sock"
      // Reads the request and closes without an answer, as a daemon killed then.
      let server = try DaemonClientBoundsTests.fakeDaemon(at: path) { _ in }
      let result = runCtl(["--socket", path] + arguments)
      server.join()
      #expect(result.code == .failure)
      let said = "switchctl: switchd at \(path) closed the connection before answering"
      #expect(
        result.err
          == [
            said
              + (unknown ? "; whether the change was made is not known: read the switch again" : "")
          ])
    }
  }
}
