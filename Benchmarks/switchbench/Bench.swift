import Glibc

/// One benchmark run: the temp dir, the floors and peers it started, and the rows.
final class Bench {
  let options: Options
  let directory: String
  let switchd: String
  let switchctl: String
  var rows: [Row] = []

  var echo: EchoFloor?
  var redis: RedisServer?
  var redisDurable: RedisServer?
  var redisMissing: String?
  var daemons: [DaemonProcess] = []
  /// Servers started under a counting tool so far (each gets its own directory).
  var countedRuns = 0

  /// switchd's answer to `get wifi` (the echo floor answers with as many bytes).
  var getAnswer: [UInt8] = []

  init(options: Options, directory: String, switchd: String, switchctl: String) {
    self.options = options
    self.directory = directory
    self.switchd = switchd
    self.switchctl = switchctl
  }

  func progress(_ text: String) { printError("switchbench: \(text)") }

  func add(_ row: Row) { rows.append(row) }

  /// A floor's p50 and p99, as rows without a target: `measure` is the
  /// row's name before the percentile.
  func addFloor(_ result: LoadResult, section: String, measure: String) {
    for (label, p) in [("p50", 50.0), ("p99", 99.0)] {
      add(
        Row(
          section: section, measure: "\(measure) \(label)", unit: .microseconds,
          value: result.percentileMicroseconds(p)))
    }
  }

  /// Starts a switchd on `config` with a database and socket named `name`
  /// (under `launcher`, when given).
  func startDaemon(
    _ name: String, config: String, environment: [String]? = nil, launcher: [String] = []
  ) throws -> DaemonProcess {
    try makeDirectory("\(directory)/\(name)")
    let daemon = try DaemonProcess.start(
      binary: switchd, config: config, socket: "\(directory)/\(name)/switchd.sock",
      database: "\(directory)/\(name)/switches.db", logPath: "\(directory)/\(name)/switchd.log",
      environment: environment, launcher: launcher)
    daemons.append(daemon)
    return daemon
  }

  func stopDaemon(_ daemon: DaemonProcess) {
    daemon.stop()
    daemons.removeAll { $0 === daemon }
  }

  /// Stops everything still running (normal end and errors alike).
  func cleanUp() {
    for daemon in daemons { daemon.stop() }
    daemons = []
    echo?.stop()
    echo = nil
    redis?.stop()
    redis = nil
    redisDurable?.stop()
    redisDurable = nil
    Children.stopAll()
  }

  /// A closed-loop run of `clients` identical clients.
  func load(
    _ path: String, clients: Int, requests: @escaping (Int) -> [[UInt8]], newlines: Int,
    check: ReplyCheck, warmup: Double, seconds: Double
  ) throws -> LoadResult {
    let scripts = (0..<clients).map {
      ClientScript(requests: requests($0), newlines: newlines, check: check)
    }
    return try runClosedLoop(path: path, scripts: scripts, warmup: warmup, seconds: seconds)[0]
  }

  /// A contender: runs for a window (warm-up, seconds) and returns one result per group.
  typealias Contender = (_ warmup: Double, _ seconds: Double) throws -> [LoadResult]

  /// A contender that runs `scripts`' closed-loop clients against `path`.
  func contender(_ path: String, _ scripts: [ClientScript]) -> Contender {
    { warmup, seconds in
      try runClosedLoop(path: path, scripts: scripts, warmup: warmup, seconds: seconds)
    }
  }

  /// Runs the contenders in turn, a few short windows each (A B C A B C …),
  /// and adds up each one's windows, so load that comes and goes on a shared
  /// machine hits all of them alike and the ratios stay fair. `slices`
  /// windows each (default: a quarter second or more each, 2 to 8).
  func interleave(_ contenders: [Contender], seconds: Double? = nil, slices: Int? = nil) throws
    -> [[LoadResult]]
  {
    let total = seconds ?? options.seconds
    let slices = slices ?? min(8, max(2, Int(total / 0.25)))
    var results: [[LoadResult]?] = Array(repeating: nil, count: contenders.count)
    for slice in 0..<slices {
      let warmup = slice == 0 ? options.warmup : min(0.05, options.warmup)
      for (index, contender) in contenders.enumerated() {
        let window = try contender(warmup, total / Double(slices))
        if let sofar = results[index] {
          results[index] = zip(sofar, window).map { $0.adding($1) }
        } else {
          results[index] = window
        }
      }
    }
    return results.map { $0 ?? [] }
  }

  // MARK: Peers

  func startPeers() {
    guard options.peers else {
      redisMissing = "--no-peers"
      return
    }
    guard let binary = findOnPath("redis-server") else {
      redisMissing = "redis-server not installed"
      return
    }
    // The instructions section starts a Redis of its own for each count.
    guard Options.sections.contains(where: { $0 != "instructions" && options.runs($0) }) else {
      return
    }
    do {
      redis = try RedisServer.start(
        binary: binary, directory: "\(directory)/redis", durable: false)
      redisDurable = try RedisServer.start(
        binary: binary, directory: "\(directory)/redis-aof", durable: true)
    } catch {
      redisMissing = "redis failed to start: \(error)"
      redis?.stop()
      redisDurable?.stop()
      redis = nil
      redisDurable = nil
    }
  }

  /// A row whose reference is a Redis figure, or "not installed".
  func peerRow(_ row: Row, _ figure: Double?, name: String) -> Row {
    var row = row
    row.referenceName = name
    if let figure {
      row.reference = figure
    } else {
      row.referenceName = "\(name): \(redisMissing ?? "not run")"
    }
    return row
  }
}

/// A fixed-size JSON-ish line for payloads (no newline inside; `bytes` long with the newline).
func fillerLine(_ bytes: Int, tag: String) -> [UInt8] {
  var text = "{\"filler\":\"\(tag)"
  let tail = "\"}"
  let pad = max(0, bytes - 1 - text.utf8.count - tail.utf8.count)
  text += String(repeating: "x", count: pad) + tail
  return Array((text + "\n").utf8)
}
