import Glibc
import SwitchProtocol
import SwitchSystem
import SwitchTestSupport
import Testing

/// Issue 11, item 1: a client that writes thousands of requests in one
/// `write` and then only reads gets every answer, in order. Nothing but the
/// daemon can resume the requests it held back above its high-water mark:
/// the client sends nothing more.
///
/// Each test runs many rounds, because whether a send drains the output
/// at once depends on how fast the client reads (the race of the issue);
/// the daemons with `MaxQueuedBytes=4096` (a 4 KiB mark) make it drain
/// almost every time.
@Suite struct PipeliningEndToEndTests {
  static let defaultMark = "[Daemon]\nAdminGroup=\n"
  static let smallMark = "[Daemon]\nAdminGroup=\nMaxQueuedBytes=4096\n"

  static func gets(_ ids: ClosedRange<Int>) -> [UInt8] {
    Array(
      ids.map { #"{"jsonrpc":"2.0","id":\#($0),"method":"get","params":{"key":"wifi"}}"# + "\n" }
        .joined().utf8)
  }

  /// 1,000 to 3,000 requests (the range of the issue's report), a
  /// different count each round.
  static func count(round: Int) -> Int { 1000 + (round * 1_237) % 2001 }

  /// The default mark races with the client's reads: more rounds. The
  /// small one stalled the old code nearly every round: a few. (Kept small
  /// enough for the suite under TSan.)
  static let marks = [(defaultMark, 10), (smallMark, 3)]

  @Test(arguments: marks)
  func pipelinedGetsAreAllAnsweredInOrder(daemonConf: String, rounds: Int) throws {
    let daemon = try DaemonFixture(daemonConf: daemonConf)
    for round in 0..<rounds {
      let count = Self.count(round: round)
      let client = try PipeliningClient(daemon.socketPath)
      try client.write(Self.gets(1...count))
      let answered = client.read { $0.ids.count >= count }
      let inOrder = answered.ids.elementsEqual(1...count)
      #expect(inOrder, "round \(round): \(answered.summary)")
      guard answered.ids.count == count else { return }
    }
  }

  @Test(arguments: marks)
  func aHalfClosedClientGetsEveryAnswerThenEndOfStream(daemonConf: String, rounds: Int) throws {
    let daemon = try DaemonFixture(daemonConf: daemonConf)
    for round in 0..<(rounds + 1) / 2 {
      let count = Self.count(round: round)
      let client = try PipeliningClient(daemon.socketPath)
      try client.write(Self.gets(1...count))
      shutdown(client.fd, Int32(SHUT_WR))
      let answered = client.read { $0.ended }
      let ended = answered.ended
      #expect(ended, "round \(round): \(answered.summary)")
      let inOrder = answered.ids.elementsEqual(1...count)
      #expect(inOrder, "round \(round): \(answered.summary)")
      guard answered.ended else { return }
    }
  }

  /// `watch since 0` over a log far larger than the mark, with gets behind
  /// it in the same write: every event once, in revision order, and every
  /// answer in order.
  @Test(arguments: marks)
  func aSinceReplayAndTheRequestsBehindItAllArrive(daemonConf: String, rounds: Int) throws {
    let daemon = try DaemonFixture(daemonConf: daemonConf)
    let toggles = 1000
    let writer = try PipeliningClient(daemon.socketPath)
    try writer.write(
      Array(
        (1...toggles).map {
          #"{"jsonrpc":"2.0","id":\#($0),"method":"toggle","params":{"key":"wifi"}}"# + "\n"
        }.joined().utf8))
    let written = writer.read { $0.ids.count >= toggles }
    let allWritten = written.ids.elementsEqual(1...toggles)
    try #require(allWritten, "toggles: \(written.summary)")

    for round in 0..<(rounds + 2) / 3 {
      let count = Self.count(round: round)
      let client = try PipeliningClient(daemon.socketPath)
      let watch = #"{"jsonrpc":"2.0","id":0,"method":"watch","params":{"since":0}}"# + "\n"
      try client.write(Array(watch.utf8) + Self.gets(1...count))
      let answered = client.read { $0.ids.count >= count + 1 && $0.revisions.count >= toggles }
      let inOrder = answered.ids.elementsEqual(0...count)
      #expect(inOrder, "round \(round): \(answered.summary)")
      let everyEventOnce = answered.revisions.elementsEqual(1...Int64(toggles))
      #expect(everyEventOnce, "round \(round): \(answered.summary)")
      guard answered.revisions.count == toggles else { return }
    }
  }
}

/// One connection that writes everything in one `write`, then reads as
/// fast as the socket gives, with a deadline: a stall fails, it does not hang.
final class PipeliningClient {
  let fd: Int32

  struct Received {
    var ids: [Int] = []
    /// The revisions of the `changed` events, in arrival order.
    var revisions: [Int64] = []
    var ended = false
    /// Files one line: an answer by its id, an event by its revision.
    /// (Scanned, not parsed: a debug-built parser would make reading
    /// slower than the daemon, and hide the race.)
    mutating func take(_ line: ArraySlice<UInt8>) {
      let isEvent = line.firstRange(of: Self.changedMethod) != nil
      if isEvent, let revision = Self.number(after: Self.revisionMember, in: line) {
        revisions.append(revision)
      } else if !isEvent, let id = Self.number(after: Self.idMember, in: line) {
        ids.append(Int(id))
      }
    }

    private static let changedMethod = Array(#""method":"changed""#.utf8)
    private static let revisionMember = Array(#""revision":"#.utf8)
    private static let idMember = Array(#""id":"#.utf8)

    /// The integer right after the first `member` in `line`.
    private static func number(after member: [UInt8], in line: ArraySlice<UInt8>) -> Int64? {
      guard let found = line.firstRange(of: member) else { return nil }
      let digits = line[found.upperBound...].prefix { (48...57).contains($0) }
      return Int64(String(decoding: digits, as: UTF8.self))
    }

    var summary: String {
      "\(ids.count) answers (last id \(ids.last.map(String.init) ?? "none")), "
        + "\(revisions.count) events, \(ended ? "ended" : "open")"
    }
  }

  init(_ socketPath: String) throws {
    fd = try connectUnixSocket(socketPath)
    // A write the daemon never reads fails the test after 30 s.
    var tv = timeval(tv_sec: 30, tv_usec: 0)
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
  }

  deinit { close(fd) }

  func write(_ bytes: [UInt8]) throws {
    guard sendAll(fd, bytes) else { throw FixtureError("the write failed: errno \(errno)") }
  }

  /// Reads until `done` says so, the daemon closes, or 30 s pass.
  func read(until done: (Received) -> Bool) -> Received {
    let deadline = monotonicSeconds() + 30
    while !done(received) && !received.ended {
      let left = Int32((deadline - monotonicSeconds()) * 1000)
      guard left > 0 else { break }
      readSome(waitingUpTo: left)
    }
    return received
  }

  private var received = Received()
  private var buffer: [UInt8] = []
  private var chunk = [UInt8](repeating: 0, count: 65_536)

  /// Reads what has arrived, waiting up to `milliseconds` for the first byte.
  func readSome(waitingUpTo milliseconds: Int32) {
    var poll = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
    if Glibc.poll(&poll, 1, milliseconds) <= 0 { return }
    let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
    if n < 0 && errno == EINTR { return }
    if n <= 0 {
      received.ended = true
      return
    }
    buffer += chunk[0..<n]
    var start = 0
    while let newline = buffer[start...].firstIndex(of: 10) {
      received.take(buffer[start..<newline])
      start = newline + 1
    }
    buffer.removeSubrange(0..<start)
  }
}
