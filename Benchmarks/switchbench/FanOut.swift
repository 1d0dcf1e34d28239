import Glibc
import SwitchSystem

/// A fan-out measurement: `watchers` connections subscribe to one key, then
/// a publisher changes it one round at a time; a round's figure is the time
/// from sending the change until the last watcher has read its event. One
/// thread polls every connection (no thread per watcher).
struct FanOutPlan {
  var path: String
  var watchers: Int
  var subscribe: [UInt8]
  var subscribeNewlines: Int
  /// Connections that subscribe to something else and must get nothing.
  var bystanders: [[UInt8]] = []
  var bystanderNewlines = 1
  var publishes: [[UInt8]]
  var publishNewlines: Int
  var eventNewlines: Int
}

extension FanOutPlan {
  /// `watchers` switchd connections watching `wifi`; each change is a `toggle wifi`.
  static func switchdWatchers(path: String, watchers: Int) -> FanOutPlan {
    FanOutPlan(
      path: path, watchers: watchers, subscribe: rpc("watch", "{\"keys\":[\"wifi\"]}"),
      subscribeNewlines: 1, publishes: [rpc("toggle", "{\"key\":\"wifi\"}")],
      publishNewlines: 1, eventNewlines: 1)
  }

  /// `watchers` switchd connections watching every switch, all asking at
  /// once: each is answered with a snapshot of all of them.
  static func switchdWatchersOfEverything(path: String, watchers: Int) -> FanOutPlan {
    var plan = switchdWatchers(path: path, watchers: watchers)
    plan.subscribe = rpc("watch", "{}")
    return plan
  }

  /// `watchers` Redis connections subscribed to `wifi`; each change is a
  /// `PUBLISH` of a payload as long as switchd's event.
  static func redisSubscribers(path: String, watchers: Int) -> FanOutPlan {
    let payload = String(decoding: fillerLine(470, tag: "event").dropLast(), as: UTF8.self)
    return FanOutPlan(
      path: path, watchers: watchers, subscribe: resp(["SUBSCRIBE", "wifi"]),
      subscribeNewlines: 6, publishes: [resp(["PUBLISH", "wifi", payload])],
      publishNewlines: 1, eventNewlines: 7)
  }
}

/// The connections of one fan-out target, subscribed; `round()` publishes
/// once and waits for every watcher. Runners of several targets can take
/// turns round by round, so they share the machine's ups and downs.
final class FanOutRunner {
  let plan: FanOutPlan
  private(set) var fds: [Int32] = []
  private var publisher: Int32 = -1
  private var counts: [Int] = []
  private var expected: [Int] = []
  private var rounds = 0
  /// Round latencies in ns (sorted by `finish()`).
  private(set) var latencies: [UInt64] = []
  /// The same, in the order of the rounds (runners that take turns can be
  /// compared round by round).
  private(set) var latenciesByRound: [UInt64] = []
  /// Until the first watcher had its event (sorted by `finish()`): the
  /// publish path before the fan-out (for switchd, the commit with its sync).
  private(set) var firstLatencies: [UInt64] = []
  /// From the first watcher's event to the last one's (sorted by
  /// `finish()`): the fan-out alone, whatever came before it.
  private(set) var spreads: [UInt64] = []
  /// Seconds to connect and subscribe every watcher and bystander.
  private(set) var subscribeSeconds = 0.0
  /// Events a bystander received (must stay 0).
  private(set) var strayEvents = 0

  /// Connects and subscribes everyone (bounded by `timeout`).
  init(_ plan: FanOutPlan, timeout: Double = 120) throws {
    self.plan = plan
    do {
      try subscribeAll(timeout: timeout)
    } catch {
      close()
      throw error
    }
  }

  private func subscribeAll(timeout: Double) throws {
    let start = nowNanoseconds()
    func open(_ request: [UInt8]) throws -> Int32 {
      let fd = connectUnix(plan.path)
      if fd < 0 { throw BenchError.errno("connect \(plan.path)") }
      fds.append(fd)
      guard sendAll(fd, request) else { throw BenchError("subscribe: send failed") }
      setNonBlocking(fd)
      return fd
    }
    for _ in 0..<plan.watchers { _ = try open(plan.subscribe) }
    for request in plan.bystanders { _ = try open(request) }
    expected =
      Array(repeating: plan.subscribeNewlines, count: plan.watchers)
      + Array(repeating: plan.bystanderNewlines, count: plan.bystanders.count)
    counts = Array(repeating: 0, count: fds.count)
    _ = try drain(until: start + UInt64(timeout * 1e9))
    subscribeSeconds = Double(nowNanoseconds() - start) / 1e9
    publisher = connectUnix(plan.path)
    if publisher < 0 { throw BenchError.errno("connect \(plan.path)") }
    setNonBlocking(publisher)
    fds.append(publisher)
    counts.append(0)
    expected.append(0)
  }

