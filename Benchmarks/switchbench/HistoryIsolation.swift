import Glibc
import SwitchSystem
import Synchronization

/// Isolation: `get` latency on a switchd whose log holds `bigLogRows`
/// changes, with a second client connected and idle, and while that client
/// pages through the whole log (`history`, limit 1000, `before` paging).
/// Log reads run on the log reader thread, so the loop keeps answering
/// `get` from memory: p99 within 2x of the idle value (issue 11). The
/// reader yields its core every 32 entries, so a loop woken on that core
/// waits tens of microseconds, not the scheduler's slice (about a
/// millisecond); what is left on two busy cores is the page's CPU (the
/// reader's ~1 ms, the transfer of ~500 KB) competing with everything else.
extension Bench {
  func measureHistoryIsolation() throws {
    let rows = options.bigLogRows
    let config = "\(directory)/conf-history"
    try Configs.write(config, total: 1000)
    progress("history isolation: starting switchd with 1,000 switches")
    let daemon = try startDaemon("history", config: config)
    defer { stopDaemon(daemon) }
    progress("history isolation: \(count(rows)) toggles into the log")
    _ = try preload(daemon, rows: rows, total: 1000)

    let pager = try HistoryPager(socket: daemon.socket)
    defer { pager.stop() }
    progress("history isolation: get with the other client idle, then paging \(count(rows))")
    let pagingSeconds = try getsBeside(
      daemon, "while a client pages \(count(rows)) history entries (limit 1000)",
      otherErrors: { pager.errors }, set: pager.set(paging:))
    // The machine's floor under the p99: a sleeping thread on the other
    // CPU woken after 2 ms of quiet (a CPU of a paging machine is idle for
    // 0.5-5 ms at a time).
    let wakes = try crossCPUWake(gapSeconds: 0.002, wakes: 500)
    addFloor(
      wakes, section: "history",
      measure: "floor: a thread on the other CPU runs after 2 ms of quiet,")
    add(
      Row(
        section: "history", measure: "history entries paged per second meanwhile",
        unit: .perSecond, value: Double(pager.entries) / max(1e-9, pagingSeconds),
        note: "\(count(pager.entries)) entries, \(pager.laps) passes over the whole log"))
    pager.stop()
    try measureReplayIsolation(daemon, rows: rows)
    try measureListIsolation(daemon)
  }

  /// Paced `get`s with another client idle, then busy (`set(true)`),
  /// interleaved; adds their p99 (target 2× idle) and p50 rows, `busy`
  /// naming what the other client does. With a `peer`, the same on Redis
  /// in windows of its own, as a row with no target; in each window only
  /// the server measured has its other client on. Returns the seconds
  /// switchd's other client was busy.
  func getsBeside(
    _ daemon: DaemonProcess, _ busy: String, otherErrors: () -> Int,
    set: @escaping (Bool) -> Void, peer: IsolationPeer? = nil
  ) throws -> Double {
    var busySeconds = 0.0
    func window(busy: Bool, onPeer: Bool) -> Contender {
      return { warmup, seconds in
        if onPeer, let peer {
          set(false)
          peer.set(busy)
          return [try peer.gets(warmup: warmup, seconds: seconds)]
        }
        peer?.set(false)
        set(busy)
        let started = nowSeconds()
        let result = try pacedGets(
          path: daemon.socket, every: 0.0005, warmup: warmup, seconds: seconds)
        if busy { busySeconds += nowSeconds() - started }
        return [result]
      }
    }
    var contenders = [window(busy: false, onPeer: false), window(busy: true, onPeer: false)]
    if peer != nil {
      contenders += [window(busy: false, onPeer: true), window(busy: true, onPeer: true)]
    }
    let results = try interleave(contenders)
    set(false)
    peer?.set(false)
    let idle = results[0][0]
    let besides = results[1][0]
    let errors = idle.errors + besides.errors + otherErrors()
    add(
      Row(
        section: "history", measure: "get p99 \(busy)", unit: .microseconds,
        value: besides.p99, reference: idle.p99, referenceName: "get p99, other client idle",
        target: .ratioAtMost(2), note: errors > 0 ? "\(errors) errors" : ""))
    add(
      Row(
        section: "history", measure: "get p50 \(busy)", unit: .microseconds,
        value: besides.p50, reference: idle.p50, referenceName: "get p50, other client idle"))
    if let peer {
      let idle = results[2][0]
      let besides = results[3][0]
      let errors = idle.errors + besides.errors + peer.errors()
      add(
        Row(
          section: "history", measure: "Redis: GET p99 \(peer.busy)", unit: .microseconds,
          value: besides.p99, reference: idle.p99, referenceName: "GET p99, other client idle",
          note: errors > 0 ? "\(errors) errors" : ""))
    }
    return busySeconds
  }
}

