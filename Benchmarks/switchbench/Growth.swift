import Glibc
import SeededRandom

/// Cost growth: the same reads on a switchd with few switches and log rows
/// and on one with many, both running, measured in alternating windows.
extension Bench {
  func measureGrowth() throws {
    let small = (switches: 1000, rows: 1000)
    let big = (switches: options.bigSwitches, rows: options.bigLogRows)
    try Configs.write("\(directory)/conf-small", total: small.switches)
    try Configs.write("\(directory)/conf-big", total: big.switches)
    progress("cost growth: starting switchd with \(count(small.switches)) switches")
    let smallDaemon = try startDaemon("small", config: "\(directory)/conf-small")
    progress("cost growth: starting switchd with \(count(big.switches)) switches")
    let bigDaemon = try startDaemon("big", config: "\(directory)/conf-big")
    progress("cost growth: \(count(small.rows)) and \(count(big.rows)) toggles into the logs")
    let smallFill = try preload(smallDaemon, rows: small.rows, total: small.switches)
    let bigFill = try preload(bigDaemon, rows: big.rows, total: big.switches)
    add(
      Row(
        section: "growth", measure: "ready with \(count(big.switches)) switches, new database",
        unit: .seconds, value: bigDaemon.readySeconds, reference: smallDaemon.readySeconds,
        referenceName: "with \(count(small.switches))"))
    add(
      Row(
        section: "growth", measure: "toggle in JSON-RPC batches of 500 (log fill)",
        unit: .perSecond, value: bigFill, reference: smallFill,
        referenceName: "with \(count(small.switches)) switches"))

    func figure(
      _ measure: String, _ referenceName: String, requests: @escaping (_ total: Int) -> [UInt8]
    ) throws {
      progress("cost growth: \(measure)")
      let (many, few, errors) = try medianCPUPerRequest(
        (bigDaemon, requests(big.switches)), against: (smallDaemon, requests(small.switches)))
      add(
        Row(
          section: "growth", measure: "\(measure): CPU per request", unit: .microseconds,
          value: many, reference: few,
          referenceName: referenceName, target: .ratioWithin(0.2),
          note: errors > 0 ? "\(errors) errors" : ""))
    }
    for (daemon, total) in [(smallDaemon, small.switches), (bigDaemon, big.switches)] {
      try checkPages(daemon, prefix: listPrefix(total))
    }
    try figure("get, \(count(big.switches)) switches", "with \(count(small.switches))") { total in
      let filler = Configs.fillerCount(total: total)
      return rpc("get", "{\"key\":\"\(Configs.fillerKey(filler / 2 + 3))\"}")
    }
    try figure(
      "list of 10 by prefix among \(count(big.switches))", "among \(count(small.switches))"
    ) { total in rpc("list", "{\"prefix\":\"\(self.listPrefix(total))\"}") }
    try figure("history limit 10, \(count(big.rows)) log rows", "\(count(small.rows)) rows") {
      _ in rpc("history", "{\"limit\":10}")
    }
    try figure(
      "history of a key, limit 10, \(count(big.rows)) rows", "\(count(small.rows)) rows"
    ) { _ in rpc("history", "{\"key\":\"wifi\",\"limit\":10}") }
    stopDaemon(smallDaemon)
    stopDaemon(bigDaemon)
  }

