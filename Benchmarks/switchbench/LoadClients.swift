import Glibc
import SwitchSystem

/// How to tell a good answer from an error.
enum ReplyCheck: Sendable {
  /// A JSON-RPC line: good when it carries `"result"`.
  case jsonRPC
  /// A RESP reply: good unless it starts with `-`.
  case resp
  /// A varlink reply, ended by a NUL (`newlines` counts NULs): good when it
  /// carries `"parameters"` first, not an `"error"`.
  case varlink

  /// The byte that ends each answer.
  var terminator: UInt8 { self == .varlink ? 0 : 0x0A }

  /// Whether an answer that starts with `head` (its first bytes read) is a
  /// good one.
  func accepts(_ head: UnsafeRawBufferPointer) -> Bool {
    guard let first = head.first else { return false }
    switch self {
    case .resp: return first != UInt8(ascii: "-")
    case .jsonRPC: return contains(head.prefix(64), jsonResultMarker)
    case .varlink: return contains(head.prefix(16), varlinkResultMarker)
    }
  }

  /// `accepts` for an answer read whole.
  func accepts(_ answer: [UInt8]) -> Bool {
    answer.withUnsafeBytes { accepts($0) }
  }
}

/// What one closed-loop client sends: its requests in turn, each answered
/// by `newlines` newline-terminated lines.
struct ClientScript: Sendable {
  var requests: [[UInt8]]
  var newlines: Int
  var check: ReplyCheck
  /// Results are added up per group (e.g. readers and writers in one run).
  var group = 0
  /// Answers per request sent: above 1 when a "request" is several
  /// pipelined lines written at once (its latency is then the batch's).
  var answersPerSend = 1
  /// Connect as this uid (root only); nil: as the benchmark runs.
  var uid: UInt32?
}

/// What a set of closed-loop clients did inside the measured window.
struct LoadResult: Sendable {
  var completed = 0
  var errors = 0
  var seconds = 0.0
  /// Round-trip times in nanoseconds, sorted.
  var latencies: [UInt64] = []
  /// Good answers over the whole run, warm-up included (for CPU per request).
  var answers = 0
  /// CPU seconds the server process used over the whole run (0: not measured).
  var serverCPU = 0.0
  /// Flushes the server process made over the whole run (0: not counted).
  var serverFlushes = 0

  /// Answers per flush over the whole run: how many writes a commit group
  /// carried, on average; nil when flushes were not counted.
  var writesPerFlush: Double? {
    serverFlushes > 0 && answers > 0 ? Double(answers) / Double(serverFlushes) : nil
  }
  /// Server CPU microseconds per answer, or nil when not measured.
  var cpuMicrosecondsPerRequest: Double? {
    serverCPU > 0 && answers > 0 ? serverCPU * 1e6 / Double(answers) : nil
  }

  var throughput: Double { seconds > 0 ? Double(completed) / seconds : 0 }

  /// The `p`-th percentile latency in microseconds (p in 0...100).
  func percentileMicroseconds(_ p: Double) -> Double {
    guard !latencies.isEmpty else { return .nan }
    let rank = Int((p / 100 * Double(latencies.count - 1)).rounded())
    return Double(latencies[min(latencies.count - 1, max(0, rank))]) / 1000
  }

  var p50: Double { percentileMicroseconds(50) }
  var p99: Double { percentileMicroseconds(99) }

  /// Two windows of the same contender, added up.
  func adding(_ other: LoadResult) -> LoadResult {
    var sum = LoadResult(
      completed: completed + other.completed, errors: errors + other.errors,
      seconds: seconds + other.seconds, latencies: latencies + other.latencies,
      answers: answers + other.answers, serverCPU: serverCPU + other.serverCPU,
      serverFlushes: serverFlushes + other.serverFlushes)
    sum.latencies.sort()
    return sum
  }
}

private struct ClientOutcome: Sendable {
  var answers = 0
  var completed = 0
  var errors = 0
  var latencies: [UInt64] = []
}

private let jsonResultMarker = Array(",\"result\":".utf8)
private let varlinkResultMarker = Array("{\"parameters\":".utf8)

