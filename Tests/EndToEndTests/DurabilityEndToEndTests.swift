import Glibc
import SwitchProtocol
import SwitchSystem
import SwitchTestSupport
import Synchronization
import Testing

/// Issue 4 from the outside: nothing acknowledged is lost, nothing is seen
/// twice — across SIGKILL, SIGTERM, restarts, reconnects and pruning.
@Suite struct DurabilityEndToEndTests {
  // MARK: Crash storm

  /// Eight clients write continuously while a watcher records the events;
  /// the daemon is killed with SIGKILL at a random point, restarted, and the
  /// storm goes on, for four rounds. Then every acknowledged answer must be in
  /// `history` as answered, the log gap-free and in agreement with the state,
  /// every event seen before a crash must be in the log (so none was sent for
  /// an uncommitted change), a resumed watch must replay the log exactly, and
  /// SQLite must find the file sound.
  @Test func everyAcknowledgedWriteSurvivesRepeatedSIGKILLMidStorm() throws {
    let daemon = try DaemonFixture(switches: DurabilityStorm.switches)
    var acks: [[DurabilityStorm.Ack]] = []  // per client and round, in the order answered
    var seen: [JSONValue] = []  // the watcher's events over all rounds, as received
    var unacknowledged = 0
    for round in 1...4 {
      let target = Int.random(in: 200...500)
      let progress = DurabilityStorm.Progress()
      let socketPath = daemon.socketPath
      // Round 1 watches from the start, before anyone writes. Later rounds
      // resume with `since` a little behind the last event seen (so the
      // replay repeats some, which must match), after the storm has begun
      // (so the replay and live events meet under load).
      let since = round == 1 ? nil : max(0, Int64(seen.count) - Int64.random(in: 0...20))
      // Each client and the watcher on a thread of its own: their socket I/O
      // blocks, and must not hold the threads of Swift's cooperative pool.
      var threads: [TestThread<DurabilityStorm.Result>] = []
      func startWatcher() {
        threads.append(
          TestThread { .watcher(DurabilityStorm.watch(socketPath, since: since, progress)) })
        _ = pollUntil(seconds: 30) { progress.watching.load(ordering: .acquiring) }
      }
      if since == nil { startWatcher() }
      for _ in 0..<DurabilityStorm.clients {
        threads.append(TestThread { .client(DurabilityStorm.write(socketPath, progress)) })
      }
      if since != nil {
        _ = pollUntil(seconds: 60) { progress.acks.load(ordering: .relaxed) >= 20 }
        startWatcher()
      }
      _ = pollUntil(seconds: 60) { progress.acks.load(ordering: .relaxed) >= target }
      daemon.crash()
      let results = threads.map { $0.join() }
      #expect(progress.acks.load(ordering: .relaxed) >= target, "round \(round): storm too slow")
      for result in results {
        switch result {
        case .client(let report):
          acks.append(report.acks)
          unacknowledged += report.unacknowledged
          for problem in report.problems { Issue.record("round \(round): \(problem)") }
        case .watcher(let report):
          for problem in report.problems { Issue.record("round \(round): watcher: \(problem)") }
          // Within a round the stream is gap-free from where it resumed.
          let start = (since ?? report.answerRevision ?? 0) + 1
          let received = Durability.revisions(report.events)
          let problem = Durability.consecutiveRunProblem(received, from: start)
          #expect(problem == nil, "round \(round): \(problem ?? "")")
          // Replayed ones are what was seen before; the rest extend `seen`
          // (which therefore stays `1...seen.count`).
          for event in report.events {
            let revision = Int(event["revision"]?.int64Value ?? 0)
            if revision >= 1 && revision <= seen.count {
              #expect(
                Durability.entryOf(event: event) == Durability.entryOf(event: seen[revision - 1]),
                "round \(round): replayed \(event.jsonText)")
            } else if revision == seen.count + 1 {
              seen.append(event)
            }
          }
        }
      }
      try daemon.start()
      // Acknowledged before the crash, so committed: the restarted revision covers them all.
      let restarted = try daemon.client().result("status")["revision"]?.int64Value ?? -1
      let newestAck = acks.joined().filter(\.changed).map(\.revision).max() ?? 0
      #expect(restarted >= newestAck, "round \(round): revision went back to \(restarted)")
    }

