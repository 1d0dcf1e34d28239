import Glibc

/// Pending timers cost nothing measurable (issue 24, figure 8): 10,000
/// timed values (`set` with `for`, an hour) on one switchd, the same writes
/// without a time on another with the same 10,000 switches (so that the
/// memory of the writes themselves, the log and the caches, is on both); `get` and a durable toggle of a switch
/// without a timer cost the same CPU on both, and the timers take at most
/// 10 MiB more resident memory.
extension Bench {
  func measureTimers() throws {
    let total = 10_000
    let config = "\(directory)/conf-timers"
    try Configs.write(config, total: total)
    let none = try startDaemon("timers-none", config: config)
    let many = try startDaemon("timers-many", config: config)
    let timed = Configs.fillerCount(total: total)
    progress("timers: \(count(timed)) timed values of an hour")
    try setValues(many, count: timed, lasting: ",\"for\":3600")
    try setValues(none, count: timed, lasting: "")

    let get = rpc("get", "{\"key\":\"wifi\"}")
    let toggle = rpc("toggle", "{\"key\":\"toggle.c0\"}")
    for (name, request) in [("get", get), ("durable toggle", toggle)] {
      progress("timers: \(name)")
      let (value, base, errors) = try medianCPUPerRequest((many, request), against: (none, request))
      add(
        Row(
          section: "timers", measure: "\(name), \(count(timed)) timers pending: CPU per request",
          unit: .microseconds, value: value, reference: base, referenceName: "no timers",
          target: .ratioWithin(0.2), note: errors > 0 ? "\(errors) errors" : ""))
    }
    let rss = { (daemon: DaemonProcess) in procStatusKiB(daemon.pid, "VmRSS").map(Double.init) }
    add(
      Row(
        section: "timers", measure: "VmRSS with \(count(timed)) timers pending", unit: .kibibytes,
        value: rss(many), reference: rss(none), referenceName: "no timers",
        target: .atMostReferencePlus(10 * 1024)))
    stopDaemon(many)
    stopDaemon(none)
  }

  /// Turns each filler switch on (with `lasting`, its time parameter), 250
  /// pipelined writes at a time, and checks the last one's `expiresAt`.
  private func setValues(_ daemon: DaemonProcess, count: Int, lasting: String) throws {
    var index = 0
    while index < count {
      let batch = min(250, count - index)
      var request = ""
      for offset in 0..<batch {
        let key = Configs.fillerKey(index + offset)
        request += String(
          decoding: rpc("set", "{\"key\":\"\(key)\",\"checked\":true\(lasting)}"),
          as: UTF8.self)
      }
      let answers = try exchange(path: daemon.socket, request, lines: batch)
      guard answers.ranges(of: "\"changed\":true").count == batch else {
        throw BenchError("timed sets were refused: \(answers.prefix(300))")
      }
      index += batch
    }
    let last = try exchange(
      path: daemon.socket,
      String(
        decoding: rpc("get", "{\"key\":\"\(Configs.fillerKey(count - 1))\"}"), as: UTF8.self))
    guard last.contains("\"expiresAt\":null") == lasting.isEmpty else {
      throw BenchError("expiresAt is not what \(lasting) makes: \(last.prefix(300))")
    }
  }
}