/// Runs one closed-loop client per script against `path`: each sends a
/// request and waits for its whole answer before the next. Counts answers
/// sent after the warm-up and received before the end of the window. With
/// `requestsPerClient`, each client stops after that many requests (the
/// window is then only a bound: see `runCounted`).
func runClosedLoop(
  path: String, scripts: [ClientScript], warmup: Double, seconds: Double,
  requestsPerClient: Int = .max
) throws -> [LoadResult] {
  var fds: [Int32] = []
  for script in scripts {
    let fd = script.uid.map { connectUnix(path, asUID: $0) } ?? connectUnix(path)
    if fd < 0 {
      for open in fds { close(open) }
      throw BenchError.errno("connect \(path)")
    }
    var timeout = timeval(tv_sec: 10, tv_usec: 0)
    setsockopt(
      fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    fds.append(fd)
  }
  defer { for fd in fds { close(fd) } }
  let measureStart = nowNanoseconds() + UInt64(warmup * 1e9)
  let measureEnd = measureStart + UInt64(seconds * 1e9)
  let slots = ResultSlots<(Int, ClientOutcome)>(count: scripts.count)
  let fdList = fds
  runThreads(scripts.count) { index in
    let outcome = clientLoop(
      fd: fdList[index], script: scripts[index], measureStart: measureStart,
      measureEnd: measureEnd, limit: requestsPerClient)
    slots.set(index, (index, outcome))
  }
  let groups = (scripts.map(\.group).max() ?? 0) + 1
  var results = [LoadResult](repeating: LoadResult(seconds: seconds), count: groups)
  for (index, outcome) in slots.values {
    let group = scripts[index].group
    results[group].completed += outcome.completed
    results[group].errors += outcome.errors
    results[group].answers += outcome.answers
    results[group].latencies += outcome.latencies
  }
  for group in 0..<groups { results[group].latencies.sort() }
  return results
}

private func clientLoop(
  fd: Int32, script: ClientScript, measureStart: UInt64, measureEnd: UInt64, limit: Int
) -> ClientOutcome {
  var outcome = ClientOutcome()
  outcome.latencies.reserveCapacity(1 << 16)
  let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 65_536, alignment: 16)
  defer { buffer.deallocate() }
  var turn = 0
  var calls = 0
  // Bounded by the window: the loop ends at measureEnd, after `limit`
  // requests, or on a failure.
  while calls < limit {
    calls += 1
    let sent = nowNanoseconds()
    if sent >= measureEnd { break }
    let request = script.requests[turn]
    turn = turn + 1 == script.requests.count ? 0 : turn + 1
    guard request.withUnsafeBytes({ sendAll(fd, $0) }) else {
      outcome.errors += 1
      break
    }
    var lines = 0
    var first = true
    var good = true
    while lines < script.newlines {
      let n = retryingEINTR { recv(fd, buffer.baseAddress, buffer.count, 0) }
      if n <= 0 {
        outcome.errors += 1
        return outcome
      }
      let chunk = UnsafeRawBufferPointer(rebasing: buffer[0..<n])
      if first {
        first = false
        good = script.check.accepts(chunk)
      }
      lines += countNewlines(chunk, terminator: script.check.terminator)
    }
    let done = nowNanoseconds()
    if good { outcome.answers += script.answersPerSend }
    if sent >= measureStart && done <= measureEnd {
      if good {
        outcome.completed += script.answersPerSend
        outcome.latencies.append(done - sent)
      } else {
        outcome.errors += 1
      }
    } else if !good {
      outcome.errors += 1
    }
  }
  return outcome
}

private func contains(_ haystack: Slice<UnsafeRawBufferPointer>, _ needle: [UInt8]) -> Bool {
  guard haystack.count >= needle.count else { return false }
  var i = haystack.startIndex
  while i + needle.count <= haystack.endIndex {
    var match = true
    for j in 0..<needle.count where haystack[i + j] != needle[j] {
      match = false
      break
    }
    if match { return true }
    i += 1
  }
  return false
}

/// Exactly `requestsPerClient` requests from each client, all answered
/// well (bounded by `timeout` seconds), for figures counted per call rather
/// than per second: each client's calls are the same in every run.
func runCounted(
  path: String, scripts: [ClientScript], requestsPerClient: Int, timeout: Double
) throws {
  let results = try runClosedLoop(
    path: path, scripts: scripts, warmup: 0, seconds: timeout,
    requestsPerClient: requestsPerClient)
  let wanted = scripts.count * requestsPerClient
  let good = results.map(\.completed).reduce(0, +)
  let errors = results.map(\.errors).reduce(0, +)
  guard good == wanted, errors == 0 else {
    throw BenchError(
      "\(path): \(good) of \(wanted) calls answered well in \(Int(timeout)) s (\(errors) errors)")
  }
}

/// A JSON-RPC request line.
func rpc(_ method: String, _ params: String? = nil, id: Int = 1) -> [UInt8] {
  var text = "{\"jsonrpc\":\"2.0\",\"id\":\(id),\"method\":\"\(method)\""
  if let params { text += ",\"params\":\(params)" }
  return Array((text + "}\n").utf8)
}

/// A RESP command (an array of bulk strings).
func resp(_ parts: [String]) -> [UInt8] {
  var out = Array("*\(parts.count)\r\n".utf8)
  for part in parts {
    out += Array("$\(part.utf8.count)\r\n".utf8)
    out += Array(part.utf8)
    out += Array("\r\n".utf8)
  }
  return out
}
