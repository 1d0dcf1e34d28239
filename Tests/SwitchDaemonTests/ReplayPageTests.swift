import Glibc
import SwitchCore
import SwitchProtocol
import SwitchSystem
import SwitchTestSupport
import Testing

@testable import SwitchDaemon

/// A `watch since` replay page is written by the log reader for the
/// caller's rights as they were when it was asked for (they decide which
/// actors it shows). A page that arrives after a reload changed them is
/// not sent: it is asked for again, and the replay still delivers every
/// event once, in order.
@Suite struct ReplayPageTests {
  static let toggles = 600

  /// A daemon with `toggles` changes in its log, and a watcher whose
  /// `watch since 0` the loop has taken but whose answer it has not read:
  /// with a small queue bound the replay is still under way.
  struct Replaying {
    let harness: LoopHarness
    let watcher: TestClient
    let id: String
    let watch: Watch
    let connection: Connection
    let cursor: Int64

    init() throws {
      harness = try LoopHarness(
        daemonConf: "[Daemon]\nAdminGroup=\nMaxQueuedBytes=4096\nLogLevel=warning\n")
      let writer = try TestClient(harness)
      defer { close(writer.fd) }
      writer.drive(
        input: FlowControlTests.lines(ReplayPageTests.toggles) {
          #"{"jsonrpc":"2.0","id":\#($0),"method":"toggle","params":{"key":"wifi"}}"#
        }
      ) { $0.lines.count >= ReplayPageTests.toggles }
      watcher = try TestClient(harness)
      let request = Array(
        (#"{"jsonrpc":"2.0","id":1,"method":"watch","params":{"since":0}}"# + "\n").utf8)
      guard send(watcher.fd, request, request.count, 0) == request.count else {
        throw FixtureError("the watch was not sent")
      }
      let deadline = monotonicSeconds() + 30
      while harness.server.hub.watches.isEmpty && monotonicSeconds() < deadline {
        harness.server.turn(timeoutMilliseconds: 5)
      }
      guard let (id, watch) = harness.server.hub.watches.first,
        let connection = harness.server.connections[watch.connection],
        let cursor = watch.replayCursor
      else { throw FixtureError("no replaying watch") }
      (self.id, self.watch, self.connection, self.cursor) = (id, watch, connection, cursor)
    }

    func stop() {
      close(watcher.fd)
      harness.stop()
    }
  }

  @Test func aPageWrittenForOtherRightsIsAskedForAgain() throws {
    let replay = try Replaying()
    defer { replay.stop() }
    let server = replay.harness.server
    // A page written for someone else's rights, for the watch's cursor.
    let stranger = Caller.user(54_321, access: server.access)
    #expect(stranger != replay.connection.caller)
    let page = ReplayPage(
      first: replay.cursor + 1, last: replay.cursor + 1,
      events: Array("not for this caller\n".utf8), viewer: stranger)
    let queued = replay.connection.unsentCount
    server.continueReplay(replay.id, on: replay.connection, after: replay.cursor, .success(page))
    #expect(replay.connection.unsentCount == queued, "nothing of the page was queued")
    #expect(replay.watch.replayCursor == replay.cursor, "the cursor did not move")
    #expect(!replay.watch.replayReading, "the page is asked for again")

    // The answer, then one event per toggle, each once and in order.
    replay.watcher.drive(input: []) { $0.lines.count >= Self.toggles + 1 }
    #expect(!replay.watcher.lines.contains { $0.contains("not for this caller") })
    let revisions = replay.watcher.lines.dropFirst().compactMap {
      (try? JSONParser.parse($0, maxDepth: 64))?["params"]?["revision"]?.int64Value
    }
    let everyEventOnce = revisions.elementsEqual(1...Int64(Self.toggles))
    #expect(everyEventOnce, "every event once, in order")
  }

  /// A page the log reader could not read closes the watcher's connection
  /// (it resumes with `since`), saying why.
  @Test func aPageThatCouldNotBeReadClosesTheConnection() throws {
    let replay = try Replaying()
    defer { replay.stop() }
    replay.harness.server.continueReplay(
      replay.id, on: replay.connection, after: replay.cursor,
      .failure(.damaged(path: "switches.db", detail: "a test")))
    #expect(replay.connection.isClosed)
  }
}