/// An isolation figure's peer: paced `GET`s of `wifi` on a Redis while
/// another of its clients is idle, then busy (`set(true)`) doing `busy`.
struct IsolationPeer {
  var socket: String
  var busy: String
  var set: (Bool) -> Void
  var errors: () -> Int

  func gets(warmup: Double, seconds: Double) throws -> LoadResult {
    try pacedGets(
      path: socket, every: 0.0005, warmup: warmup, seconds: seconds,
      request: resp(["GET", "wifi"]), lines: 2, check: .resp)
  }
}

/// One client sending `get` every `interval` seconds (or at once when the
/// previous answer came late), each timed from its send. Paced rather than
/// closed-loop: a closed-loop client that waits out a stalled loop sends
/// one request in the stall, so its p99 would not see stalls at all.
///
/// `request` (a `get` of `wifi` unless told) is answered by `lines` lines,
/// judged by `check`.
func pacedGets(
  path: String, every interval: Double, warmup: Double, seconds: Double,
  request: [UInt8] = Bench.getRequest, lines: Int = 1, check: ReplyCheck = .jsonRPC
) throws -> LoadResult {
  let fd = connectUnix(path)
  if fd < 0 { throw BenchError.errno("connect \(path)") }
  defer { close(fd) }
  var result = LoadResult(seconds: seconds)
  let step = UInt64(interval * 1e9)
  let measureStart = nowNanoseconds() + UInt64(warmup * 1e9)
  let measureEnd = measureStart + UInt64(seconds * 1e9)
  var next = nowNanoseconds()
  while next < measureEnd {
    let now = nowNanoseconds()
    if next > now { usleep(UInt32((next - now) / 1000)) }
    let sent = nowNanoseconds()
    guard sendAll(fd, request),
      let answer = readLines(fd, lines: lines, deadline: sent + 10_000_000_000)
    else {
      result.errors += 1
      break
    }
    let done = nowNanoseconds()
    let good = check.accepts(answer)
    if sent >= measureStart && done <= measureEnd {
      if good {
        result.completed += 1
        result.latencies.append(done - sent)
      } else {
        result.errors += 1
      }
    }
    next = max(next + step, min(done, next + 2 * step))
  }
  result.latencies.sort()
  return result
}

/// The other client: while told to, pages through the whole log, newest
/// first, 1,000 entries a page, and starts over at the end.
final class HistoryPager: Sendable {
  private let asker: PacedAsker
  private let progress: Progress

  /// Where the pages are, shared with the asker's thread.
  private final class Progress: Sendable {
    /// The oldest revision of the last page; 0: start again at the newest.
    let before = Atomic<Int64>(0)
    let entries = Atomic<Int>(0)
    let passes = Atomic<Int>(0)
  }

  var entries: Int { progress.entries.load(ordering: .relaxed) }
  var laps: Int { progress.passes.load(ordering: .relaxed) }
  var errors: Int { asker.errors }

  /// At most one page every 5 ms (200,000 entries a second, the whole log
  /// twice a second): a client paging fast, which leaves the two cores of a
  /// small machine something for the get client.
  static let pageInterval: UInt64 = 5_000_000

  init(socket: String) throws {
    let progress = Progress()
    self.progress = progress
    asker = try PacedAsker(
      socket: socket, interval: Self.pageInterval,
      ask: {
        let before = progress.before.load(ordering: .relaxed)
        return rpc(
          "history", before > 0 ? "{\"limit\":1000,\"before\":\(before)}" : "{\"limit\":1000}")
      },
      answered: { page in
        // Newest first, one revision each: the first and last revisions
        // say how many entries came (found without scanning 150 KB here,
        // which would take the CPU the daemon is measured with).
        if let newest = Self.revision(in: page, last: false),
          let oldest = Self.revision(in: page, last: true)
        {
          progress.entries.add(Int(newest - oldest + 1), ordering: .relaxed)
          progress.before.store(oldest, ordering: .relaxed)
        } else {
          progress.before.store(0, ordering: .relaxed)
          progress.passes.add(1, ordering: .relaxed)
        }
      })
  }

  /// Starts or stops paging; stopping waits for the page in flight.
  func set(paging on: Bool) { asker.set(asking: on) }

  func stop() { asker.stop() }

  /// The first or last `"revision":N` of a page (or of a line).
  static func revision(in page: [UInt8], last: Bool = false) -> Int64? {
    let marker = Array("\"revision\":".utf8)
    guard page.count >= marker.count else { return nil }
    var i = last ? page.count - marker.count : 0
    while i >= 0 && i <= page.count - marker.count {
      if page[i] == marker[0] && page[i..<(i + marker.count)].elementsEqual(marker) {
        let digits = page[(i + marker.count)...].prefix { (48...57).contains($0) }
        return Int64(String(decoding: digits, as: UTF8.self))
      }
      i += last ? -1 : 1
    }
    return nil
  }
}