  /// The daemon's CPU per answer to `request` on each of two daemons, the
  /// median of 8 window pairs (each ~1/8 of `--seconds`) in ABBA order.
  ///
  /// Cost is the daemon's CPU per answer (from /proc/PID/task/*/schedstat),
  /// with one client writing 16 pipelined requests at a time: the daemon
  /// then always reads 16 lines per wake-up, so what is measured is the
  /// request's own cost, not how a shared machine happened to schedule
  /// wake-ups (single-client throughput varies by 2x here from run to run).
  /// A window the machine spent elsewhere (a few µs per request either way)
  /// moves a sum, not a median.
  func medianCPUPerRequest(
    _ measured: (DaemonProcess, [UInt8]), against reference: (DaemonProcess, [UInt8])
  ) throws -> (measured: Double?, reference: Double?, errors: Int) {
    func contender(_ daemon: DaemonProcess, _ request: [UInt8]) -> Contender {
      let script = ClientScript(
        requests: [Array(repeating: request, count: 16).flatMap { $0 }], newlines: 16,
        check: .jsonRPC, answersPerSend: 16)
      return { warmup, seconds in
        let before = processCPUSeconds(daemon.pid)
        var result = try runClosedLoop(
          path: daemon.socket, scripts: [script], warmup: warmup, seconds: seconds)[0]
        if let before, let after = processCPUSeconds(daemon.pid) {
          result.serverCPU = after - before
        }
        return [result]
      }
    }
    let contenders = [contender(reference.0, reference.1), contender(measured.0, measured.1)]
    var costs: [[Double]] = [[], []]
    var errors = 0
    for window in 0..<8 {
      let warmup = window == 0 ? options.warmup : min(0.05, options.warmup)
      // ABBA order: neither daemon always runs right after the other.
      for index in window % 2 == 0 ? [0, 1] : [1, 0] {
        let result = try contenders[index](warmup, options.seconds / 8)[0]
        errors += result.errors
        if let cost = result.cpuMicrosecondsPerRequest { costs[index].append(cost) }
      }
    }
    return (median(costs[1]), median(costs[0]), errors)
  }

  /// A prefix that lists exactly ten switches (`g00042.`).
  func listPrefix(_ total: Int) -> String {
    let group = min(42, Configs.fillerCount(total: total) / 10 - 1)
    return String(Configs.fillerKey(group * 10).prefix(7))
  }

  /// The pages measured return what they should: 10 switches, 10 entries.
  private func checkPages(_ daemon: DaemonProcess, prefix: String) throws {
    let listed = try exchange(
      path: daemon.socket,
      String(decoding: rpc("list", "{\"prefix\":\"\(prefix)\"}"), as: UTF8.self))
    let found = listed.ranges(of: "\"key\":\"\(prefix)").count
    guard found == 10 else { throw BenchError("list \(prefix) returned \(found) switches") }
    for params in ["{\"limit\":10}", "{\"key\":\"wifi\",\"limit\":10}"] {
      let page = try exchange(
        path: daemon.socket, String(decoding: rpc("history", params), as: UTF8.self))
      guard page.ranges(of: "\"cause\":").count == 10 else {
        throw BenchError("history \(params) returned no page of 10: \(page.prefix(200))")
      }
    }
  }

  /// Toggles `rows` switches (20 of them `wifi`) in JSON-RPC batches of
  /// 500, one batch in flight; returns toggles per second.
  func preload(_ daemon: DaemonProcess, rows: Int, total: Int) throws -> Double {
    let fd = connectUnix(daemon.socket)
    if fd < 0 { throw BenchError.errno("connect") }
    defer { close(fd) }
    var random = SplitMix64(seed: UInt64(total))
    let filler = Configs.fillerCount(total: total)
    let start = nowSeconds()
    var done = 0
    while done < rows {
      let count = min(500, rows - done)
      var line = "["
      for i in 0..<count {
        let key =
          done + i < 20 ? "wifi" : Configs.fillerKey(Int(random.next() % UInt64(filler)))
        if i > 0 { line += "," }
        line +=
          "{\"jsonrpc\":\"2.0\",\"id\":\(i),\"method\":\"toggle\",\"params\":{\"key\":\"\(key)\"}}"
      }
      line += "]\n"
      guard sendAll(fd, Array(line.utf8)),
        let answer = readLines(fd, lines: 1, deadline: nowNanoseconds() + 60_000_000_000)
      else { throw BenchError("preload: no answer to a batch") }
      let text = String(decoding: answer, as: UTF8.self)
      if answer.count < 64 || text.contains("\"error\"") {
        throw BenchError("preload: a toggle failed: \(text.prefix(300))")
      }
      done += count
    }
    return Double(rows) / max(1e-9, nowSeconds() - start)
  }
}

/// 100000 -> "100,000".
func count(_ n: Int) -> String {
  var digits = Array(String(n))
  var out: [Character] = []
  while digits.count > 3 {
    out.insert(contentsOf: [","] + digits.suffix(3), at: 0)
    digits.removeLast(3)
  }
  return String(digits + out)
}

/// The middle value (the mean of the two middle ones for an even count); nil when empty.
func median(_ values: [Double]) -> Double? {
  guard !values.isEmpty else { return nil }
  let sorted = values.sorted()
  let middle = sorted.count / 2
  return sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
}
