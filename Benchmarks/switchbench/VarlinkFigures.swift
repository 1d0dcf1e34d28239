import Glibc

/// `get` and durable `toggle` through the varlink socket beside JSON-RPC,
/// on the same daemon in the same run, interleaved (issue 25: within 10 %).
/// Both sockets are served by one loop and one writer, so what differs is
/// only the framing and the envelope.
extension Bench {
  static let varlinkGet =
    Array(
      #"{"method":"io.switchd.Switches.Get","parameters":{"key":"wifi"}}"#.utf8) + [0]

  static func varlinkToggle(_ client: Int) -> [UInt8] {
    Array(
      #"{"method":"io.switchd.Switches.Toggle","parameters":{"key":"toggle.c\#(client % Configs.togglers)"}}"#
        .utf8) + [0]
  }

  func measureVarlink(_ daemon: DaemonProcess) throws {
    // The daemon binds it beside its JSON-RPC socket (CONFIG.md VarlinkSocket=).
    let varlinkSocket =
      String(daemon.socket[...daemon.socket.lastIndex(of: "/")!]) + "io.switchd.Switches"
    let calls: [(name: String, counts: [Int], rpc: (Int) -> [UInt8], varlink: (Int) -> [UInt8])] = [
      ("get", [1, 8], { _ in Bench.getRequest }, { _ in Bench.varlinkGet }),
      ("durable toggle", [1, 8], Bench.toggleRequest, Bench.varlinkToggle),
    ]
    for call in calls {
      for count in call.counts {
        progress("\(call.name), \(count) clients: varlink and JSON-RPC")
        let results = try interleave([
          clients(varlinkSocket, count, newlines: 1, check: .varlink) { [call.varlink($0)] },
          clients(daemon.socket, count, newlines: 1, check: .jsonRPC) { [call.rpc($0)] },
        ])
        let (varlink, rpc) = (results[0][0], results[1][0])
        let name = "\(call.name), \(count) client\(count == 1 ? "" : "s")"
        let errors = varlink.errors + rpc.errors
        add(
          Row(
            section: "varlink", measure: "\(name): throughput", unit: .perSecond,
            value: varlink.throughput, reference: rpc.throughput, referenceName: "JSON-RPC",
            target: .ratioAtLeast(0.9), note: errors > 0 ? "\(errors) errors" : ""))
        add(
          Row(
            section: "varlink", measure: "\(name): p50", unit: .microseconds, value: varlink.p50,
            reference: rpc.p50, referenceName: "JSON-RPC"))
      }
    }
  }
}
