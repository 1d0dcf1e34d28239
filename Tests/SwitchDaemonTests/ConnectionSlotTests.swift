import Glibc
import SwitchCore
import SwitchTestSupport
import Testing

@testable import SwitchDaemon

@Suite struct ConnectionSlotTests {
  static func connection() -> Connection {
    Connection(
      id: 1, fd: -1, peer: Peer(uid: 0, gid: 0, pid: 1, groups: []),
      caller: Caller(actor: .peer(uid: 0, gid: 0, pid: 1), isAdmin: true, mayWrite: true),
      maxFrameBytes: 1024)
  }

  @Test func slotsGoOutInOrderWhateverOrderTheyAreFilled() {
    let c = Self.connection()
    let first = c.openSlot(parts: 1, isBatch: false)
    let batch = c.openSlot(parts: 2, isBatch: true)
    let third = c.openSlot(parts: 1, isBatch: false)
    c.fill(slot: third, part: 0, with: Array("3".utf8))
    c.fill(slot: batch, part: 1, with: Array("b".utf8))
    #expect(c.unsentCount == 0)
    c.fill(slot: first, part: 0, with: Array("1".utf8))
    #expect(String(decoding: c.out, as: UTF8.self) == "1\n")
    c.fill(slot: batch, part: 0, with: Array("a".utf8))
    #expect(String(decoding: c.out, as: UTF8.self) == "1\n[a,b]\n3\n")
    #expect(c.slots.isEmpty)
  }

  /// A whole response line (a history page) for the next slot, with
  /// nothing waiting to go out, becomes the output queue, not copied even
  /// while another reference to it is alive (the drained output that
  /// brought it: a page copied there cost the loop ~0.5 ms); the caller
  /// gets the old, empty queue back. Otherwise it waits its turn like any
  /// answer.
  @Test func aLineForTheNextSlotIsTakenWhenTheQueueIsEmpty() {
    let c = Self.connection()
    let page = c.openSlot(parts: 1, isBatch: false)
    c.out.reserveCapacity(4096)
    let queueBuffer = c.out.withUnsafeBufferPointer { $0.baseAddress }
    var response = Array("page\n".utf8)
    response.reserveCapacity(1024)
    let responseBuffer = response.withUnsafeBufferPointer { $0.baseAddress }
    let stillShared = response
    c.queue(line: &response, slot: page, part: 0)
    #expect(String(decoding: c.out, as: UTF8.self) == "page\n")
    #expect(c.out.withUnsafeBufferPointer { $0.baseAddress } == responseBuffer)
    #expect(response.isEmpty)
    #expect(response.withUnsafeBufferPointer { $0.baseAddress } == queueBuffer)
    #expect(c.slots.isEmpty)
    #expect(stillShared.count == 5)

    let earlier = c.openSlot(parts: 1, isBatch: false)
    let later = c.openSlot(parts: 1, isBatch: false)
    var second = Array("second\n".utf8)
    let secondBuffer = second.withUnsafeBufferPointer { $0.baseAddress }
    let secondShared = second
    c.queue(line: &second, slot: later, part: 0)
    #expect(second.isEmpty)
    // Kept as it is until its turn (copied once, into the queue, then).
    #expect(c.slots.last?.single?.withUnsafeBufferPointer { $0.baseAddress } == secondBuffer)
    #expect(secondShared.count == 7)
    #expect(String(decoding: c.out, as: UTF8.self) == "page\n")
    c.fill(slot: earlier, part: 0, with: Array("first".utf8))
    #expect(String(decoding: c.out, as: UTF8.self) == "page\nfirst\nsecond\n")

    let batch = c.openSlot(parts: 1, isBatch: true)
    var inBatch = Array("b\n".utf8)
    c.queue(line: &inBatch, slot: batch, part: 0)
    #expect(String(decoding: c.out, as: UTF8.self) == "page\nfirst\nsecond\n[b]\n")
  }

  /// A drained queue keeps up to `keptSentBytes` of what it sent (emptying
  /// the array per answer cost ~80 instructions): the peer gets every byte
  /// once and in order, what was sent is never sent again, and the queue
  /// never holds much more than that bound.
  @Test func aDrainedQueueKeepsALittleOfWhatItSentAndSendsItOnce() throws {
    var pair: [Int32] = [-1, -1]
    guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue | SOCK_CLOEXEC.rawValue), 0, &pair) == 0
    else {
      throw FixtureError("no socketpair")
    }
    defer { close(pair[1]) }
    let c = Connection(
      id: 1, fd: pair[0], peer: Peer(uid: 0, gid: 0, pid: 1, groups: []),
      caller: Caller(actor: .peer(uid: 0, gid: 0, pid: 1), isAdmin: true, mayWrite: true),
      maxFrameBytes: 1024)
    defer { close(pair[0]) }
    var expected = ""
    for n in 0..<40 {
      let answer = "answer \(n) " + String(repeating: "x", count: 150)
      let slot = c.openSlot(parts: 1, isBatch: false)
      c.fill(slot: slot, part: 0, with: Array(answer.utf8))
      expected += answer + "\n"
      #expect(c.sendQueued() == .drained)
      #expect(c.unsentCount == 0)
      #expect(c.out.count <= Connection.keptSentBytes + answer.utf8.count + 1)
      if n == 0 { #expect(!c.out.isEmpty, "the first answer stays, to go with later ones") }
    }
    // A whole line taken as the queue after a drain: only it goes out, and
    // the buffer given back is empty.
    let page = c.openSlot(parts: 1, isBatch: false)
    var line = Array("page\n".utf8)
    c.queue(line: &line, slot: page, part: 0)
    #expect(line.isEmpty)
    #expect(c.sendQueued() == .drained)
    expected += "page\n"
    var received: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 65_536)
    while received.count < expected.utf8.count {
      let n = recv(pair[1], &chunk, chunk.count, 0)
      guard n > 0 else { break }
      received += chunk[0..<n]
    }
    #expect(String(decoding: received, as: UTF8.self) == expected)

    // A buffer grown past 1 MiB (a big answer, compacted as it went out)
    // is let go when it drains, however few bytes it holds.
    c.out.reserveCapacity(2 << 20)
    let last = c.openSlot(parts: 1, isBatch: false)
    c.fill(slot: last, part: 0, with: Array("last".utf8))
    #expect(c.sendQueued() == .drained)
    #expect(c.out.capacity <= 1 << 20)
  }
}
