import Glibc
import SwitchCore
import SwitchProtocol
import SwitchSystem
import Testing

@testable import SwitchDaemon

/// A snapshot of many switches (`watch` of everything, `list`) is a kept
/// array queued by reference (`Connection.queue(head:shared:tail:…)`):
/// watchers that ask at once hold one copy between them, not one each
/// (a thousand watchers of 10,000 switches took 5.4 GB of VmHWM before).
@Suite struct SharedAnswerTests {
  /// 2,000 switches: a snapshot of ~500 KB, much more than the send
  /// buffer the test gives each connection (`watchWithoutReading`), so the
  /// loop still holds most of it when the peer does not read.
  static func manySwitches(_ directory: String) -> String {
    (0..<2000).map { "[bulk.s\($0)]\nLabel=Switch \($0)\nDescription=One of many.\n\n" }
      .joined()
  }

  static let watchEverything = #"{"jsonrpc":"2.0","id":1,"method":"watch","params":{}}"# + "\n"

  /// Sends a watch of everything on each connection, and turns the loop
  /// until each connection's answer is queued (none of them reads). The
  /// loop's side of each connection gets the smallest send buffer first,
  /// whatever the host's default (`net.core.wmem_default`).
  static func watchWithoutReading(
    _ harness: LoopHarness, count: Int
  ) throws -> [Int32] {
    let watching = { harness.server.connections.values.filter { $0.watchIDs.count == 1 }.count }
    let total = watching() + count
    let known = Set(harness.server.connections.values.map(\.id))
    var fds: [Int32] = []
    for _ in 0..<count { fds.append(try harness.connect()) }
    let deadline = monotonicSeconds() + 30
    while harness.server.connections.count < known.count + count && monotonicSeconds() < deadline {
      harness.server.turn(timeoutMilliseconds: 5)
    }
    for connection in harness.server.connections.values where !known.contains(connection.id) {
      var size: Int32 = 4096
      setsockopt(
        connection.fd, SOL_SOCKET, SO_SNDBUF, &size, socklen_t(MemoryLayout<Int32>.size))
    }
    for fd in fds {
      let sent = watchEverything.utf8CString.withUnsafeBytes {
        send(fd, $0.baseAddress, $0.count - 1, Int32(MSG_NOSIGNAL))
      }
      #expect(sent == watchEverything.utf8.count)
    }
    while watching() < total && monotonicSeconds() < deadline {
      harness.server.turn(timeoutMilliseconds: 5)
    }
    return fds
  }

  /// The buffers the loop's connections hold their snapshots in, by connection.
  static func snapshotBuffers(of connections: [Connection]) -> [UnsafeRawPointer?] {
    connections.map { connection in
      // The largest part queued: the list of Switch objects.
      connection.ahead.max { $0.bytes.count < $1.bytes.count }?.bytes.withUnsafeBytes {
        $0.baseAddress
      }
    }
  }

  /// Reads one line from each of `fds`, turning the loop meanwhile.
  static func readLines(_ harness: LoopHarness, _ fds: [Int32]) -> [String] {
    var buffers = [[UInt8]](repeating: [], count: fds.count)
    var chunk = [UInt8](repeating: 0, count: 65_536)
    let deadline = monotonicSeconds() + 30
    while buffers.contains(where: { !$0.contains(10) }) && monotonicSeconds() < deadline {
      harness.server.turn(timeoutMilliseconds: 5)
      for (i, fd) in fds.enumerated() {
        while true {
          let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
          if n <= 0 { break }
          buffers[i] += chunk[0..<n]
        }
      }
    }
    return buffers.map { buffer in
      String(decoding: buffer.prefix { $0 != 10 }, as: UTF8.self)
    }
  }

