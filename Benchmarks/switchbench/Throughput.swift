import Glibc

/// `get`, and `get` while writers commit (durable `toggle`: DurableToggle.swift).
extension Bench {
  static let getRequest = rpc("get", "{\"key\":\"wifi\"}")

  /// Reads switchd's `get wifi` answer (its size is the echo floor's).
  func learnAnswerSize(_ daemon: DaemonProcess) throws {
    let answer = try exchange(
      path: daemon.socket, String(decoding: Bench.getRequest, as: UTF8.self))
    guard answer.contains("\"result\":") else { throw BenchError("get wifi failed: \(answer)") }
    getAnswer = Array(answer.utf8)
  }

  /// The switch object of the `get` answer (what Redis stores as the value).
  var switchValue: String {
    var text = String(decoding: getAnswer, as: UTF8.self)
    while text.hasSuffix("\n") { text.removeLast() }
    guard let start = text.firstRange(of: "\"result\":")?.upperBound, text.hasSuffix("}") else {
      return text
    }
    return String(text[start..<text.index(before: text.endIndex)])
  }

  /// A contender of `clients` identical closed-loop clients; with `server`,
  /// the CPU that process used during the run is recorded too, and with
  /// `flushCounts` (FlushDelay's) its flushes.
  func clients(
    _ path: String, _ count: Int, newlines: Int, check: ReplyCheck, server: pid_t? = nil,
    flushCounts: String? = nil, requests: @escaping (Int) -> [[UInt8]]
  ) -> Contender {
    { warmup, seconds in
      let before = server.flatMap(processCPUSeconds)
      let flushesBefore = flushCounts.flatMap { counts in
        server.flatMap { FlushDelay.flushCount(of: $0, counts: counts) }
      }
      var result = try self.load(
        path, clients: count, requests: requests, newlines: newlines, check: check,
        warmup: warmup, seconds: seconds)
      if let server, let before, let after = processCPUSeconds(server) {
        result.serverCPU = after - before
      }
      if let server, let flushCounts, let flushesBefore,
        let after = FlushDelay.flushCount(of: server, counts: flushCounts)
      {
        result.serverFlushes = Int(after - flushesBefore)
      }
      return [result]
    }
  }

  func measureGet(_ daemon: DaemonProcess) throws {
    if echo == nil {
      echo = try EchoFloor(
        path: "\(directory)/echo.sock", replyBytes: getAnswer.count, eventBytes: 470)
    }
    if let redis { try redis.command(["SET", "wifi", switchValue]) }
    for count in [1, 8, 64] {
      progress("get, \(count) clients: switchd, echo floor\(redis == nil ? "" : ", Redis GET")")
      var contenders = [
        clients(daemon.socket, count, newlines: 1, check: .jsonRPC, server: daemon.pid) { _ in
          [Bench.getRequest]
        },
        clients(echo!.path, count, newlines: 1, check: .jsonRPC, server: echo!.pid) { _ in
          [Bench.getRequest]
        },
      ]
      if let redis {
        contenders.append(
          clients(redis.socket, count, newlines: 2, check: .resp, server: redis.pid) { _ in
            [resp(["GET", "wifi"])]
          })
      }
      let results = try interleave(contenders)
      let switchd = results[0][0]
      let floor = results[1][0]
      let peer = results.count > 2 ? results[2][0] : nil
      let name = "get, \(count) client\(count == 1 ? "" : "s")"
      let errors = switchd.errors > 0 ? "\(switchd.errors) errors" : ""
      add(
        Row(
          section: "get", measure: "\(name): throughput", unit: .perSecond,
          value: switchd.throughput, reference: floor.throughput, referenceName: "echo",
          note: errors))
      add(
        peerRow(
          Row(
            section: "get", measure: "\(name): throughput", unit: .perSecond,
            value: switchd.throughput, target: count <= 8 ? .ratioAtLeast(0.8) : .none),
          peer?.throughput, name: "Redis GET"))
      for (label, value, reference) in [
        ("p50", switchd.p50, floor.p50), ("p99", switchd.p99, floor.p99),
      ] {
        add(
          Row(
            section: "get", measure: "\(name): \(label)", unit: .microseconds, value: value,
            reference: reference, referenceName: "echo"))
      }
      if let peer {
        add(
          Row(
            section: "get", measure: "\(name): p99", unit: .microseconds, value: switchd.p99,
            reference: peer.p99, referenceName: "Redis GET"))
      }
      if count == 8 {
        add(
          Row(
            section: "get", measure: "\(name): server CPU per request", unit: .microseconds,
            value: switchd.cpuMicrosecondsPerRequest,
            reference: floor.cpuMicrosecondsPerRequest, referenceName: "echo"))
        add(
          peerRow(
            Row(
              section: "get", measure: "\(name): server CPU per request", unit: .microseconds,
              value: switchd.cpuMicrosecondsPerRequest),
            peer?.cpuMicrosecondsPerRequest, name: "Redis GET"))
      }
    }
  }

  /// One reader's `get` latency while 4 clients toggle continuously.
  func measureMixed(_ daemon: DaemonProcess) throws {
    progress("get while 4 clients toggle: switchd\(redisDurable == nil ? "" : ", Redis")")
    func mixed(
      _ path: String, get: [UInt8], getLines: Int, check: ReplyCheck,
      write: @escaping (Int) -> [UInt8]
    ) -> Contender {
      let scripts =
        [ClientScript(requests: [get], newlines: getLines, check: check, group: 0)]
        + (0..<4).map {
          ClientScript(requests: [write($0)], newlines: 1, check: check, group: 1)
        }
      return { warmup, seconds in
        try runClosedLoop(path: path, scripts: scripts, warmup: warmup, seconds: seconds)
      }
    }
    var contenders = [
      mixed(
        daemon.socket, get: Bench.getRequest, getLines: 1, check: .jsonRPC,
        write: Bench.toggleRequest)
    ]
    if let redisDurable {
      try redisDurable.command(["SET", "wifi", switchValue])
      let value = switchValue
      contenders.append(
        mixed(
          redisDurable.socket, get: resp(["GET", "wifi"]), getLines: 2, check: .resp,
          write: { resp(["SET", "toggle.c\($0)", value]) }))
    }
    let results = try interleave(contenders)
    let switchd = results[0]
    let peer = results.count > 1 ? results[1] : nil
    add(
      peerRow(
        Row(
          section: "mixed", measure: "get p99, 1 reader + 4 writers", unit: .microseconds,
          value: switchd[0].p99, target: .valueAtMost(2000),
          note: "p50 \(format(switchd[0].p50, .microseconds))"),
        peer?[0].p99, name: "Redis GET + fsync SET"))
    add(
      peerRow(
        Row(
          section: "mixed", measure: "toggle throughput alongside", unit: .perSecond,
          value: switchd[1].throughput),
        peer?[1].throughput, name: "Redis SET fsync"))
  }
}
