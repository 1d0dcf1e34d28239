import Glibc
import SwitchProtocol
import SwitchSystem
import Testing

@testable import SwitchDaemon

/// The loop's flow control against a peer that reads everything the moment
/// it is sent: every send drains the output, so nothing but the loop itself
/// can resume the frames and replays the high-water mark held back.
@Suite struct FlowControlTests {
  /// MaxQueuedBytes=4096 puts the high-water mark at 4 KiB: a pump stops
  /// after a few answers, far below what the socket takes at once.
  static let daemonConf = "[Daemon]\nAdminGroup=\nMaxQueuedBytes=4096\nLogLevel=warning\n"

  static func lines(_ count: Int, _ request: (Int) -> String) -> [UInt8] {
    Array((1...count).map { request($0) + "\n" }.joined().utf8)
  }

  static func get(_ id: Int) -> String {
    #"{"jsonrpc":"2.0","id":\#(id),"method":"get","params":{"key":"wifi"}}"#
  }

  @Test func pipelinedRequestsAreAllAnsweredInOrder() throws {
    let harness = try LoopHarness(daemonConf: Self.daemonConf)
    defer { harness.stop() }
    let peer = try TestClient(harness)
    defer { close(peer.fd) }
    let count = 2000
    peer.drive(input: Self.lines(count, Self.get)) { $0.lines.count >= count }
    #expect(peer.answered(inOrder: 1...count))
  }

  @Test func aHalfClosedPeerGetsEveryAnswerThenEndOfStream() throws {
    let harness = try LoopHarness(daemonConf: Self.daemonConf)
    defer { harness.stop() }
    let peer = try TestClient(harness)
    defer { close(peer.fd) }
    let count = 2000
    peer.drive(input: Self.lines(count, Self.get), halfClose: true) { $0.ended }
    #expect(peer.ended)
    #expect(peer.answered(inOrder: 1...count))
  }

  /// A peer that sends its writes as notifications and hangs up at once:
  /// what it sent is carried out, all of it (a call that wants an answer
  /// is dropped: nobody is there to read it). At most 64 of its writes are
  /// at the writer at a time, so the rest wait; each commit resumes the
  /// connection, which must get the whole pump (not the send alone that an
  /// idle connection gets) to take them, and close once all is done.
  @Test func everyWriteOfAPeerThatHungUpIsCarriedOut() throws {
    let harness = try LoopHarness(daemonConf: Self.daemonConf)
    defer { harness.stop() }
    let peer = try TestClient(harness)
    let toggles = 300
    let input = Self.lines(toggles) {
      _ in #"{"jsonrpc":"2.0","method":"toggle","params":{"key":"wifi"}}"#
    }
    let sent = input.withUnsafeBytes { send(peer.fd, $0.baseAddress, $0.count, 0) }
    #expect(sent == input.count, "the socket took every line at once")
    close(peer.fd)
    let deadline = monotonicSeconds() + 30
    while harness.server.revision < Int64(toggles) || harness.server.connections.count > 0,
      monotonicSeconds() < deadline
    {
      harness.server.turn(timeoutMilliseconds: 5)
    }
    #expect(harness.server.revision == Int64(toggles))
    #expect(harness.server.connections.count == 0, "the connection closed once all was done")
  }

  @Test func aSinceReplayLargerThanTheMarkArrivesWhole() throws {
    let harness = try LoopHarness(daemonConf: Self.daemonConf)
    defer { harness.stop() }
    let writer = try TestClient(harness)
    defer { close(writer.fd) }
    let toggles = 600
    writer.drive(
      input: Self.lines(toggles) {
        #"{"jsonrpc":"2.0","id":\#($0),"method":"toggle","params":{"key":"wifi"}}"#
      }
    ) { $0.lines.count >= toggles }
    #expect(writer.answered(inOrder: 1...toggles))

    let watcher = try TestClient(harness)
    defer { close(watcher.fd) }
    let watch = #"{"jsonrpc":"2.0","id":1,"method":"watch","params":{"since":0}}"# + "\n"
    // The answer, then one event per toggle.
    watcher.drive(input: Array(watch.utf8)) { $0.lines.count >= toggles + 1 }
    let revisions = watcher.lines.dropFirst().compactMap {
      (try? JSONParser.parse($0, maxDepth: 64))?["params"]?["revision"]?.int64Value
    }
    #expect(revisions.count == toggles, "events received")
    let everyEventOnce = revisions.elementsEqual(1...Int64(toggles))
    #expect(everyEventOnce, "events in revision order, once each")
  }