  @Test func watchersOfEverythingShareOneSnapshotAndEachReadsItWhole() throws {
    let harness = try LoopHarness(
      daemonConf: "[Daemon]\nAdminGroup=\nLogLevel=warning\n", switches: Self.manySwitches)
    defer { harness.stop() }
    let before = try Self.watchWithoutReading(harness, count: 4)
    defer { for fd in before { close(fd) } }
    let first = Array(harness.server.connections.values)
    let firstBuffers = Self.snapshotBuffers(of: first)
    #expect(first.count == 4)
    #expect(firstBuffers.allSatisfy { $0 != nil }, "each snapshot still queued: \(firstBuffers)")
    #expect(Set(firstBuffers).count == 1, "one copy for the four")

    // A change between: the next watchers share a list made again, and
    // the one already queued is left as it was (it is as of its revision).
    let writer = try TestClient(harness)
    defer { close(writer.fd) }
    let toggle = #"{"jsonrpc":"2.0","id":1,"method":"toggle","params":{"key":"bulk.s7"}}"# + "\n"
    writer.drive(input: Array(toggle.utf8)) { $0.lines.count >= 1 }
    let after = try Self.watchWithoutReading(harness, count: 3)
    defer { for fd in after { close(fd) } }
    let second = harness.server.connections.values.filter { connection in
      connection.watchIDs.count == 1 && !first.contains { $0 === connection }
    }
    let secondBuffers = Self.snapshotBuffers(of: second)
    #expect(second.count == 3)
    #expect(Set(secondBuffers).count == 1, "one copy for the three")
    #expect(Set(secondBuffers).isDisjoint(with: Set(firstBuffers)))

    // Read at the usual pace: the small buffers made a send per 4 KB.
    for connection in harness.server.connections.values {
      var size: Int32 = 1 << 18
      setsockopt(
        connection.fd, SOL_SOCKET, SO_SNDBUF, &size, socklen_t(MemoryLayout<Int32>.size))
    }
    let lines = Self.readLines(harness, before + after)
    var checked: [[Bool]] = []
    for line in lines {
      let answer = try JSONParser.parse(line, maxDepth: 64)
      let switches = answer["result"]?["switches"]?.arrayValue ?? []
      #expect(switches.count == 2000, "every switch, whole")
      let s7 = switches.first { $0["key"]?.stringValue == "bulk.s7" }
      checked.append([s7?["checked"]?.boolValue ?? false, s7?["writable"]?.boolValue ?? false])
    }
    #expect(checked.prefix(4).allSatisfy { $0 == [false, true] }, "as of the first revision")
    #expect(checked.suffix(3).allSatisfy { $0 == [true, true] }, "as of the toggle")
  }
}

extension SharedAnswerTests {
  /// The `switches` array of an answer line, as its bytes.
  static func switchesBytes(_ line: String) -> Substring? {
    guard let start = line.firstRange(of: #""switches":["#)?.upperBound,
      let end = line.lastIndex(of: "]")
    else { return nil }
    return line[start..<end]
  }

  /// A snapshot made from the kept list, written first so that no
  /// object is kept yet (`writeUnkeptSwitch`), has the bytes of one
  /// written switch by switch from the kept objects (two patterns: the
  /// general path), and of `list`'s.
  @Test func aSnapshotFromTheKeptListHasTheBytesOfOneWrittenSwitchBySwitch() throws {
    let harness = try LoopHarness(
      daemonConf: "[Daemon]\nAdminGroup=\nLogLevel=warning\n",
      switches: { directory in
        Self.manySwitches(directory)
          + "[bulk.s1x]\nLabel=On\nDefault=on\n\n"
      })
    defer { harness.stop() }
    let client = try TestClient(harness)
    defer { close(client.fd) }
    let requests = [
      #"{"jsonrpc":"2.0","id":1,"method":"watch","params":{"keys":["bulk.s1*"]}}"#,
      #"{"jsonrpc":"2.0","id":2,"method":"watch","params":{"keys":["bulk.s1*","bulk.s1"]}}"#,
      #"{"jsonrpc":"2.0","id":3,"method":"list","params":{"prefix":"bulk.s1"}}"#,
    ]
    client.drive(input: Array((requests.joined(separator: "\n") + "\n").utf8)) {
      $0.lines.count >= 3
    }
    let arrays = client.lines.prefix(3).map(Self.switchesBytes)
    #expect(arrays.count == 3)
    #expect(
      arrays.allSatisfy { ($0?.count ?? 0) > 100_000 },
      "three snapshots of the 1,112 switches under bulk.s1")
    // Compared here: a failure would print a megabyte.
    let sameAsGeneralPath = arrays[0] == arrays[1]
    let sameAsList = arrays[0] == arrays[2]
    #expect(sameAsGeneralPath, "the kept list's snapshot and the general path's")
    #expect(sameAsList, "the snapshot and the list")
    #expect(arrays[0]?.contains(#""key":"bulk.s1x""#) == true)
  }
}

