/// Fairness of writes (issue 12): one client toggling alone, then the same
/// client while 50 other connections toggle as fast as they are answered
/// (and then while they pipeline 16 toggles each). Its p99 against its
/// idle p99: a lone writer waits at most for the group commit in flight
/// and its own, never behind a queue that one busy user keeps full.
///
/// All connections are root's here. That is the same for the writer: the
/// writer thread and the loop's hand-over serve writes in the order they
/// arrive, one group per commit, and never look at the uid (only
/// `MaxConnectionsPerUser`, from which root is exempt, does).
extension Bench {
  func measureWriteFairness() throws {
    let config = "\(directory)/conf-fairness"
    try Configs.write(config, total: 1000)
    progress("write fairness: starting switchd with 1,000 switches")
    let daemon = try startDaemon("fairness", config: config)
    defer { stopDaemon(daemon) }
    let lone = ClientScript(
      requests: [Self.toggleRequest(0)], newlines: 1, check: .jsonRPC, group: 1)
    func flood(pipelined depth: Int) -> [ClientScript] {
      (1...50).map { client in
        let line = Self.toggleRequest(client)
        return ClientScript(
          requests: [Array(Array(repeating: line, count: depth).joined())], newlines: depth,
          check: .jsonRPC, group: 0, answersPerSend: depth)
      }
    }
    let contenders: [Contender] = [
      { warmup, seconds in
        try runClosedLoop(path: daemon.socket, scripts: [lone], warmup: warmup, seconds: seconds)
      },
      { warmup, seconds in
        try runClosedLoop(
          path: daemon.socket, scripts: flood(pipelined: 1) + [lone], warmup: warmup,
          seconds: seconds)
      },
      { warmup, seconds in
        try runClosedLoop(
          path: daemon.socket, scripts: flood(pipelined: 16) + [lone], warmup: warmup,
          seconds: seconds)
      },
    ]
    progress("write fairness: a lone toggler, idle and beside 50 busy connections")
    let results = try interleave(contenders)
    let idle = results[0][results[0].count - 1]
    for (index, label) in [(1, "50 connections toggling"), (2, "50 connections pipelining 16")] {
      let flood = results[index][0]
      let alone = results[index][1]
      let errors = idle.errors + flood.errors + alone.errors
      add(
        Row(
          section: "fairness", measure: "lone toggle p99 beside \(label)", unit: .microseconds,
          value: alone.p99, reference: idle.p99, referenceName: "lone toggle p99, idle",
          target: index == 1 ? .ratioAtMost(3) : .none,
          note: "the others: \(count(Int(flood.throughput))) toggles/s"
            + (errors > 0 ? ", \(errors) errors" : "")))
    }
  }
}
