import Glibc

/// Peak resident memory (VmHWM) with 10,000 switches and 1,000 watchers
/// against Redis holding the same 10,000 keys, each a switch object of the
/// size switchd answers with (and, a row with no target, each the integer
/// 1), and 1,000 subscribers; both then deliver the same changes to every
/// watcher (issue 26).
extension Bench {
  func measurePeakMemory(redis binary: String?) throws {
    let total = options.startupSwitches
    let watchers = options.watchers
    let config = "\(directory)/conf-memory"
    try Configs.write(config, total: total)
    progress("peak RSS: switchd with \(count(total)) switches and \(count(watchers)) watchers")
    let daemon = try startDaemon("memory", config: config)
    let template = try switchObject(daemon, key: Configs.fillerKey(0))
    let switchdRSS = try peakAfterFanOut(
      pid: daemon.pid, .switchdWatchers(path: daemon.socket, watchers: watchers))
    stopDaemon(daemon)
    // The same watchers each asking for every switch, all at once: a
    // snapshot of 5.3 MB each, which the queues share (one copy, not 1,000).
    progress("peak RSS: switchd with \(count(watchers)) watchers of every switch")
    let everything = try startDaemon("memory-everything", config: config)
    let everythingRSS = try peakAfterFanOut(
      pid: everything.pid,
      .switchdWatchersOfEverything(path: everything.socket, watchers: watchers))
    stopDaemon(everything)

    // The peer twice: each key holding the switch's object (the same
    // data), and each holding "1" (Redis shares one object for small
    // integers, so the values cost nothing: the least a Redis with these
    // keys can take, what a check that only SETs the keys would see).
    var redisRSS: (objects: Int?, integers: Int?) = (nil, nil)
    if let binary {
      progress("peak RSS: Redis with \(count(total)) keys and \(count(watchers)) subscribers")
      redisRSS.objects = try redisPeak(binary, "redis-memory", template: template)
      redisRSS.integers = try redisPeak(binary, "redis-memory-integers", template: "1")
    }
    let row = Row(
      section: "instructions",
      measure: "peak RSS, \(count(total)) switches + \(count(watchers)) watchers",
      unit: .kibibytes, value: switchdRSS.map(Double.init), target: .ratioAtMost(1.0),
      note: "\(options.countedRounds) changes")
    add(
      peerRow(
        row, redisRSS.objects.map(Double.init),
        name: "Redis, same keys + subscribers, appendfsync always"))
    var keysOnly = row
    keysOnly.target = .none
    add(
      peerRow(
        keysOnly, redisRSS.integers.map(Double.init), name: "Redis, the keys each holding 1"))
    var ofEverything = row
    ofEverything.measure =
      "peak RSS, \(count(total)) switches + \(count(watchers)) watchers of every switch"
    ofEverything.value = everythingRSS.map(Double.init)
    add(
      peerRow(
        ofEverything, redisRSS.objects.map(Double.init),
        name: "Redis, same keys + subscribers, appendfsync always"))
  }

  /// Redis's VmHWM with the switches' keys, each holding `template` made
  /// its own (`load`), once its subscribers received the changes.
  private func redisPeak(_ binary: String, _ folder: String, template: String) throws -> Int? {
    let redis = try RedisServer.start(
      binary: binary, directory: "\(directory)/\(folder)", durable: true)
    defer { redis.stop() }
    try load(redis, keys: switchKeys(total: options.startupSwitches), template: template)
    return try peakAfterFanOut(
      pid: redis.pid, .redisSubscribers(path: redis.socket, watchers: options.watchers))
  }

  /// Every key of a config of `total` switches (Configs.write).
  private func switchKeys(total: Int) -> [String] {
    ["wifi"] + (0..<Configs.togglers).map { "toggle.c\($0)" }
      + (0..<Configs.fillerCount(total: total)).map(Configs.fillerKey)
  }

  /// `key`'s Switch object as switchd answers `get` with it.
  private func switchObject(_ daemon: DaemonProcess, key: String) throws -> String {
    let answer = try exchange(
      path: daemon.socket, String(decoding: rpc("get", "{\"key\":\"\(key)\"}"), as: UTF8.self))
    guard let start = answer.firstRange(of: "\"result\":")?.upperBound,
      let end = answer.lastIndex(of: "}")
    else { throw BenchError("get \(key) failed: \(answer)") }
    return String(answer[start..<end])
  }

  /// Stores each key with `template` (the first filler switch's object)
  /// made its own: its key and label put in. A hundred keys per MSET, so no
  /// loading buffer outgrows what the subscribers use.
  private func load(_ redis: RedisServer, keys: [String], template: String) throws {
    let key = Configs.fillerKey(0)
    var parts = ["MSET"]
    for (index, name) in keys.enumerated() {
      parts.append(name)
      parts.append(
        template.replacing("\"\(key)\"", with: "\"\(name)\"").replacing(
          "Benchmark switch 0\"", with: "Benchmark switch \(index)\""))
      if parts.count > 200 || index == keys.count - 1 {
        let reply = try redis.command(parts)
        guard reply.hasPrefix("+OK") else { throw BenchError("MSET: \(reply)") }
        parts = ["MSET"]
      }
    }
    let size = try redis.command(["DBSIZE"])
    guard size.hasPrefix(":\(keys.count)") else { throw BenchError("DBSIZE: \(size)") }
  }

  /// VmHWM in KiB of `pid` once the plan's watchers have subscribed and
  /// received `countedRounds` changes.
  private func peakAfterFanOut(pid: pid_t, _ plan: FanOutPlan) throws -> Int? {
    let runner = try FanOutRunner(plan)
    defer { runner.close() }
    try runRounds([runner], rounds: options.countedRounds, warmup: 0)
    return procStatusKiB(pid, "VmHWM")
  }
}
