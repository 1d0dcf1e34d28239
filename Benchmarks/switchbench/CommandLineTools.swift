import Glibc

/// `switchctl get/set` process time, alternately with `gsettings get/set`
/// on the dconf backend in one private D-Bus session.
extension Bench {
  func measureCommandLine(_ daemon: DaemonProcess) throws {
    var session: GSettingsSession?
    var missing = options.peers ? GSettingsSession.missing() : "--no-peers"
    if missing == nil {
      progress("starting a D-Bus session for gsettings (dconf)")
      do {
        session = try GSettingsSession.start(directory: "\(directory)/gsettings")
      } catch {
        missing = "gsettings failed: \(error)"
      }
    }
    defer { session?.stop() }
    let ctlEnvironment = session?.environment
    let socketArguments = ["--socket", daemon.socket]
    var ctl: [String: [Double]] = ["get": [], "set": []]
    var peer: [String: [Double]] = ["get": [], "set": []]
    var failures = 0
    for verb in ["get", "set"] {
      progress("switchctl \(verb)\(session == nil ? "" : " and gsettings \(verb)"), alternately")
      let warmup = 5
      for i in 0..<(warmup + options.spawns) {
        let on = i % 2 == 0
        let ctlArguments =
          verb == "get" ? ["get", "wifi"] : ["set", "wifi", on ? "on" : "off"]
        let (status, seconds) = try runTimed(
          switchctl, socketArguments + ctlArguments, environment: ctlEnvironment)
        if status != 0 { failures += 1 }
        if i >= warmup { ctl[verb]!.append(seconds) }
        if let session {
          let peerArguments =
            verb == "get"
            ? ["get", session.schema, session.key]
            : ["set", session.schema, session.key, on ? "true" : "false"]
          let (peerStatus, peerSeconds) = try runTimed(
            session.gsettings, peerArguments, environment: session.environment)
          if peerStatus != 0 { failures += 1 }
          if i >= warmup { peer[verb]!.append(peerSeconds) }
        }
      }
    }
    let note = failures > 0 ? "\(failures) runs failed" : ""
    for verb in ["get", "set"] {
      let mine = ctl[verb]!.sorted()
      let theirs = peer[verb]!.sorted()
      let name = session.map { "gsettings \(verb) (\($0.schema))" } ?? "gsettings \(verb)"
      var median = Row(
        section: "cli", measure: "switchctl \(verb): median", unit: .seconds,
        value: quantile(mine, 0.5), referenceName: name, target: .ratioBelowOne, note: note)
      var p90 = Row(
        section: "cli", measure: "switchctl \(verb): p90", unit: .seconds,
        value: quantile(mine, 0.9), referenceName: name)
      if session != nil {
        median.reference = quantile(theirs, 0.5)
        p90.reference = quantile(theirs, 0.9)
      } else {
        median.referenceName = missing ?? "not run"
      }
      add(median)
      add(p90)
    }
  }
}

/// The `q` quantile (0...1) of sorted values.
func quantile(_ sorted: [Double], _ q: Double) -> Double? {
  guard !sorted.isEmpty else { return nil }
  return sorted[min(sorted.count - 1, Int((q * Double(sorted.count - 1)).rounded()))]
}