/// The output queue with parts ahead of `out`: order and the send budget.
@Suite struct SharedPartsQueueTests {
  static func connectionOnSocketPair() -> (Connection, peer: Int32) {
    var fds: [Int32] = [0, 0]
    _ = socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue | SOCK_CLOEXEC.rawValue), 0, &fds)
    let c = Connection(
      id: 1, fd: fds[0], peer: Peer(uid: 0, gid: 0, pid: 1, groups: []),
      caller: Caller(actor: .peer(uid: 0, gid: 0, pid: 1), isAdmin: true, mayWrite: true),
      maxFrameBytes: 1024)
    return (c, fds[1])
  }

  static func read(_ fd: Int32) -> String {
    var bytes: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 4096)
    while true {
      let n = chunk.withUnsafeMutableBytes {
        recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT))
      }
      if n <= 0 { break }
      bytes += chunk[0..<n]
    }
    return String(decoding: bytes, as: UTF8.self)
  }

  @Test func partsGoOutAfterWhatWasQueuedAndBeforeWhatFollows() {
    let (c, peer) = Self.connectionOnSocketPair()
    defer {
      close(c.fd)
      close(peer)
    }
    c.fill(slot: c.openSlot(parts: 1, isBatch: false), part: 0, with: Array("earlier".utf8))
    let shared = Array("[1,2,3]".utf8)
    let slot = c.openSlot(parts: 1, isBatch: false)
    c.queue(
      head: Array("{\"s\":".utf8), shared: shared, tail: Array("}\n".utf8), slot: slot, part: 0)
    // By reference: the queue's part is the caller's buffer.
    #expect(
      c.ahead.contains { part in
        part.bytes.withUnsafeBytes { $0.baseAddress }
          == shared.withUnsafeBytes { $0.baseAddress }
      })
    c.queueEvent(head: Array("event".utf8), rest: Array("\n".utf8))
    #expect(c.unsentCount == "earlier\n{\"s\":[1,2,3]}\nevent\n".utf8.count)
    // A budget of 3 bytes a send: every part is cut somewhere, and resumed.
    while c.unsentCount > 0 {
      let result = c.sendQueued(budget: 3)
      #expect(result == .budgetSpent || result == .drained)
    }
    #expect(Self.read(peer) == "earlier\n{\"s\":[1,2,3]}\nevent\n")
    #expect(c.ahead.isEmpty)
  }

  /// An answer whose turn has not come waits in its slot, joined.
  @Test func aLaterAnswerWaitsItsTurnJoined() {
    let (c, peer) = Self.connectionOnSocketPair()
    defer {
      close(c.fd)
      close(peer)
    }
    let earlier = c.openSlot(parts: 1, isBatch: false)
    let later = c.openSlot(parts: 1, isBatch: false)
    c.queue(
      head: Array("{".utf8), shared: Array("\"x\":1".utf8), tail: Array("}\n".utf8), slot: later,
      part: 0)
    #expect(c.unsentCount == 0)
    c.fill(slot: earlier, part: 0, with: Array("first".utf8))
    #expect(c.sendQueued() == .drained)
    #expect(Self.read(peer) == "first\n{\"x\":1}\n")
  }
}
