import Glibc
import SwitchCore
import SwitchSystem
import Testing

@testable import SwitchDaemon

/// The unsent answers one user's connections hold are bounded over all of
/// them: many connections that ask for large answers and read none cannot
/// make the daemon hold one each.
@Suite struct BacklogPerUserTests {
  @Test func aUidOverTheLimitWaitsAndIsResumedWhenItFallsBack() {
    var backlog = BacklogPerUser(limit: 100)
    var may = backlog.mayTake(uid: 1000, connection: 1)
    #expect(may)
    var resumed = backlog.changed(uid: 1000, by: 150)
    #expect(resumed.isEmpty)
    may = backlog.mayTake(uid: 1000, connection: 2) || backlog.mayTake(uid: 1000, connection: 3)
    #expect(!may, "over the limit")
    may = backlog.mayTake(uid: 1001, connection: 4)
    #expect(may, "another uid is not held")
    #expect(backlog.held(uid: 1000) == 2)
    resumed = backlog.changed(uid: 1000, by: -40)
    #expect(resumed.isEmpty, "110: still over")
    resumed = backlog.changed(uid: 1000, by: -10)
    #expect(resumed == [2, 3], "at the limit: both handed back")
    #expect(backlog.over.isEmpty)
    resumed = backlog.changed(uid: 1000, by: -100)
    #expect(resumed.isEmpty)
    #expect(backlog.count(uid: 1000) == 0)
    may = backlog.mayTake(uid: 1000, connection: 2)
    #expect(may)
  }

  /// MaxQueuedBytes=4096: the high-water mark is 4 KiB and one uid's
  /// backlog 256 KiB. A list of 2,000 switches (~0.8 MB) is more than the
  /// socket takes and more than the backlog: once one connection holds one
  /// unread, the others of that uid take no request.
  static let daemonConf = "[Daemon]\nAdminGroup=\nMaxQueuedBytes=4096\nLogLevel=warning\n"
  static let switchCount = 2000

  static func switches(_: String) -> String {
    (0..<switchCount).map {
      "[s\($0)]\nLabel=Switch \($0)\nDescription=One of many, to make a list longer than a socket takes.\n"
    }.joined(separator: "\n")
  }

