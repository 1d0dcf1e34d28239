import Glibc

/// Apply commands never stall the others (issue 13, SEMANTICS.md rule 16):
/// `get` p99 and the toggle throughput of switches without a command, alone
/// and while one client keeps toggling a switch whose apply command takes
/// 2 s (one command always running), in alternating windows. Each figure
/// against the same without the slow command.
extension Bench {
  static let slowCommandSeconds = 2

  func measureApplyStall() throws {
    let config = "\(directory)/conf-apply"
    try Configs.write(config, total: 1000)
    let applier = "\(directory)/slow-apply"
    // The start's reconcile passes at once; every write then takes 2 s.
    try writeFile(
      applier,
      "#!/bin/sh\n[ \"$SWITCH_CAUSE\" = reconcile ] && exit 0\nsleep \(Self.slowCommandSeconds)\n")
    chmod(applier, 0o755)
    try writeFile(
      "\(config)/switches.d/20-slow.conf",
      "[slow]\nLabel=Slow\nDefault=off\nExecApply=\(applier)\n")
    progress("apply: starting switchd with 1,000 switches, one with a 2 s apply command")
    let daemon = try startDaemon("apply", config: config)
    defer { stopDaemon(daemon) }

    let readers = (0..<4).map { _ in
      ClientScript(requests: [Bench.getRequest], newlines: 1, check: .jsonRPC, group: 0)
    }
    let togglers = (0..<4).map {
      ClientScript(requests: [Bench.toggleRequest($0)], newlines: 1, check: .jsonRPC, group: 1)
    }
    let slow = ClientScript(
      requests: [rpc("toggle", "{\"key\":\"slow\"}")], newlines: 1, check: .jsonRPC, group: 2)
    // Interleaved, three windows each as long as a slow command (a slow
    // toggle still running at the end of a window is waited for, up to
    // 2 s): one window after the other measured the disk's phase as much as
    // the command (a run gave 0.60x, the next 1.00x).
    let seconds = max(options.seconds, Double(3 * Self.slowCommandSeconds))
    progress("apply: gets and toggles of other switches, without and with a slow command")
    let results = try interleave(
      [
        contender(daemon.socket, readers + togglers),
        contender(daemon.socket, readers + togglers + [slow]),
      ], seconds: seconds, slices: 3)
    let without = results[0]
    let with = results[1]
    let note = "\(with[2].answers) slow toggles of 2 s answered meanwhile"
    add(
      Row(
        section: "apply", measure: "get p99 while one switch's command takes 2 s",
        unit: .microseconds, value: with[0].p99, reference: without[0].p99,
        referenceName: "get p99, no command running", target: .ratioAtMost(1.5), note: note))
    add(
      Row(
        section: "apply", measure: "toggles/s of other switches while it runs",
        unit: .perSecond, value: with[1].throughput, reference: without[1].throughput,
        referenceName: "toggles/s, no command running", target: .ratioAtLeast(0.67),
        note: with[1].errors + without[1].errors > 0
          ? "\(with[1].errors + without[1].errors) errors" : ""))
  }
}
