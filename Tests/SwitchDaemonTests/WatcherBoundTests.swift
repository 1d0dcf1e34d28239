import Glibc
import SwitchCore
import SwitchProtocol
import SwitchSystem
import Testing

@testable import SwitchDaemon

/// `MaxQueuedBytes` for a watcher: it bounds what the watcher has not read
/// of earlier publishes, not one group commit's own events (an audit: 2,000
/// toggles committed in one group cut off every watcher, however fast it
/// read). The loop is handed the committed batches directly.
@Suite struct WatcherBoundTests {
  /// `count` toggles of `wifi` from revision `first`, as the writer hands them over.
  static func toggles(from first: Int64, count: Int) -> [Change] {
    (first..<first + Int64(count)).map { revision in
      Change(
        revision: revision, time: 1_790_000_000_000 + revision, key: "wifi", cause: .toggle,
        actor: .peer(uid: 1000, gid: 1000, pid: 4321),
        state: SwitchState(checked: revision % 2 == 0),
        previous: SwitchState(checked: revision % 2 != 0))
    }
  }

  static func harness(maxQueuedBytes: Int) throws -> LoopHarness {
    try LoopHarness(
      daemonConf: "[Daemon]\nAdminGroup=\nMaxQueuedBytes=\(maxQueuedBytes)\nLogLevel=error\n")
  }

  static func watcher(_ harness: LoopHarness) throws -> TestClient {
    let watcher = try TestClient(harness)
    let watch = #"{"jsonrpc":"2.0","id":1,"method":"watch","params":{"keys":["wifi"]}}"# + "\n"
    watcher.drive(input: Array(watch.utf8)) { $0.lines.count >= 1 }
    return watcher
  }

  static func revisions(_ watcher: TestClient) -> [Int64] {
    watcher.lines.dropFirst().compactMap {
      (try? JSONParser.parse($0, maxDepth: 64))?["params"]?["revision"]?.int64Value
    }
  }

  /// One batch far past the bound (~0.2 MB, 64 KiB) reaches a watcher
  /// that reads, every event once and in order.
  @Test func aBatchLargerThanTheBoundReachesAWatcherThatReads() throws {
    let harness = try Self.harness(maxQueuedBytes: 65536)
    defer { harness.stop() }
    let watcher = try Self.watcher(harness)
    defer { close(watcher.fd) }
    harness.server.takeCommitted(Self.toggles(from: 1, count: 300))
    watcher.drive(input: []) { $0.lines.count >= 301 }
    #expect(!watcher.ended, "the watcher was cut off")
    #expect(Self.revisions(watcher) == Array(1...300))
  }

  /// A watcher that reads nothing keeps one batch past the bound (beyond
  /// what its socket took) and is cut off at the next publish: what it
  /// has not read of earlier batches passes the bound.
  @Test func aWatcherThatDoesNotReadIsCutOffAtTheNextPublish() throws {
    let harness = try Self.harness(maxQueuedBytes: 262_144)
    defer { harness.stop() }
    let watcher = try Self.watcher(harness)
    defer { close(watcher.fd) }
    // ~0.7 MB: more than a Unix socket's send buffer takes and the bound
    // (256 KiB) left unsent, less than 4 times the bound.
    harness.server.takeCommitted(Self.toggles(from: 1, count: 1000))
    let queued = harness.server.connections.values.map(\.unsentEventBytes).max() ?? 0
    #expect(queued > 262_144, "the socket took the batch past the bound; the test proves nothing")
    #expect(harness.server.connections.count == 1, "cut off for one batch's events")
    harness.server.takeCommitted(Self.toggles(from: 1001, count: 1))
    #expect(harness.server.connections.count == 0, "not cut off once past the bound")
    watcher.drive(input: []) { $0.ended }
    let seen = Self.revisions(watcher)
    #expect(seen.count < 1001 && seen == (0..<seen.count).map { Int64($0) + 1 })
  }

  /// One batch that leaves more than 4 times the bound unsent (4 KiB
  /// here) cuts the watcher off at once: memory stays bounded.
  @Test func aBatchPastTheCeilingCutsOffAWatcherThatDoesNotRead() throws {
    let harness = try Self.harness(maxQueuedBytes: 4096)
    defer { harness.stop() }
    let watcher = try Self.watcher(harness)
    defer { close(watcher.fd) }
    harness.server.takeCommitted(Self.toggles(from: 1, count: 2000))
    #expect(harness.server.connections.count == 0)
  }
}
