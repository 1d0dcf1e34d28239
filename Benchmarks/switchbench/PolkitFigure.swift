import Glibc

/// A durable `toggle` that polkit authorizes against the same toggle under
/// the builtin rules: one client, the same uid (a human account, which the
/// builtin rules let write), the same run, interleaved (issue 25). The
/// polkit daemon asks a real polkitd on a system bus of the benchmark's own
/// for every call (nothing is cached), so the difference is what a
/// CheckAuthorization round trip costs a write.
extension Bench {
  /// The client's uid: a human account with a name only polkitd's own
  /// /etc/passwd holds (a copy bind-mounted in its namespace).
  static let polkitClientUID: UInt32 = 4301

  func measurePolkit() throws {
    if let why = PolkitBus.unavailable {
      add(
        Row(
          section: "polkit", measure: "durable toggle authorized by polkit", unit: .perSecond,
          value: nil, note: "not run: \(why)"))
      return
    }
    progress("starting dbus-daemon and polkitd")
    // polkitd (its own user) and the client (not root) must reach in.
    chmod(directory, 0o711)
    let bus: PolkitBus
    do {
      bus = try PolkitBus(directory: "\(directory)/polkit-bus", user: Self.polkitClientUID)
    } catch {
      add(
        Row(
          section: "polkit", measure: "durable toggle authorized by polkit", unit: .perSecond,
          value: nil, note: "not run: \(error)"))
      return
    }
    defer { bus.stop() }
    let builtinConfig = "\(directory)/conf-pk-builtin"
    let polkitConfig = "\(directory)/conf-pk-polkit"
    try Configs.write(builtinConfig, total: 100)
    try Configs.write(polkitConfig, total: 100)
    for (config, extra) in [(builtinConfig, ""), (polkitConfig, "Authorization=polkit\n")] {
      // The client is not root: it must be let into the socket.
      let conf = readFile("\(config)/switchd.conf") ?? ""
      try writeFile(
        "\(config)/switchd.conf", conf.replacingSocketMode(with: "SocketMode=0666") + extra)
    }
    let builtin = try startDaemon("pk-builtin", config: builtinConfig)
    let polkit = try startDaemon(
      "pk-polkit", config: polkitConfig,
      environment: makeEnvironment(["DBUS_SYSTEM_BUS_ADDRESS": bus.address]))
    defer {
      stopDaemon(builtin)
      stopDaemon(polkit)
    }
    // The client is not root: it must reach the sockets.
    for path in ["\(directory)/pk-builtin", "\(directory)/pk-polkit"] {
      chmod(path, 0o711)
    }
    for daemon in [builtin, polkit] { chmod(daemon.socket, 0o666) }
    func toggler(_ socket: String) -> Contender {
      { warmup, seconds in
        let script = ClientScript(
          requests: [Bench.toggleRequest(0)], newlines: 1, check: .jsonRPC,
          uid: Bench.polkitClientUID)
        return try runClosedLoop(path: socket, scripts: [script], warmup: warmup, seconds: seconds)
      }
    }
    progress("durable toggle, 1 client: polkit and builtin")
    let results = try interleave([toggler(polkit.socket), toggler(builtin.socket)])
    let (asked, plain) = (results[0][0], results[1][0])
    let errors = asked.errors + plain.errors
    add(
      Row(
        section: "polkit", measure: "durable toggle, 1 client: throughput", unit: .perSecond,
        value: asked.throughput, reference: plain.throughput, referenceName: "builtin",
        note: errors > 0 ? "\(errors) errors" : ""))
    add(
      Row(
        section: "polkit", measure: "durable toggle, 1 client: p50", unit: .microseconds,
        value: asked.p50, reference: plain.p50, referenceName: "builtin",
        note: "+\(fixed(asked.p50 - plain.p50, 0)) us a call: one CheckAuthorization round trip"))
  }
}

extension String {
  fileprivate func replacingSocketMode(with line: String) -> String {
    split(separator: "\n", omittingEmptySubsequences: false)
      .map { $0.hasPrefix("SocketMode=") ? Substring(line) : $0 }.joined(separator: "\n")
  }
}

