import Glibc
import SwitchCore
import SwitchSystem
import Testing

@testable import SwitchDaemon

/// One user's writes at the writer are bounded over all its connections, so
/// that a flood cannot fill every group commit another user's write waits for.
@Suite struct WritesPerUserTests {
  @Test func aUidAtTheLimitWaitsAndIsResumedWhenAWriteIsAnswered() {
    var shares = WritesPerUser(limit: 2)
    var may = shares.mayHandOver(uid: 1000, connection: 1)
    #expect(may)
    shares.handedOver(uid: 1000)
    shares.handedOver(uid: 1000)
    may =
      shares.mayHandOver(uid: 1000, connection: 1) || shares.mayHandOver(uid: 1000, connection: 2)
    #expect(!may)
    may = shares.mayHandOver(uid: 1001, connection: 3)
    #expect(may)  // another user is not held
    var resumed = shares.finished(uid: 1000)
    #expect(resumed == [1, 2])
    #expect(shares.count(uid: 1000) == 1)
    resumed = shares.finished(uid: 1000)
    #expect(resumed.isEmpty)  // nobody waits any more
    shares.handedOver(uid: 1000)
    shares.handedOver(uid: 1000)
    may = shares.mayHandOver(uid: 1000, connection: 4)
    #expect(!may)
    resumed = shares.finished(uid: 1000, count: 2)  // a closed connection's writes
    #expect(resumed == [4])
    #expect(shares.count(uid: 1000) == 0)
  }

  /// Two connections of one non-administrator pipeline 20 toggles each: at
  /// no turn does that uid have more than the limit at the writer, and
  /// every toggle is still answered, in order on each connection.
  @Test func theLoopHandsOverAtMostTheLimitOfOneUidAndResumesItsConnections() throws {
    #expect(try Self.mostInFlight(connections: 2, administrator: false, limit: 3) == 3)
  }

  /// An administrator's writes are exempt and take nothing from its uid's
  /// share, so a plain connection of the same uid is never held by them.
  @Test func anAdministratorsWritesDoNotCountAgainstItsUid() throws {
    #expect(try Self.mostInFlight(connections: 1, administrator: true, limit: 3) == 0)
  }

  /// Runs a loop in this process with `connections` peers of one uid, each
  /// pipelining 20 toggles, and returns the most writes that uid ever had
  /// counted at the writer; every toggle must be answered, in order.
  static func mostInFlight(connections count: Int, administrator: Bool, limit: Int) throws -> Int {
    let harness = try LoopHarness(daemonConf: "[Daemon]\nAdminGroup=\nLogLevel=warning\n")
    defer { harness.stop() }
    harness.server.writesPerUser = WritesPerUser(limit: limit)
    let peers = try (0..<count).map { _ in try TestClient(harness) }
    defer { for peer in peers { close(peer.fd) } }
    let deadline = monotonicSeconds() + 30
    while harness.server.connections.count < count && monotonicSeconds() < deadline {
      harness.server.turn(timeoutMilliseconds: 5)
    }
    // The peers are this process's uid; their rights are set here.
    for connection in harness.server.connections.values {
      connection.caller = Caller(
        actor: .peer(uid: 1000, gid: 1000, pid: 1), isAdmin: administrator, mayWrite: true)
    }
    let toggles = 20
    let input = Array(
      (1...toggles).map {
        #"{"jsonrpc":"2.0","id":\#($0),"method":"toggle","params":{"key":"wifi"}}"# + "\n"
      }.joined().utf8)
    for peer in peers {
      #expect(input.withUnsafeBytes { send(peer.fd, $0.baseAddress, $0.count, 0) } == input.count)
    }
    var most = 0
    while peers.contains(where: { $0.lines.count < toggles }) && monotonicSeconds() < deadline {
      harness.server.turn(timeoutMilliseconds: 5)
      most = max(most, harness.server.writesPerUser.count(uid: getuid()))
      for peer in peers { peer.readAll() }
    }
    for peer in peers { #expect(peer.answered(inOrder: 1...toggles)) }
    return most
  }
}