  /// Publishes once; waits until every watcher has its event and the
  /// publisher its answer. Records the latency when `record`.
  func round(record: Bool) throws {
    for i in 0..<plan.watchers { expected[i] += plan.eventNewlines }
    expected[fds.count - 1] += plan.publishNewlines
    let request = plan.publishes[rounds % plan.publishes.count]
    rounds += 1
    let sent = nowNanoseconds()
    guard request.withUnsafeBytes({ sendAll(publisher, $0) }) else {
      throw BenchError("fan-out: publish failed")
    }
    let (first, last) = try drain(until: sent + 30_000_000_000)
    if record {
      latencies.append(last - sent)
      firstLatencies.append(first - sent)
      spreads.append(last - first)
    }
  }

  /// Sorts the latencies and counts what bystanders received.
  func finish() {
    latenciesByRound = latencies
    latencies.sort()
    firstLatencies.sort()
    spreads.sort()
    var buffer = [UInt8](repeating: 0, count: 65_536)
    for fd in fds[plan.watchers..<(plan.watchers + plan.bystanders.count)] {
      let got = buffer.withUnsafeMutableBytes { raw in
        retryingEINTR { recv(fd, raw.baseAddress, raw.count, 0) }
      }
      if got > 0 {
        strayEvents += buffer.withUnsafeBytes {
          countNewlines(UnsafeRawBufferPointer(rebasing: $0[0..<got]))
        }
      }
    }
  }

  func percentileMicroseconds(_ p: Double) -> Double {
    LoadResult(latencies: latencies).percentileMicroseconds(p)
  }

  func firstWatcherPercentileMicroseconds(_ p: Double) -> Double {
    LoadResult(latencies: firstLatencies).percentileMicroseconds(p)
  }

  func spreadPercentileMicroseconds(_ p: Double) -> Double {
    LoadResult(latencies: spreads).percentileMicroseconds(p)
  }

  /// The median over `blocks` consecutive blocks of rounds of the ratio of
  /// this runner's `p`-th percentile to `other`'s in the same rounds. One
  /// slow moment of a shared machine moves one block, not the figure.
  func blockRatio(to other: FanOutRunner, percentile p: Double, blocks: Int = 5) -> Double? {
    let rounds = min(latenciesByRound.count, other.latenciesByRound.count)
    guard rounds >= blocks else { return nil }
    var ratios: [Double] = []
    for block in 0..<blocks {
      let range = (block * rounds / blocks)..<((block + 1) * rounds / blocks)
      let mine = LoadResult(latencies: latenciesByRound[range].sorted())
      let theirs = LoadResult(latencies: other.latenciesByRound[range].sorted())
      ratios.append(mine.percentileMicroseconds(p) / theirs.percentileMicroseconds(p))
    }
    return ratios.sorted()[blocks / 2]
  }

  func close() {
    for fd in fds { Glibc.close(fd) }
    fds = []
  }

  /// Reads every connection until each has seen its expected newlines;
  /// returns when the first and the last watcher got there (ns).
  private func drain(until deadline: UInt64) throws -> (first: UInt64, last: UInt64) {
    var polls = fds.indices.map { i in
      pollfd(fd: counts[i] < expected[i] ? fds[i] : -1, events: Int16(POLLIN), revents: 0)
    }
    var remaining = polls.filter { $0.fd >= 0 }.count
    var lastWatcher = nowNanoseconds()
    var firstWatcher: UInt64?
    let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 65_536, alignment: 16)
    defer { buffer.deallocate() }
    while remaining > 0 {
      if nowNanoseconds() >= deadline {
        throw BenchError("fan-out: \(remaining) connections did not get their lines in time")
      }
      let n = retryingEINTR { poll(&polls, nfds_t(polls.count), 1000) }
      if n <= 0 { continue }
      for i in polls.indices where polls[i].fd >= 0 && polls[i].revents != 0 {
        polls[i].revents = 0
        while true {
          let got = retryingEINTR { recv(fds[i], buffer.baseAddress, buffer.count, 0) }
          if got == 0 { throw BenchError("fan-out: the server closed a connection") }
          if got < 0 {
            if errno == EAGAIN || errno == EWOULDBLOCK { break }
            throw BenchError.errno("recv")
          }
          counts[i] += countNewlines(UnsafeRawBufferPointer(rebasing: buffer[0..<got]))
          if got < buffer.count { break }
        }
        if counts[i] >= expected[i] {
          polls[i].fd = -1
          remaining -= 1
          if i < plan.watchers {
            lastWatcher = nowNanoseconds()
            if firstWatcher == nil { firstWatcher = lastWatcher }
          }
        }
      }
    }
    return (firstWatcher ?? lastWatcher, lastWatcher)
  }
}

/// Runs `warmup + rounds` rounds, the runners taking turns each round.
func runRounds(_ runners: [FanOutRunner], rounds: Int, warmup: Int) throws {
  for round in 0..<(warmup + rounds) {
    for runner in runners { try runner.round(record: round >= warmup) }
  }
  for runner in runners { runner.finish() }
}
