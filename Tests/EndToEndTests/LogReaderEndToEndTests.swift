import Glibc
import SwitchProtocol
import SwitchTestSupport
import Testing

/// Issue 11, item 3: `history` and `watch since` are read by the log reader
/// thread, not the loop. What a client sees must not change: a history
/// answer keeps its place among pipelined requests and shows the client's
/// own writes; a replay goes live with nothing missed and nothing twice,
/// however the writes race it.
@Suite struct LogReaderEndToEndTests {
  static func request(_ id: Int, _ method: String, _ params: String) -> String {
    #"{"jsonrpc":"2.0","id":\#(id),"method":"\#(method)","params":\#(params)}"# + "\n"
  }

  @Test func historyKeepsItsPlaceAndShowsTheClientsOwnWrites() throws {
    let daemon = try DaemonFixture()
    let client = try daemon.client()
    let wifi = #"{"key":"wifi"}"#
    let history = #"{"key":"wifi","limit":1}"#
    try client.send(
      raw: Self.request(1, "toggle", wifi) + Self.request(2, "history", history)
        + Self.request(3, "get", wifi) + Self.request(4, "toggle", wifi)
        + Self.request(5, "history", history) + Self.request(6, "history", #"{"limit":10}"#))
    var answers: [JSONValue] = []
    for _ in 1...6 { answers.append(try client.readJSON()) }
    #expect(answers.map { $0["id"]?.int64Value } == [1, 2, 3, 4, 5, 6])
    let first = answers[0]["result"]?["switch"]?["revision"]?.int64Value
    let second = answers[3]["result"]?["switch"]?["revision"]?.int64Value
    #expect(first != nil && second != nil)
    #expect(answers[1]["result"]?["entries"]?.arrayValue?.first?["revision"]?.int64Value == first)
    #expect(answers[2]["result"]?["revision"]?.int64Value == first)
    #expect(answers[4]["result"]?["entries"]?.arrayValue?.first?["revision"]?.int64Value == second)
    #expect(answers[5]["result"]?["entries"]?.arrayValue?.count == 2)
  }

  /// Each of switchd's threads says what it is (`top -H`,
  /// /proc/PID/task/TID/comm): the loop keeps the program's name.
  @Test func theThreadsAreNamed() throws {
    let daemon = try DaemonFixture()
    // Answered by the reader: its thread is up.
    _ = try daemon.client().result("history", #"{"limit":1}"#)
    var names: [String] = []
    let tasks = "/proc/\(daemon.pid)/task"
    for tid in try directoryEntries(tasks) {
      guard let comm = try? readWholeFile("\(tasks)/\(tid)/comm") else { continue }
      names.append(String(comm.prefix { $0 != "\n" }))
    }
    for name in ["switchd", "writer", "log reader", "config reader"] {
      #expect(names.contains(name), "\(name) among \(names.sorted())")
    }
  }

  /// A `watch since 0` replays a long log while another client's toggles
  /// commit: the events are every revision once, in order, into the live ones.
  @Test func aReplayRacingWritesGoesLiveWithoutGapsOrRepeats() throws {
    // The default MaxQueuedBytes: a smaller one would disconnect the watcher
    // once live, as this test reads it only between its writes.
    let daemon = try DaemonFixture()
    let toggle = #"{"key":"wifi"}"#
    let setup = try PipeliningClient(daemon.socketPath)
    let logged = 2000
    try setup.write(Array((1...logged).map { Self.request($0, "toggle", toggle) }.joined().utf8))
    let done = setup.read { $0.ids.count >= logged }
    try #require(done.ids.count == logged, "setup: \(done.summary)")

    var revision = logged
    for round in 0..<3 {
      let watcher = try PipeliningClient(daemon.socketPath)
      let writer = try PipeliningClient(daemon.socketPath)
      // Toggles keep committing while the replay is read, a few at a time.
      let batches = 30
      let racing = batches * 10
      try watcher.write(Array(Self.request(0, "watch", #"{"since":0}"#).utf8))
      for batch in 0..<batches {
        let ids = (batch * 10 + 1)...(batch * 10 + 10)
        try writer.write(Array(ids.map { Self.request($0, "toggle", toggle) }.joined().utf8))
        watcher.readSome(waitingUpTo: 1)
        writer.readSome(waitingUpTo: 0)
      }
      revision += racing
      let final = Int64(revision)
      let seen = watcher.read { $0.revisions.last == final }
      let whole = seen.revisions.elementsEqual(1...final)
      #expect(whole, "round \(round): \(seen.summary), up to \(seen.revisions.last ?? 0)")
      let answered = writer.read { $0.ids.count >= racing }
      #expect(answered.ids.count == racing, "round \(round): \(answered.summary)")
    }
  }

  /// The reader's read-only connection closes before the writer's, so the
  /// writer's close is SQLite's last: it checkpoints and removes the WAL
  /// (with the reader still open, the WAL stays).
  @Test func aStopAfterLogReadsLeavesNoWriteAheadLog() throws {
    let daemon = try DaemonFixture()
    let client = try daemon.client()
    _ = try client.result("toggle", #"{"key":"wifi"}"#)
    _ = try client.result("history", #"{"limit":10}"#)
    _ = try client.result("watch", #"{"since":0}"#)
    _ = try client.nextEvent()
    #expect(access(daemon.databasePath + "-wal", F_OK) == 0, "the WAL exists while serving")
    #expect(daemon.stop() == 0)
    #expect(access(daemon.databasePath + "-wal", F_OK) != 0, "the WAL is gone after the stop")
  }
}
