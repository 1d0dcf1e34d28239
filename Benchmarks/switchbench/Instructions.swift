/// What a call costs the server, counted rather than timed, so this
/// machine's noise cannot move it (issue 26): instructions (callgrind) and
/// system calls (strace) of every thread, for switchd and Redis driven by
/// the same closed-loop client threads. Each figure is two runs of a fresh
/// server, N and 3N calls: start-up and shutdown cancel out, and
/// per call = (count(3N) - count(N)) / 2N. (Under callgrind the server's
/// threads take turns on one CPU and run ~50x slower: switchd's group
/// commits, like Redis's one AOF flush per event-loop turn, may hold more
/// writes than natively; that is part of the figure for both alike.)
extension Bench {
  /// One counted load: `calls` calls against the server at `socket`.
  private typealias Work = (_ socket: String, _ calls: Int) throws -> Void

  /// The server a count runs on.
  private enum Counted {
    case switchd(config: String)
    /// `durable`: AOF with `appendfsync always`.
    case redis(binary: String, durable: Bool)
  }

  /// One figure: the same work on switchd and on its Redis peer.
  private struct Pair {
    var name: String
    var peerName: String
    var switchd: Work
    var redis: Work
    var redisDurable: Bool
    /// Calls of the shorter run, and what one call delivers (events per change).
    var calls: Int
    var unitsPerCall = 1
    /// What the figure is per.
    var per: String { unitsPerCall > 1 ? "delivered event" : "call" }
    var instructionsTarget: Target
    var syscallsTarget: Target
    /// switchd's configuration when not the main one (`kindsConfig`).
    var config: String? = nil
  }

  func measureInstructions() throws {
    let config = "\(directory)/conf-main"
    try Configs.write(config, total: 1000)
    if getAnswer.isEmpty {
      let daemon = try startDaemon("answer", config: config)
      try learnAnswerSize(daemon)
      stopDaemon(daemon)
    }
    let kinds = "\(directory)/conf-kinds"
    try Configs.write(
      kinds, total: 1000, userScoped: Self.kindWriters, conflicting: Self.kindWriters)
    // As many switches as the longer run toggles, each once.
    let fresh = "\(directory)/conf-fresh"
    let freshCalls = Self.countedCalls(options.countedCalls, Self.kindWriters)
    try Configs.write(fresh, total: 3 * freshCalls + 100)
    let redis = redisMissing == nil ? findOnPath("redis-server") : nil
    let pairs = countedPairs(kindsConfig: kinds, freshConfig: fresh)
    for tool in [CountingTool.callgrind, .strace] {
      if let why = tool.missing {
        add(
          Row(
            section: "instructions", measure: "\(unitName(tool)) per call", unit: .perCall,
            value: nil, note: "not run: \(why)"))
        continue
      }
      for pair in pairs {
        progress("\(tool.rawValue): \(pair.name): switchd\(redis == nil ? "" : ", Redis")")
        let mine = try perCall(
          tool, .switchd(config: pair.config ?? config), pair, pair.switchd)
        let theirs = try redis.map {
          try perCall(tool, .redis(binary: $0, durable: pair.redisDurable), pair, pair.redis)
        }
        add(
          peerRow(
            Row(
              section: "instructions", measure: "\(pair.name): \(unitName(tool)) per \(pair.per)",
              unit: .perCall, value: mine,
              target: tool == .callgrind ? pair.instructionsTarget : pair.syscallsTarget,
              note: "N = \(pair.calls)"),
            theirs, name: pair.peerName))
      }
    }
    try measurePeakMemory(redis: redis)
  }

  private func unitName(_ tool: CountingTool) -> String {
    tool == .callgrind ? "instructions" : "system calls"
  }

  /// The connections of the toggles of other kinds of switch.
  static let kindWriters = 8