  static let list = Array((#"{"jsonrpc":"2.0","id":1,"method":"list","params":{}}"# + "\n").utf8)

  /// Four connections of one non-administrator each ask for every switch
  /// and read nothing: one answer is queued, three requests wait. Then all
  /// read: the unsent bytes past the mark never exceed the limit by more
  /// than one answer, and each gets its whole list in the end.
  @Test func aUsersConnectionsHoldTheLimitAndOneAnswerAtMost() throws {
    let harness = try LoopHarness(daemonConf: Self.daemonConf, switches: Self.switches)
    defer { harness.stop() }
    let clients = try accepted(4, by: harness)
    defer { for client in clients { close(client.fd) } }
    for connection in harness.server.connections.values { connection.caller.isAdmin = false }
    for client in clients { client.sendAll(Self.list) }
    // Until every connection has its answer queued or is held.
    turn(harness) {
      Self.holdingPastTheMark($0) + $0.backlogPerUser.held(uid: getuid()) == clients.count
    }
    #expect(Self.holdingPastTheMark(harness) == 1, "one answer queued; three requests held")
    // Then all read: the unsent bytes past the mark never pass the
    // backlog by more than the one answer that took them over it.
    var most = 0
    let deadline = monotonicSeconds() + 30
    while clients.contains(where: { $0.lines.isEmpty }) && monotonicSeconds() < deadline {
      harness.server.turn(timeoutMilliseconds: 5)
      most = max(most, Self.unsentPastTheMark(harness.server))
      for client in clients { client.readAll() }
    }
    let answer = (clients.first?.lines.first?.utf8.count ?? 0) + 1
    #expect(answer > 3 * harness.server.limits.backlogPerUser, "a list larger than the backlog")
    #expect(most <= harness.server.limits.backlogPerUser + answer)
    for client in clients {
      #expect(client.lines.count == 1)
      #expect(client.lines.first.map { Self.objects(in: $0) } == Self.switchCount)
    }
  }

  /// A connection that sent its requests and closed its side, held for its
  /// uid's backlog with one of them not yet taken, stays open: once
  /// handed back it answers the rest, and then closes.
  @Test func aHalfClosedConnectionHeldAnswersItsRequestsBeforeClosing() throws {
    let harness = try LoopHarness(daemonConf: Self.daemonConf, switches: Self.switches)
    defer { harness.stop() }
    let lister = try TestClient(harness)
    defer { close(lister.fd) }
    let halfClosed = try TestClient(harness)
    defer { close(halfClosed.fd) }
    turn(harness) { $0.connections.count == 2 }
    for connection in harness.server.connections.values { connection.caller.isAdmin = false }
    // Its socket takes a few KiB: a list of 111 switches (~65 KB) leaves
    // it past the mark and under the uid's limit, its `get` not taken.
    guard let second = harness.server.connections.values.max(by: { $0.id < $1.id }) else {
      Issue.record("no connection")
      return
    }
    var size: Int32 = 4096
    setsockopt(second.fd, SOL_SOCKET, SO_SNDBUF, &size, socklen_t(MemoryLayout<Int32>.size))
    // Exactly one read's worth (`Server.readChunk`): the same read then
    // finds the end of its input, with the `get` still to take.
    let list = #"{"jsonrpc":"2.0","id":1,"method":"list","params":{"prefix":"s10"}}"# + "\n"
    let get = #"{"jsonrpc":"2.0","id":2,"method":"get","params":{"key":"s0"}"#
    let padding = String(
      repeating: " ", count: Server.readChunk - list.utf8.count - get.utf8.count - 2)
    let requests = list + get + padding + "}\n"
    #expect(requests.utf8.count == Server.readChunk)
    halfClosed.sendAll(Array(requests.utf8))
    shutdown(halfClosed.fd, Int32(SHUT_WR))
    turn(harness) { _ in second.inputClosed }
    #expect(second.unsentCount > harness.server.limits.highWater, "its get is not taken yet")
    // The other connection takes the uid over its limit; then this one
    // reads all there is: it is held with its `get`, and stays open.
    lister.sendAll(Self.list)
    turn(harness) { !$0.backlogPerUser.over.isEmpty }
    halfClosed.drive(input: []) { _ in second.unsentCount == 0 && second.heldForBacklog }
    #expect(!second.isClosed, "held, not closed")
    #expect(halfClosed.lines.count == 1)
    // The other reads: the uid falls back and the held `get` is answered.
    let deadline = monotonicSeconds() + 30
    while !halfClosed.ended && monotonicSeconds() < deadline {
      harness.server.turn(timeoutMilliseconds: 5)
      lister.readAll()
      halfClosed.readAll()
    }
    #expect(halfClosed.ended)
    #expect(halfClosed.answered(inOrder: 1...2))
  }

  /// Administrators are exempt, as from MaxConnectionsPerUser.
  @Test func anAdministratorsConnectionsAreNotHeld() throws {
    let harness = try LoopHarness(daemonConf: Self.daemonConf, switches: Self.switches)
    defer { harness.stop() }
    let clients = try accepted(4, by: harness)
    defer { for client in clients { close(client.fd) } }
    #expect(harness.server.connections.values.allSatisfy { $0.caller.isAdmin }, "root")
    for client in clients { client.sendAll(Self.list) }
    turn(harness) { Self.holdingPastTheMark($0) == clients.count }
    #expect(Self.holdingPastTheMark(harness) == clients.count)
  }

  static func holdingPastTheMark(_ harness: LoopHarness) -> Int {
    holdingPastTheMark(harness.server)
  }

  static func holdingPastTheMark(_ server: Server) -> Int {
    server.connections.values.count { $0.unsentCount > server.limits.highWater }
  }

  static func unsentPastTheMark(_ server: Server) -> Int {
    server.connections.values.lazy.map(\.unsentCount).filter { $0 > server.limits.highWater }
      .reduce(0, +)
  }

  static func objects(in line: String) -> Int {
    line.split(separator: #""key":"s"#, omittingEmptySubsequences: false).count - 1
  }

  /// `count` clients, once the loop has accepted them.
  private func accepted(_ count: Int, by harness: LoopHarness) throws -> [TestClient] {
    let clients = try (0..<count).map { _ in try TestClient(harness) }
    turn(harness) { $0.connections.count == count }
    return clients
  }

  /// Turns the loop until `done` (or 30 s: a stall fails the test, it does not hang it).
  private func turn(_ harness: LoopHarness, until done: (Server) -> Bool) {
    let deadline = monotonicSeconds() + 30
    while !done(harness.server) && monotonicSeconds() < deadline {
      harness.server.turn(timeoutMilliseconds: 5)
    }
  }
}

extension TestClient {
  /// Sends all of `bytes` (a few request lines: the socket takes them at once).
  func sendAll(_ bytes: [UInt8]) {
    let n = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    precondition(n == bytes.count, "the socket took the request")
  }
}