  /// A peer that asks for `since` replays and hangs up is not replayed to:
  /// its output would be thrown away, and the replays would cost a whole
  /// log's reading and encoding for nobody while the connection stayed
  /// counted. Each watch has one page in flight at a time and each page is
  /// taken in a turn of its own, so replaying 12 pages takes 12 turns at
  /// least: the connection must be gone well before.
  @Test func aPeerThatHangsUpIsNotReplayedTo() throws {
    let harness = try LoopHarness(daemonConf: Self.daemonConf)
    defer { harness.stop() }
    let writer = try TestClient(harness)
    defer { close(writer.fd) }
    let toggles = 12 * Server.replayPage
    writer.drive(
      input: Self.lines(toggles) {
        #"{"jsonrpc":"2.0","id":\#($0),"method":"toggle","params":{"key":"wifi"}}"#
      }
    ) { $0.lines.count >= toggles }
    #expect(writer.answered(inOrder: 1...toggles))

    let watcher = try harness.connect()
    let watches = Self.lines(16) {
      #"{"jsonrpc":"2.0","id":\#($0),"method":"watch","params":{"since":0}}"#
    }
    let sent = watches.withUnsafeBytes { send(watcher, $0.baseAddress, $0.count, 0) }
    #expect(sent == watches.count)
    // Replaying: every watch made, its first pages asked for.
    let deadline = monotonicSeconds() + 30
    while harness.server.hub.watches.count < 16 && monotonicSeconds() < deadline {
      harness.server.turn(timeoutMilliseconds: 5)
    }
    #expect(harness.server.connections.count == 2)
    close(watcher)
    var turns = 0
    // The writer's connection stays; the watcher's must go.
    while harness.server.connections.count > 1 && turns < 6 {
      harness.server.turn(timeoutMilliseconds: 1000)
      turns += 1
    }
    #expect(harness.server.connections.count == 1, "still replaying after \(turns) turns")
    #expect(harness.server.hub.watches.isEmpty)
  }

  /// Toggles one at a time (each publish has one change, sent to the
  /// watcher at once) while the watcher reads nothing: its socket fills,
  /// and an event the socket does not take (in whole or in part) is queued,
  /// the later ones behind it. Once it reads, every event arrives whole,
  /// once, in order.
  @Test func aLiveWatcherThatReadsLateGetsEveryEventWholeAndInOrder() throws {
    let harness = try LoopHarness(
      daemonConf: "[Daemon]\nAdminGroup=\nMaxQueuedBytes=8388608\nLogLevel=warning\n")
    defer { harness.stop() }
    let watcher = try TestClient(harness)
    defer { close(watcher.fd) }
    let watch = #"{"jsonrpc":"2.0","id":1,"method":"watch","params":{"keys":["wifi"]}}"# + "\n"
    watcher.drive(input: Array(watch.utf8)) { $0.lines.count >= 1 }
    let writer = try TestClient(harness)
    defer { close(writer.fd) }
    let toggles = 1500
    var queuedBehindTheSocket = false
    for id in 1...toggles {
      let toggle = #"{"jsonrpc":"2.0","id":\#(id),"method":"toggle","params":{"key":"wifi"}}"#
      writer.drive(input: Array((toggle + "\n").utf8)) { $0.lines.count >= id }
      queuedBehindTheSocket =
        queuedBehindTheSocket || harness.server.connections.values.contains { $0.unsentCount > 0 }
    }
    #expect(writer.answered(inOrder: 1...toggles))
    #expect(queuedBehindTheSocket, "the watcher's socket filled up")
    watcher.drive(input: []) { $0.lines.count >= toggles + 1 }
    let revisions = watcher.lines.dropFirst().compactMap {
      (try? JSONParser.parse($0, maxDepth: 64))?["params"]?["revision"]?.int64Value
    }
    #expect(revisions.count == toggles, "whole events received")
    let everyEventOnce = revisions.elementsEqual(1...Int64(toggles))
    #expect(everyEventOnce, "events in revision order, once each")
  }
}

/// The test's client: writes its input as the socket takes it, turns the
/// loop, and reads everything there is after every turn.
final class TestClient {
  let fd: Int32
  private let harness: LoopHarness
  private var buffer: [UInt8] = []
  private(set) var lines: [String] = []
  private(set) var ended = false
  /// Bytes received so far: progress, for a wait bounded by a stall.
  private(set) var received = 0

  init(_ harness: LoopHarness) throws {
    self.harness = harness
    fd = try harness.connect()
  }

  /// Until `done` or a 30 s deadline: a stall fails the test, it does not hang it.
  func drive(input: [UInt8], halfClose: Bool = false, until done: (TestClient) -> Bool) {
    var offset = 0
    var shut = false
    let deadline = monotonicSeconds() + 30
    while !done(self) && !ended && monotonicSeconds() < deadline {
      if offset < input.count {
        let n = input.withUnsafeBytes {
          send(fd, $0.baseAddress! + offset, input.count - offset, Int32(MSG_NOSIGNAL))
        }
        if n > 0 { offset += n }
      } else if halfClose && !shut {
        shutdown(fd, Int32(SHUT_WR))
        shut = true
      }
      harness.server.turn(timeoutMilliseconds: 5)
      readAll()
    }
  }

  func readAll() {
    var chunk = [UInt8](repeating: 0, count: 65_536)
    while true {
      let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
      if n == 0 { ended = true }
      if n <= 0 { break }
      received += n
      buffer += chunk[0..<n]
    }
    while let newline = buffer.firstIndex(of: 10) {
      lines.append(String(decoding: buffer[..<newline], as: UTF8.self))
      buffer.removeSubrange(...newline)
    }
  }

  /// Whether the answers carry exactly these ids, in this order (compared
  /// here: thousands of ids make an unreadable failure message).
  func answered(inOrder ids: ClosedRange<Int>) -> Bool {
    let got = lines.compactMap { line in
      (try? JSONParser.parse(line, maxDepth: 64))?["id"]?.int64Value.map { Int($0) }
    }
    if !got.elementsEqual(ids) { print("answered \(got.count) of \(ids.count) requests") }
    return got.elementsEqual(ids)
  }
}