  /// toggle/SET and get/GET at 8 and 50 connections, the toggles of two
  /// other kinds of switch at 8 (`kindsConfig`), the toggle of a switch
  /// not changed since the start at 8 (`freshConfig`), a toggle with one
  /// connection, then the fan-out.
  private func countedPairs(kindsConfig: String, freshConfig: String) -> [Pair] {
    let value = switchValue
    var pairs: [Pair] = []
    for connections in [8, 50] {
      let calls = Self.countedCalls(options.countedCalls, connections)
      pairs.append(
        Pair(
          name: "durable toggle, \(connections) connections",
          peerName: "Redis SET, appendfsync always",
          switchd: closedLoop(connections, newlines: 1, check: .jsonRPC) {
            Bench.toggleRequest($0)
          },
          redis: closedLoop(connections, newlines: 1, check: .resp) {
            resp(["SET", "toggle.c\($0)", value])
          },
          redisDurable: true, calls: calls, instructionsTarget: .ratioAtMost(2.0),
          syscallsTarget: .atMostReferencePlus(1)))
      let redisGet = closedLoop(connections, newlines: 2, check: .resp) { _ in
        resp(["GET", "wifi"])
      }
      pairs.append(
        Pair(
          name: "get, \(connections) connections", peerName: "Redis GET",
          switchd: closedLoop(connections, newlines: 1, check: .jsonRPC) { _ in Bench.getRequest },
          redis: { socket, calls in
            _ = try exchange(
              path: socket, String(decoding: resp(["SET", "wifi", value]), as: UTF8.self))
            try redisGet(socket, calls)
          },
          redisDurable: false, calls: calls, instructionsTarget: .ratioAtMost(1.5),
          syscallsTarget: .atMostReferencePlus(1)))
    }
    // switchbench's own toggle writes switches that list no other and are
    // listed by none, the cheapest kind: a switch that conflicts with
    // another (as Wi-Fi with airplane mode) and a user's own value of a
    // user-scope switch take paths of their own (Benchmarks/README.md, stop 42).
    let connections = Self.kindWriters
    let calls = Self.countedCalls(options.countedCalls, connections)
    let kinds: [(name: String, key: (Int) -> String)] = [
      ("a switch that conflicts with another", Configs.radioKey),
      ("a user's own value", Configs.userKey),
    ]
    for kind in kinds {
      pairs.append(
        Pair(
          name: "durable toggle of \(kind.name), \(connections) connections",
          peerName: "Redis SET, appendfsync always",
          switchd: closedLoop(connections, newlines: 1, check: .jsonRPC) {
            rpc("toggle", "{\"key\":\"\(kind.key($0))\"}")
          },
          redis: closedLoop(connections, newlines: 1, check: .resp) {
            resp(["SET", "toggle.c\($0)", value])
          },
          redisDurable: true, calls: calls, instructionsTarget: .ratioAtMost(2.0),
          syscallsTarget: .atMostReferencePlus(1), config: kindsConfig))
    }
    // A switch others follow: a toggle of airplane mode changes it and each
    // radio that conflicts with it, in one call; Redis sets as many keys
    // with one MSET. No target: each call is that many changes, each with
    // its log row and its details (the reason), Benchmarks/README.md, stop 58.
    let followers = Self.kindWriters
    let manyKeys = ["MSET"] + (0...followers).flatMap { ["follow.k\($0)", value] }
    pairs.append(
      Pair(
        name:
          "durable toggle of a switch \(followers) others follow, \(connections) connections",
        peerName: "Redis MSET of \(followers + 1) keys, appendfsync always",
        switchd: closedLoop(connections, newlines: 1, check: .jsonRPC) { _ in
          rpc("toggle", "{\"key\":\"airplane-mode\"}")
        },
        redis: closedLoop(connections, newlines: 1, check: .resp) { _ in resp(manyKeys) },
        redisDurable: true, calls: calls, instructionsTarget: .none, syscallsTarget: .none,
        config: kindsConfig))
    // Each call a switch no call changed before (and, for Redis, a key no
    // call set before): the first change of each switch after a start reads
    // and writes more than a switch's next ones (its chain, Benchmarks/README.md, stop 50).
    pairs.append(
      Pair(
        name: "durable toggle of a switch not changed since the start, \(connections) connections",
        peerName: "Redis SET of a new key, appendfsync always",
        switchd: closedLoopOverKeys(connections, calls: calls, check: .jsonRPC) {
          rpc("toggle", "{\"key\":\"\($0)\"}")
        },
        redis: closedLoopOverKeys(connections, calls: calls, check: .resp) {
          resp(["SET", $0, value])
        },
        redisDurable: true, calls: calls, instructionsTarget: .ratioAtMost(2.0),
        syscallsTarget: .atMostReferencePlus(1), config: freshConfig))
    // One connection: no other writer shares a commit (Benchmarks/README.md, stop 51).
    // No target: SQLite's transaction alone costs more than the gap to 2×.
    pairs.append(
      Pair(
        name: "durable toggle, 1 connection", peerName: "Redis SET, appendfsync always",
        switchd: closedLoop(1, newlines: 1, check: .jsonRPC) { Bench.toggleRequest($0) },
        redis: closedLoop(1, newlines: 1, check: .resp) { resp(["SET", "toggle.c\($0)", value]) },
        redisDurable: true, calls: Self.countedCalls(options.countedCalls, 1),
        instructionsTarget: .none, syscallsTarget: .none))
    let watchers = options.watchers
    pairs.append(
      Pair(
        name: "fan-out to \(count(watchers)) watchers", peerName: "Redis PUBLISH",
        switchd: fanOut(FanOutPlan.switchdWatchers, watchers),
        redis: fanOut(FanOutPlan.redisSubscribers, watchers),
        redisDurable: false, calls: options.countedRounds, unitsPerCall: watchers,
        instructionsTarget: .ratioAtMost(1.0), syscallsTarget: .none))
    return pairs
  }

