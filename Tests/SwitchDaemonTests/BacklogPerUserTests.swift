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

  @Test func aClosedConnectionIsForgottenAndALimitChangedHandsEveryoneBack() {
    var backlog = BacklogPerUser(limit: 100)
    _ = backlog.changed(uid: 1000, by: 150)
    _ = backlog.changed(uid: 1001, by: 150)
    var may = backlog.mayTake(uid: 1000, connection: 1) || backlog.mayTake(uid: 1000, connection: 2)
    may = may || backlog.mayTake(uid: 1001, connection: 3)
    #expect(!may)
    backlog.forget(uid: 1000, connection: 2)
    #expect(backlog.held(uid: 1000) == 1)
    // The limit raised past one uid's count: it is no longer over, and
    // every connection held is handed back (the other is held again when pumped).
    backlog.limit = 200
    _ = backlog.changed(uid: 1001, by: 100)
    let handedBack = backlog.reconsider()
    #expect(Set(handedBack) == [1, 3])
    #expect(backlog.over == [1001])
    #expect(backlog.held(uid: 1000) == 0 && backlog.held(uid: 1001) == 0)
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
    let clients = try accepted(4, by: harness, administrators: false)
    defer { for client in clients { close(client.fd) } }
    for client in clients { client.sendAll(Self.list) }
    // Until every connection has its answer queued or is held.
    turn(harness) {
      Self.holdingPastTheMark($0) + $0.backlogPerUser.held(uid: getuid()) == clients.count
    }
    #expect(Self.holdingPastTheMark(harness) == 1, "one answer queued; three requests held")
    // Then all read: the unsent bytes past the mark never pass the
    // backlog by more than the one answer that took them over it.
    // Bounded by a stall (30 s with no byte), not by the whole: four lists
    // of 2,000 switches took longer than 30 s under ASan on a loaded machine.
    var most = 0
    var received = 0
    var progressed = monotonicSeconds()
    while clients.contains(where: { $0.lines.isEmpty }) && monotonicSeconds() - progressed < 30 {
      harness.server.turn(timeoutMilliseconds: 5)
      most = max(most, Self.unsentPastTheMark(harness.server))
      for client in clients { client.readAll() }
      let now = clients.reduce(0) { $0 + $1.received }
      if now > received { (received, progressed) = (now, monotonicSeconds()) }
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
    let clients = try accepted(2, by: harness, administrators: false)
    defer { for client in clients { close(client.fd) } }
    let (lister, halfClosed) = (clients[0], clients[1])
    // Its socket takes a few KiB: a list of 111 switches (~65 KB) leaves
    // it past the mark and under the uid's limit, its `get` not taken.
    let second = Self.connections(harness)[1]
    Self.setSendBuffer(second, 4096)
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

  /// A client that has its answer, and then closes its side and reads to
  /// the end, gets its end while another connection of its uid holds the
  /// uid over: a held connection still reads when nothing it sent waits.
  @Test func aClientWithItsAnswersGetsItsEndWhileItsUidIsHeld() throws {
    let harness = try LoopHarness(daemonConf: Self.daemonConf, switches: Self.switches)
    defer { harness.stop() }
    let clients = try accepted(2, by: harness, administrators: false)
    defer { for client in clients { close(client.fd) } }
    let (other, done) = (clients[0], clients[1])
    let get = #"{"jsonrpc":"2.0","id":1,"method":"get","params":{"key":"s0"}}"# + "\n"
    done.drive(input: Array(get.utf8)) { $0.lines.count >= 1 }
    other.sendAll(Self.list)
    turn(harness) { !$0.backlogPerUser.over.isEmpty }
    shutdown(done.fd, Int32(SHUT_WR))
    done.drive(input: []) { $0.ended }
    #expect(done.ended, "its end, with the other's list still unread")
    #expect(done.answered(inOrder: 1...1))
    #expect(!harness.server.backlogPerUser.over.isEmpty)
  }

  /// A reload decides again who is held: here it makes the connections'
  /// uid an administrator again (root), and the one held goes on.
  @Test func aReloadHandsBackTheConnectionsItExempts() throws {
    let harness = try LoopHarness(daemonConf: Self.daemonConf, switches: Self.switches)
    defer { harness.stop() }
    let clients = try accepted(3, by: harness)
    defer { for client in clients { close(client.fd) } }
    let connections = Self.connections(harness)
    for connection in connections.prefix(2) { connection.caller.isAdmin = false }
    clients[0].sendAll(Self.list)
    clients[1].sendAll(Self.list)
    turn(harness) {
      Self.holdingPastTheMark($0) == 1 && $0.backlogPerUser.held(uid: getuid()) == 1
    }
    let reload = #"{"jsonrpc":"2.0","id":7,"method":"reload","params":{}}"# + "\n"
    clients[2].drive(input: Array(reload.utf8)) { $0.lines.count >= 1 }
    #expect(clients[2].answered(inOrder: 7...7))
    turn(harness) { Self.holdingPastTheMark($0) == 2 }
    #expect(Self.holdingPastTheMark(harness) == 2, "handed back by the reload")
    #expect(harness.server.backlogPerUser.over.isEmpty)
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
    #expect(
      harness.server.backlogPerUser.count(uid: getuid()) == 0, "an administrator's is not counted")
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

  /// `count` clients, once the loop has accepted them (as administrators
  /// or not), each in the order
  /// of its connection's id. Their connections' send buffers are 64 KiB
  /// (128 KiB as Linux counts): a list of every switch is then far more
  /// than a socket takes, whatever the machine's default.
  private func accepted(
    _ count: Int, by harness: LoopHarness, administrators: Bool = true
  ) throws -> [TestClient] {
    let clients = try (0..<count).map { _ in try TestClient(harness) }
    turn(harness) { $0.connections.count == count }
    for connection in harness.server.connections.values {
      Self.setSendBuffer(connection, 65_536)
      // Root is an administrator; the bound holds the others.
      if !administrators { connection.caller.isAdmin = false }
    }
    return clients
  }

  static func setSendBuffer(_ connection: Connection, _ bytes: Int32) {
    var size = bytes
    setsockopt(connection.fd, SOL_SOCKET, SO_SNDBUF, &size, socklen_t(MemoryLayout<Int32>.size))
  }

  /// The loop's connections, oldest first (the order `accepted` returns their clients in).
  static func connections(_ harness: LoopHarness) -> [Connection] {
    harness.server.connections.values.sorted { $0.id < $1.id }
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