/// A system bus and Debian's polkitd of the benchmark's own, each in a mount
/// namespace where the benchmark's files cover the fixed paths polkitd
/// reads: the shipped io.switchd.policy, one rule (members of `pkstaff` may
/// write), and /etc/passwd and /etc/group with the client's user in it (the
/// bus refuses a uid it cannot name). Nothing of the machine's is changed.
final class PolkitBus {
  let directory: String
  var address: String { "unix:path=\(directory)/bus" }
  private var pids: [pid_t] = []

  static var unavailable: String? {
    if geteuid() != 0 { return "needs root (a mount namespace for polkitd)" }
    for path in ["/usr/lib/polkit-1/polkitd", "/usr/bin/dbus-daemon", "/usr/bin/unshare"]
    where !isExecutable(path) {
      return "needs \(path)"
    }
    if getpwnam("polkitd") == nil { return "needs the polkitd user" }
    if readFile(policyPath) == nil { return "needs \(policyPath)" }
    return nil
  }

  /// The repository's polkit/io.switchd.policy, from this file's path.
  static let policyPath: String = {
    var path = #filePath
    for _ in 0..<3 { path = String(path[..<path.lastIndex(of: "/")!]) }
    return path + "/polkit/io.switchd.policy"
  }()

  init(directory: String, user: UInt32) throws {
    self.directory = directory
    for sub in ["", "/rules", "/share-rules", "/actions"] {
      try makeDirectory(directory + sub)
      chmod(directory + sub, 0o755)
    }
    let files = [
      ("/actions/io.switchd.policy", readFile(Self.policyPath) ?? ""),
      (
        "/rules/50-bench.rules",
        """
        polkit.addRule(function(action, subject) {
          if (action.id == "io.switchd.write" && subject.isInGroup("pkstaff")) return polkit.Result.YES;
        });
        """
      ),
      (
        "/passwd",
        (readFile("/etc/passwd") ?? "")
          + "pkuser:x:\(user):\(user)::/nonexistent:/usr/sbin/nologin\n"
      ),
      ("/group", (readFile("/etc/group") ?? "") + "pkstaff:x:\(user + 1000):pkuser\n"),
      (
        "/bus.conf",
        """
        <busconfig>
          <type>system</type>
          <listen>\(address)</listen>
          <auth>EXTERNAL</auth>
          <policy context="default">
            <allow user="*"/><allow own="*"/><allow send_destination="*"/>
            <allow receive_sender="*"/><allow send_type="method_return"/>
            <allow send_type="signal"/><allow send_type="error"/>
          </policy>
        </busconfig>
        """
      ),
    ]
    for (name, text) in files {
      try writeFile(directory + name, text)
      chmod(directory + name, 0o644)
    }
    pids.append(
      try start(
        "exec /usr/bin/dbus-daemon --nofork --config-file=\(directory)/bus.conf", log: "bus.log"))
    guard waitFor({ access(directory + "/bus", F_OK) == 0 }) else {
      stop()
      throw BenchError("dbus-daemon did not listen: \(readFile(directory + "/bus.log") ?? "")")
    }
    pids.append(try start("exec /usr/lib/polkit-1/polkitd", log: "polkitd.log"))
    guard waitFor({ (readFile(directory + "/polkitd.log") ?? "").contains("Acquired the name") })
    else {
      stop()
      throw BenchError("polkitd did not start: \(readFile(directory + "/polkitd.log") ?? "")")
    }
  }

  func stop() {
    for pid in pids.reversed() { stopProcess(pid) }
    pids = []
  }

  private func start(_ command: String, log: String) throws -> pid_t {
    let mounts = [
      ("/actions", "/usr/share/polkit-1/actions"), ("/share-rules", "/usr/share/polkit-1/rules.d"),
      ("/rules", "/etc/polkit-1/rules.d"), ("/passwd", "/etc/passwd"), ("/group", "/etc/group"),
    ]
    let script =
      mounts.map { "mount --bind \(directory)\($0.0) \($0.1)" }.joined(separator: " && ")
      + " && " + command
    return try spawn(
      "/usr/bin/unshare", ["-m", "--propagation", "private", "/bin/sh", "-c", script],
      environment: makeEnvironment(["DBUS_SYSTEM_BUS_ADDRESS": address]),
      output: .file(directory + "/" + log), name: log, track: true)
  }

  private func waitFor(_ condition: () -> Bool) -> Bool {
    let deadline = nowSeconds() + 30
    while nowSeconds() < deadline {
      if condition() { return true }
      sleepSeconds(0.01)
    }
    return false
  }
}