  /// The calls of a figure's shorter run: about `requested`, the same
  /// number from every connection, and at least 20 from each. At
  /// `--quick` (200) fifty connections made 4 calls each, and what
  /// starting them costs, which differencing cancels only on average,
  /// moved `get` at 50 connections from 4.3k to 7.4k a call between runs.
  static func countedCalls(_ requested: Int, _ connections: Int) -> Int {
    max(20, requested / connections) * connections
  }

  /// `connections` closed-loop clients, each sending its request in turn
  /// until the calls are made (shared equally).
  private func closedLoop(
    _ connections: Int, newlines: Int, check: ReplyCheck,
    request: @escaping (Int) -> [UInt8]
  ) -> Work {
    counted(
      (0..<connections).map {
        ClientScript(requests: [request($0)], newlines: newlines, check: check)
      })
  }

  /// `connections` closed-loop clients whose calls, in the longer run of a
  /// figure of `calls`, each name a filler switch no other call names.
  private func closedLoopOverKeys(
    _ connections: Int, calls: Int, check: ReplyCheck, request: @escaping (String) -> [UInt8]
  ) -> Work {
    let perClient = 3 * calls / connections
    return counted(
      (0..<connections).map { client in
        ClientScript(
          requests: (0..<perClient).map { request(Configs.fillerKey($0 * connections + client)) },
          newlines: 1, check: check)
      })
  }

  /// A client per script, each sending its requests in turn until the
  /// calls are made (shared equally).
  private func counted(_ scripts: [ClientScript]) -> Work {
    { socket, calls in
      try runCounted(
        path: socket, scripts: scripts, requestsPerClient: calls / scripts.count, timeout: 1800)
    }
  }

  /// `watchers` subscribe, then one change at a time, `calls` changes.
  private func fanOut(_ plan: @escaping (String, Int) -> FanOutPlan, _ watchers: Int) -> Work {
    { socket, calls in
      let runner = try FanOutRunner(plan(socket, watchers))
      defer { runner.close() }
      try runRounds([runner], rounds: calls, warmup: 0)
    }
  }

  /// The count per call of `work` on `server`: N and 3N calls, a fresh
  /// server each, differenced. With `--profile`, switchd's instructions
  /// are also listed by function and thread (CallgrindProfile).
  private func perCall(
    _ tool: CountingTool, _ server: Counted, _ pair: Pair, _ work: Work
  ) throws -> Double {
    var profile = false
    if case .switchd = server, tool == .callgrind, options.profile {
      profile = CallgrindProfile.missing == nil
    }
    var totals: [Int] = []
    var outputs: [String] = []
    for calls in [pair.calls, 3 * pair.calls] {
      let (total, output) = try countedRun(tool, server, threads: profile) { try work($0, calls) }
      totals.append(total)
      outputs.append(output)
    }
    let units = 2 * pair.calls * pair.unitsPerCall
    if profile {
      let short = try CallgrindProfile.read(outputs[0], scratch: directory)
      let long = try CallgrindProfile.read(outputs[1], scratch: directory)
      progress("profile: \(pair.name), switchd, inclusive instructions by thread")
      for line in CallgrindProfile.report(
        short: short, long: long, calls: units, per: pair.per, scratch: directory)
      {
        printError(line)
      }
    }
    return Double(totals[1] - totals[0]) / Double(units)
  }

  /// Starts `server` under `tool`, runs `body` on its socket, stops the
  /// server and returns the tool's count of its whole life, and its file.
  private func countedRun(
    _ tool: CountingTool, _ server: Counted, threads: Bool, _ body: (String) throws -> Void
  ) throws -> (total: Int, output: String) {
    countedRuns += 1
    let name = "counted-\(countedRuns)"
    let output = "\(directory)/\(name).\(tool.rawValue)"
    let launcher = tool.launcher(output: output, threads: threads)
    switch server {
    case .switchd(let config):
      let daemon = try startDaemon(name, config: config, launcher: launcher)
      defer {
        stopCounted(daemon.pid, tool: tool)
        daemons.removeAll { $0 === daemon }
      }
      try body(daemon.socket)
    case .redis(let binary, let durable):
      let redis = try RedisServer.start(
        binary: binary, directory: "\(directory)/\(name)", durable: durable, launcher: launcher,
        timeout: 120)
      defer { stopCounted(redis.pid, tool: tool) }
      try body(redis.socket)
    }
    return (try tool.total(output: output), output)
  }
}