    let client = try daemon.client()
    let current = try client.result("status")["revision"]?.int64Value ?? -1
    let log = try Durability.fullHistory(client)
    var entries: [Int64: JSONValue] = [:]
    for entry in log { entries[entry["revision"]?.int64Value ?? -1] = entry }

    // The log: exactly 1...current.
    #expect(current > 0)
    #expect(
      Durability.consecutiveRunProblem(Durability.revisions(log), from: 1, to: current) == nil)

    // Every acknowledged answer is in the log as answered.
    let allAcks = Array(acks.joined())
    #expect(allAcks.count >= 4 * 200)
    var lost: [String] = []
    for ack in allAcks {
      if ack.revision == 0 {
        // A no-op set on a switch that never changed: its default, off.
        if ack.changed || ack.checked { lost.append("\(ack) (revision 0)") }
        continue
      }
      let entry = entries[ack.revision]
      if entry?["key"]?.stringValue != ack.key
        || entry?["state"]?["checked"]?.boolValue != ack.checked
        || (ack.changed && entry?["cause"]?.stringValue != ack.method)
      {
        lost.append("\(ack) but the log has \(entry?.jsonText ?? "nothing")")
      }
    }
    #expect(
      lost.isEmpty,
      "\(lost.count) acknowledged answers disagree with the log: \(lost.prefix(5))")
    let changed = allAcks.filter(\.changed).map(\.revision)
    #expect(Set(changed).count == changed.count, "two acknowledged changes share a revision")
    // A client's pipelined writes commit in the order it sent them.
    for clientAcks in acks {
      let order = clientAcks.filter(\.changed).map(\.revision)
      #expect(order == order.sorted() && Set(order).count == order.count)
    }

    // The state agrees with the newest log entry of each switch.
    for key in DurabilityStorm.keys {
      let now = try client.result("get", "{\"key\":\"\(key)\"}")
      let newest = log.last { $0["key"]?.stringValue == key }
      #expect(now["revision"]?.int64Value == (newest?["revision"]?.int64Value ?? 0), "\(key)")
      #expect(now["checked"]?.boolValue == (newest?["state"]?["checked"]?.boolValue ?? false))
    }

    // What the watcher saw before each crash: gap-free over the rounds (it
    // resumed with `since`), never twice, and exactly as committed.
    let seenRevisions = Durability.revisions(seen)
    #expect(seen.count > 100)
    #expect(Durability.consecutiveRunProblem(seenRevisions, from: 1) == nil)
    let unlogged = seen.filter {
      entries[$0["revision"]?.int64Value ?? -1] != Durability.entryOf(event: $0)
    }
    #expect(
      unlogged.isEmpty,
      "\(unlogged.count) events are not in the log as sent: \(unlogged.prefix(3).map(\.jsonText))")

    // A watch since 0 replays the whole log, in order, once, then goes live.
    let replay = try DurabilityStorm.replay(daemon.socketPath, since: 0, expecting: current)
    #expect(
      Durability.consecutiveRunProblem(Durability.revisions(replay), from: 1, to: current) == nil)
    let misreplayed = replay.filter {
      entries[$0["revision"]?.int64Value ?? -1] != Durability.entryOf(event: $0)
    }
    #expect(misreplayed.isEmpty, "\(misreplayed.count) replayed events differ from the log")

    #expect(daemon.stop() == 0)
    #expect(Durability.Python.integrityCheck(daemon.databasePath) == "ok")
    _ = unacknowledged  // unacknowledged writes may or may not have committed
  }

  // MARK: Resumable watch

  enum Restart: String, CaseIterable, Sendable {
    case graceful
    case sigkill
  }

  /// A watcher that reconnects with `since` = the last revision it saw gets
  /// exactly the changes it missed (before and after the restart), then live
  /// ones: none missing, none twice.
  @Test(arguments: Restart.allCases)
  func aResumedWatchSeesExactlyTheMissedChangesThenLiveOnes(_ restart: Restart) throws {
    let daemon = try DaemonFixture()
    do {
      let watcher = try daemon.client()
      _ = try watcher.result("watch")
      let writer = try daemon.client()
      for key in ["wifi", "bluetooth", "wifi"] {
        _ = try writer.result("toggle", "{\"key\":\"\(key)\"}")
      }
      for expected in Int64(1)...3 {
        #expect(try watcher.nextEvent()["revision"]?.int64Value == expected)
      }
      // Two more the watcher never reads: it goes away with them unseen.
      _ = try writer.result("toggle", #"{"key":"notifications.chat"}"#)
      _ = try writer.result("set", #"{"key":"email.marketing","checked":false}"#)
    }
    switch restart {
    case .graceful: #expect(daemon.stop() == 0)
    case .sigkill: daemon.crash()
    }
    try daemon.start()
    let writer = try daemon.client()
    _ = try writer.result("toggle", #"{"key":"wifi"}"#)  // 6, while nobody watches
    _ = try writer.result("toggle", #"{"key":"bluetooth"}"#)  // 7

    let watcher = try daemon.client()
    let answer = try watcher.result("watch", #"{"since":3}"#)
    #expect(answer["revision"]?.int64Value == 7)
    #expect(answer["switches"] == nil)
    let onlyWifi = try daemon.client()
    _ = try onlyWifi.result("watch", #"{"keys":["wifi"],"since":3}"#)
    _ = try writer.result("toggle", #"{"key":"wifi"}"#)  // 8, live

    let log = try Durability.fullHistory(writer)
    #expect(Durability.revisions(log) == Array(1...8))
    for expected in Int64(4)...8 {
      let event = try watcher.nextEvent()
      #expect(event["revision"]?.int64Value == expected)
      #expect(event["watch"] == answer["watch"])
      #expect(Durability.entryOf(event: event) == log[Int(expected) - 1])
    }
    #expect(try onlyWifi.nextEvent()["revision"]?.int64Value == 6)
    #expect(try onlyWifi.nextEvent()["revision"]?.int64Value == 8)
    // Nothing more is queued: the next thing each reads is its response.
    for client in [watcher, onlyWifi] {
      #expect(try client.result("status")["revision"]?.int64Value == 8)
      #expect(client.notifications.isEmpty)
    }
    // `since` equal to the current revision replays nothing and goes live.
    let fresh = try daemon.client()
    _ = try fresh.result("watch", #"{"since":8}"#)
    _ = try writer.result("toggle", #"{"key":"bluetooth"}"#)
    #expect(try fresh.nextEvent()["revision"]?.int64Value == 9)
  }

  // MARK: Graceful stop

  /// 200 pipelined toggles, then SIGTERM: every write the daemon received is
  /// committed and answered before it exits with status 0, and nothing was
  /// committed without an answer. Waiting for the first answer first proves
  /// the daemon had read all 200 (they fit in one read), so all must be
  /// answered; without waiting, whatever is answered must be exactly what
  /// committed.
  @Test(arguments: [true, false])
  func sigtermFinishesAndAnswersTheWritesItReceived(waitForFirstAnswer: Bool) throws {
    let daemon = try DaemonFixture()
    let client = try daemon.client()
    var text = ""
    for id in 1...200 {
      text += Durability.requestLine(id: Int64(id), "toggle", #"{"key":"wifi"}"#)
    }
    try client.send(raw: text)
    var answers: [JSONValue] = []
    if waitForFirstAnswer { answers.append(try client.readJSON()) }
    daemon.signal(SIGTERM)
    while let line = client.readLine() { answers.append(try JSONParser.parse(line, maxDepth: 64)) }
    #expect(daemon.stop() == 0)
    if waitForFirstAnswer { #expect(answers.count == 200) }
    for (index, answer) in answers.enumerated() {
      let revision = Int64(index + 1)
      #expect(answer["id"]?.int64Value == revision, "\(answer.jsonText)")
      #expect(answer["result"]?["switch"]?["revision"]?.int64Value == revision)
      #expect(answer["result"]?["switch"]?["checked"]?.boolValue == (revision % 2 == 0))
    }
    try daemon.start()
    let after = try daemon.client()
    let answered = Int64(answers.count)
    #expect(try after.result("status")["revision"]?.int64Value == answered)
    let log = try Durability.fullHistory(after)
    #expect(Durability.revisions(log) == Array(stride(from: 1, through: answered, by: 1)))
    for entry in log {
      let revision = entry["revision"]?.int64Value ?? -1
      #expect(entry["state"]?["checked"]?.boolValue == (revision % 2 == 0))
    }
    #expect(daemon.stop() == 0)
  }

  // MARK: Retention

  /// `HistoryRetention=50`: after 500 writes the log keeps the newest 50 (plus
  /// a little slack for pruning in chunks), `since` older than that is
  /// `HistoryCompacted` with `data.oldest`, and `since: oldest - 1` replays
  /// the retained rest exactly, then goes live.
  @Test func historyRetentionBoundsTheLogAndOlderSinceIsCompacted() throws {
    let daemon = try DaemonFixture(daemonConf: "[Daemon]\nAdminGroup=\nHistoryRetention=50\n")
    let client = try daemon.client()
    for chunk in 0..<5 {
      var text = ""
      for i in 1...100 {
        let key = i % 3 == 0 ? "bluetooth" : "wifi"
        text += Durability.requestLine(id: Int64(chunk * 100 + i), "toggle", "{\"key\":\"\(key)\"}")
      }
      try client.send(raw: text)
      for _ in 1...100 { #expect(try client.readJSON()["result"]?["changed"]?.boolValue == true) }
    }
    // Pruning runs after the writes are answered: poll until it is at rest.
    // The writer prunes to 50 once the log holds more than 50 plus a tenth
    // (`Writer.prune`), so at most 55 rows means no prune is still to come
    // and `oldest` stays put for the checks below.
    var log: [JSONValue] = []
    _ = try pollUntil(seconds: 30) {
      log = try Durability.fullHistory(client)
      return log.count <= 55
    }
    #expect((50...55).contains(log.count), "the log holds \(log.count) rows")
    let oldest = log.first?["revision"]?.int64Value ?? 0
    #expect(
      Durability.consecutiveRunProblem(Durability.revisions(log), from: oldest, to: 500) == nil)

    for since in [0, 1, oldest - 2] {
      let error = try client.error("watch", "{\"since\":\(since)}")
      #expect(error["code"]?.int64Value == -32009, "since \(since)")
      #expect(error["data"]?["name"]?.stringValue == "HistoryCompacted")
      #expect(error["data"]?["oldest"]?.int64Value == oldest)
    }
    let watcher = try daemon.client()
    let answer = try watcher.result("watch", "{\"since\":\(oldest - 1)}")
    #expect(answer["revision"]?.int64Value == 500)
    for (offset, entry) in log.enumerated() {
      let event = try watcher.nextEvent()
      #expect(event["revision"]?.int64Value == oldest + Int64(offset))
      #expect(Durability.entryOf(event: event) == entry)
    }
    // 501, live. Only now: with 55 rows kept it makes the writer prune, which
    // must not take rows the replay has yet to send.
    _ = try client.result("toggle", #"{"key":"wifi"}"#)
    #expect(try watcher.nextEvent()["revision"]?.int64Value == 501)
    #expect(try watcher.result("status")["revision"]?.int64Value == 501)
    #expect(watcher.notifications.isEmpty)
  }
}

/// The crash storm's clients and watcher, each on its own connection and
/// its own thread (`TestThread`, not a task: they block in `poll`). Each
/// client pipelines a window of 1–6 writes per round trip, so the daemon
/// always has groups of writes in flight.
enum DurabilityStorm {
  static let clients = 8
  static let keys = ["storm.a", "storm.b", "storm.c", "storm.d", "storm.e", "storm.f"]
  static let switches = keys.map { "[\($0)]\nLabel=DurabilityStorm \($0)\nDefault=off\n" }
    .joined(separator: "\n")

  final class Progress: Sendable {
    let acks = Atomic<Int>(0)
    let watching = Atomic<Bool>(false)
  }

  /// One acknowledged answer: the switch as the daemon said it was after the write.
  struct Ack: Sendable, CustomStringConvertible {
    var method: String
    var key: String
    var revision: Int64
    var checked: Bool
    var changed: Bool

    var description: String {
      "\(method) \(key) -> revision \(revision), checked \(checked), changed \(changed)"
    }
  }

  struct ClientReport: Sendable {
    var acks: [Ack] = []
    var unacknowledged = 0
    var problems: [String] = []
  }

  struct WatcherReport: Sendable {
    var answerRevision: Int64?
    var events: [JSONValue] = []
    var problems: [String] = []
  }

  enum Result: Sendable {
    case client(ClientReport)
    case watcher(WatcherReport)
  }

  /// Writes random toggles and sets until the daemon goes away; a write
  /// whose answer did not arrive counts as unacknowledged.
  static func write(_ socketPath: String, _ progress: Progress) -> ClientReport {
    var report = ClientReport()
    guard let socket = try? Durability.LineSocket(socketPath: socketPath) else {
      report.problems.append("a storm client could not connect")
      return report
    }
    var nextID: Int64 = 1
    let deadline = monotonicSeconds() + 90
    while monotonicSeconds() < deadline {
      var window: [(id: Int64, method: String, key: String)] = []
      var text = ""
      for _ in 0..<Int.random(in: 1...6) {
        let key = keys.randomElement()!
        let method = Bool.random() ? "toggle" : "set"
        let params =
          method == "toggle"
          ? "{\"key\":\"\(key)\"}" : "{\"key\":\"\(key)\",\"checked\":\(Bool.random())}"
        text += Durability.requestLine(id: nextID, method, params)
        window.append((nextID, method, key))
        nextID += 1
      }
      guard socket.send(text) else {
        report.unacknowledged += window.count
        return report
      }
      for (index, sent) in window.enumerated() {
        switch socket.readLine(timeout: 30) {
        case .line(let line):
          guard let answer = try? JSONParser.parse(line, maxDepth: 64),
            answer["id"]?.int64Value == sent.id, let result = answer["result"],
            let revision = result["switch"]?["revision"]?.int64Value,
            let checked = result["switch"]?["checked"]?.boolValue,
            let changed = result["changed"]?.boolValue,
            result["switch"]?["key"]?.stringValue == sent.key
          else {
            report.problems.append("\(sent.method) \(sent.key) got \(line)")
            continue
          }
          report.acks.append(
            Ack(
              method: sent.method, key: sent.key, revision: revision, checked: checked,
              changed: changed))
          progress.acks.add(1, ordering: .relaxed)
        case .closed:
          report.unacknowledged += window.count - index
          return report
        case .timedOut:
          report.problems.append("no answer within 30 s")
          report.unacknowledged += window.count - index
          return report
        }
      }
    }
    report.problems.append("a storm client's connection outlived its deadline")
    return report
  }

  /// Watches every switch (from `since` when given) and records each event
  /// until the daemon goes away.
  static func watch(_ socketPath: String, since: Int64?, _ progress: Progress) -> WatcherReport {
    var report = WatcherReport()
    defer { progress.watching.store(true, ordering: .releasing) }
    guard let socket = try? Durability.LineSocket(socketPath: socketPath) else {
      report.problems.append("could not connect")
      return report
    }
    let params = since.map { "{\"since\":\($0)}" } ?? "{}"
    guard socket.send(Durability.requestLine(id: 1, "watch", params)) else {
      report.problems.append("could not send watch")
      return report
    }
    let deadline = monotonicSeconds() + 90
    while monotonicSeconds() < deadline {
      switch socket.readLine(timeout: 1) {
      case .line(let line):
        guard let message = try? JSONParser.parse(line, maxDepth: 64) else {
          report.problems.append("unparsable line \(line)")
          continue
        }
        if message["method"]?.stringValue == "changed", let params = message["params"] {
          report.events.append(params)
        } else if let result = message["result"] {
          report.answerRevision = result["revision"]?.int64Value
          progress.watching.store(true, ordering: .releasing)
        } else {
          report.problems.append("unexpected line \(line)")
        }
      case .timedOut:
        continue
      case .closed:
        return report
      }
    }
    report.problems.append("the watch outlived its deadline")
    return report
  }

  /// `watch` with `since`, read until `expecting` events arrived; then a
  /// `status` on the same connection proves nothing else was queued.
  static func replay(_ socketPath: String, since: Int64, expecting last: Int64) throws
    -> [JSONValue]
  {
    let socket = try Durability.LineSocket(socketPath: socketPath)
    guard socket.send(Durability.requestLine(id: 1, "watch", "{\"since\":\(since)}")) else {
      throw FixtureError("could not send watch")
    }
    var events: [JSONValue] = []
    var answered = false
    var statusSent = false
    while true {
      if answered && !statusSent && (events.last?["revision"]?.int64Value ?? since) >= last {
        guard socket.send(Durability.requestLine(id: 2, "status")) else {
          throw FixtureError("send")
        }
        statusSent = true
      }
      guard case .line(let line) = socket.readLine(timeout: 20) else {
        throw FixtureError("the replay stopped after \(events.count) events")
      }
      let message = try JSONParser.parse(line, maxDepth: 64)
      if message["method"]?.stringValue == "changed" {
        events.append(message["params"] ?? .null)
      } else if message["id"]?.int64Value == 1 {
        guard message["result"] != nil else { throw FixtureError("watch failed: \(line)") }
        answered = true
      } else if message["id"]?.int64Value == 2 {
        return events
      } else {
        throw FixtureError("unexpected line \(line)")
      }
    }
  }
}
