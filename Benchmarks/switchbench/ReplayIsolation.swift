import Glibc
import SwitchSystem
import Synchronization

/// Isolation beside a `watch` that replays the log (`since`): the log
/// reader reads each page of 256 changes, and the loop sends them out.
/// Measured as history isolation is, on its daemon and log: paced `get`s
/// with the other client idle, then while it replays `replayed` changes
/// again and again, 200,000 events a second at most.
extension Bench {
  func measureReplayIsolation(_ daemon: DaemonProcess, rows: Int) throws {
    let newest = try newestRevision(daemon)
    let replayed = min(rows, 50_000)
    let replayer = try Replayer(socket: daemon.socket, since: max(0, newest - Int64(replayed)))
    defer { replayer.stop() }
    progress("replay isolation: get with the other client idle, then replaying \(count(replayed))")
    let replayingSeconds = try getsBeside(
      daemon, "while a client replays \(count(replayed)) changes (watch since)",
      otherErrors: { replayer.errors }, set: replayer.set(replaying:))
    add(
      Row(
        section: "history", measure: "events replayed per second meanwhile",
        unit: .perSecond, value: Double(replayer.events) / max(1e-9, replayingSeconds),
        note: "\(count(replayer.events)) events, \(replayer.laps) replays to the end"))
  }

  /// The newest revision in the log (`history`, limit 1).
  private func newestRevision(_ daemon: DaemonProcess) throws -> Int64 {
    let page = try exchange(
      path: daemon.socket,
      "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"history\",\"params\":{\"limit\":1}}\n")
    guard let revision = HistoryPager.revision(in: Array(page.utf8)) else {
      throw BenchError("history limit 1 named no revision: \(page.prefix(200))")
    }
    return revision
  }
}

/// The other client: while told to, connects, watches with `since` and
/// reads the replay to the newest change, then starts over on a new
/// connection. Reads at most `eventsPerSecond`: the daemon's flow control
/// holds the replay back to the client's pace, as it would for a real one.
final class Replayer: Sendable {
  private let replaying = Atomic<Bool>(false)
  /// Set while a connection is open: an idle window waits until it is closed.
  private let connected = Atomic<Bool>(false)
  private let stopping = Atomic<Bool>(false)
  private let replayedEvents = Atomic<Int>(0)
  private let passes = Atomic<Int>(0)
  private let failures = Atomic<Int>(0)
  private let thread: Mutex<pthread_t?> = Mutex(nil)
  private let socket: String
  private let since: Int64

  static let eventsPerSecond = 200_000.0

  var events: Int { replayedEvents.load(ordering: .relaxed) }
  var laps: Int { passes.load(ordering: .relaxed) }
  var errors: Int { failures.load(ordering: .relaxed) }

  init(socket: String, since: Int64) throws {
    self.socket = socket
    self.since = since
    let started = startJoinableThread { [self] in run() }
    thread.withLock { $0 = started }
  }

  /// Starts or stops replaying; stopping waits until the connection is closed.
  func set(replaying on: Bool) {
    replaying.store(on, ordering: .sequentiallyConsistent)
    if !on {
      while connected.load(ordering: .sequentiallyConsistent) { usleep(100) }
    }
  }

  func stop() {
    stopping.store(true, ordering: .sequentiallyConsistent)
    if let started = thread.withLock({ $0.take() }) { pthread_join(started, nil) }
  }

  private func run() {
    var buffer = [UInt8](repeating: 0, count: 1 << 16)
    while !stopping.load(ordering: .sequentiallyConsistent) {
      // connected first, then replaying: `set(replaying: false)` stores
      // replaying, then waits for connected, so no lap starts after it returns.
      connected.store(true, ordering: .sequentiallyConsistent)
      defer { connected.store(false, ordering: .sequentiallyConsistent) }
      guard replaying.load(ordering: .sequentiallyConsistent) else {
        connected.store(false, ordering: .sequentiallyConsistent)
        usleep(500)
        continue
      }
      switch lap(&buffer) {
      case .reachedTheEnd: passes.add(1, ordering: .relaxed)
      case .toldToStop: break
      case .failed:
        failures.add(1, ordering: .relaxed)
        usleep(10_000)
      }
    }
  }

  private enum LapEnd { case reachedTheEnd, toldToStop, failed }

  /// One connection: the watch's answer names the newest revision R; the
  /// replay ends with the event of revision R.
  private func lap(_ buffer: inout [UInt8]) -> LapEnd {
    let fd = connectUnix(socket)
    if fd < 0 { return .failed }
    defer { close(fd) }
    guard sendAll(fd, rpc("watch", "{\"since\":\(since)}")) else { return .failed }
    let started = nowNanoseconds()
    var newest: Int64 = -1  // from the answer
    var pending: [UInt8] = []
    var read = 0
    while replaying.load(ordering: .sequentiallyConsistent) {
      // Paced: no faster than eventsPerSecond since the lap started.
      let due = started + UInt64(Double(read) / Self.eventsPerSecond * 1e9)
      let now = nowNanoseconds()
      if due > now { usleep(UInt32(min(10_000, (due - now) / 1000))) }
      var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
      if retryingEINTR({ poll(&pfd, 1, 1000) }) <= 0 { continue }
      let n = buffer.withUnsafeMutableBytes { raw in
        retryingEINTR { recv(fd, raw.baseAddress, raw.count, 0) }
      }
      if n <= 0 { return .failed }
      // Lines are counted in the chunk; only the answer (the first line) and
      // a chunk's last line are looked into, to find where the replay is.
      let lines = buffer.withUnsafeBytes {
        countNewlines(UnsafeRawBufferPointer(rebasing: $0[0..<n]))
      }
      pending.append(contentsOf: buffer[0..<n])
      var events = lines
      if newest < 0 {
        guard let end = pending.firstIndex(of: 0x0A) else { continue }
        let answer = Array(pending[..<end])
        guard String(decoding: answer, as: UTF8.self).contains("\"result\""),
          let revision = HistoryPager.revision(in: answer)
        else { return .failed }
        newest = revision
        events -= 1
      }
      read += events
      replayedEvents.add(events, ordering: .relaxed)
      guard let lastEnd = pending.lastIndex(of: 0x0A) else { continue }
      let lineStart = pending[..<lastEnd].lastIndex(of: 0x0A).map { $0 + 1 } ?? 0
      let last = Array(pending[lineStart..<lastEnd])
      pending.removeSubrange(...lastEnd)
      if String(decoding: last, as: UTF8.self).contains("\"error\"") { return .failed }
      if let revision = HistoryPager.revision(in: last), revision >= newest, read > 0 {
        return .reachedTheEnd
      }
    }
    return .toldToStop
  }
}
