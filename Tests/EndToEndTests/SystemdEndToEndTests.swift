import Glibc
import SwitchSystem
import SwitchTestSupport
import Testing

/// switchd as a systemd service, without systemd as PID 1: the sd_notify
/// datagrams a `NotifyListener` receives in systemd's place, socket
/// activation through `systemd-socket-activate`, and the journald log format.
/// Serialized: each test starts its own daemon and the machine has two cores.
@Suite(.serialized) struct SystemdEndToEndTests {
  static let activator = "/usr/bin/systemd-socket-activate"

  /// Starts switchd on `daemon`'s configuration, socket and database, with
  /// an environment of NOTIFY_SOCKET and `environment` only.
  private func start(
    _ daemon: DaemonFixture, notify: NotifyListener, environment: [String: String] = [:]
  ) throws -> Child {
    var variables = environment
    variables["NOTIFY_SOCKET"] = notify.address
    return try daemon.launch(environment: variables)
  }

  /// Starts switchd through `systemd-socket-activate`, listening on
  /// `sockets` (path, LISTEN_FDNAMES name) and telling a `NotifyListener`.
  static func activate(
    _ daemon: DaemonFixture, sockets: [(path: String, name: String)], socket: String
  ) throws -> (Child, NotifyListener) {
    let notify = try NotifyListener(path: daemon.directory + "/notify.sock")
    let child = try daemon.launch(
      environment: [:], socket: socket,
      through: [activator] + sockets.flatMap { ["-l", $0.path] } + [
        "--fdname=" + sockets.map(\.name).joined(separator: ":"),
        "-E", "NOTIFY_SOCKET=\(notify.address)",
      ])
    return (child, notify)
  }

  // MARK: Readiness and stopping

  @Test func readyComesOnceTheSocketAcceptsThenReloadAndStopAreAnnounced() throws {
    let daemon = try DaemonFixture(start: false)
    let notify = try NotifyListener(path: daemon.directory + "/notify.sock")
    let child = try start(daemon, notify: notify)
    let log = { daemon.log }

    try notify.waitFor("READY=1", child: child, log: log)
    // One attempt, no retry: READY=1 promises a socket that accepts and an
    // open database.
    #expect(connectsAtOnce(daemon.socketPath), "READY=1 came before the socket accepted")
    #expect(pathExists(daemon.databasePath), "READY=1 came before the database existed")
    let status = try #require(try notify.waitFor(prefix: "STATUS=", child: child, log: log).last)
    #expect(status.line.contains("5 switches"), "\(status.line)")
    #expect(try daemon.client().result("status")["switches"]?.int64Value == 5)

    // SIGHUP: RELOADING=1, then READY=1 once the new configuration is in use.
    child.signal(SIGHUP)
    try notify.waitFor("RELOADING=1", child: child, log: log)
    try notify.waitFor("READY=1", child: child, log: log)

    // SIGTERM: STOPPING=1 at once, then a clean exit that removes the
    // socket it bound (it was not socket-activated).
    child.signal(SIGTERM)
    let stopping = try notify.waitFor("STOPPING=1", child: child, log: log)
    #expect(!stopping.contains { $0.line == "READY=1" })
    #expect(child.wait(seconds: 20) == 0, "\(daemon.log)")
    #expect(!pathExists(daemon.socketPath))

    // systemd accepts messages from the main process only (NotifyAccess=main).
    let senders = Set(notify.drain().compactMap(\.pid) + stopping.compactMap(\.pid))
    #expect(senders.isSubset(of: [child.pid]), "senders \(senders), daemon \(child.pid)")
  }

  @Test func anAbstractNotifySocketWorksToo() throws {
    let daemon = try DaemonFixture(start: false)
    let name = "switchd-e2e-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
    let notify = try NotifyListener(abstractName: name)
    #expect(notify.address.hasPrefix("@"))
    let child = try start(daemon, notify: notify)

    let ready = try notify.waitFor("READY=1", child: child, log: { daemon.log })
    #expect(ready.allSatisfy { $0.pid == child.pid })
    #expect(connectsAtOnce(daemon.socketPath))
    child.signal(SIGTERM)
    try notify.waitFor("STOPPING=1", child: child, log: { daemon.log })
    #expect(child.wait(seconds: 20) == 0, "\(daemon.log)")
  }

  /// A refused reload (invalid configuration) keeps the running one, and must
  /// still end the reload with READY=1: otherwise systemd keeps the unit in
  /// "reloading" until its timeout.
  @Test func aRefusedReloadStillEndsWithReady() throws {
    let daemon = try DaemonFixture(start: false)
    let notify = try NotifyListener(path: daemon.directory + "/notify.sock")
    let child = try start(daemon, notify: notify)
    try notify.waitFor("READY=1", child: child, log: { daemon.log })

    try daemon.writeFile("switches.d/10-test.conf", "[wifi\nLabel=Wi-Fi\n")
    child.signal(SIGHUP)
    try notify.waitFor("RELOADING=1", child: child, log: { daemon.log })
    try notify.waitFor("READY=1", child: child, log: { daemon.log })
    #expect(try daemon.client().result("status")["switches"]?.int64Value == 5)

    child.signal(SIGTERM)
    #expect(child.wait(seconds: 20) == 0, "\(daemon.log)")
  }

  // MARK: Watchdog

  /// WATCHDOG_USEC=200000: a ping every 0.1 s. SIGSTOP freezes the process
  /// (a loop that cannot run) and the pings stop; SIGCONT resumes them.
  ///
  /// No lower bound on the rate: a loaded machine may delay any ping. The
  /// upper bound is over the whole time since start, which only grows when
  /// this test is the one delayed.
  @Test func watchdogPingsAtHalfTheIntervalAndOnlyWhileTheLoopRuns() throws {
    let daemon = try DaemonFixture(start: false)
    let notify = try NotifyListener(path: daemon.directory + "/notify.sock")
    let startedAt = monotonicSeconds()
    let child = try start(daemon, notify: notify, environment: ["WATCHDOG_USEC": "200000"])
    let log = { daemon.log }
    try notify.waitFor("READY=1", child: child, log: log)

    var running: [NotifyListener.Message] = []
    for _ in 0..<3 { running += try notify.waitFor("WATCHDOG=1", child: child, log: log) }
    running += notify.drain()
    let pings = running.filter { $0.line == "WATCHDOG=1" }
    // At most one per 0.1 s since it started (twice that, plus two, as slack
    // for timer rounding): a loop that pinged on every wake-up would send far more.
    let allowed = Int((monotonicSeconds() - startedAt) / 0.1 * 2) + 2
    #expect(pings.count <= allowed, "\(pings.count) WATCHDOG=1, \(allowed) allowed: too often")
    #expect(pings.allSatisfy { $0.pid == child.pid })

    child.signal(SIGSTOP)
    #expect(pollUntil(seconds: 20) { child.state == "T" })
    _ = notify.drain()  // sent before it stopped
    let frozen = notify.collect(for: 0.5).filter { $0.line == "WATCHDOG=1" }
    #expect(frozen.isEmpty, "\(frozen.count) WATCHDOG=1 from a stopped process")

    child.signal(SIGCONT)
    try notify.waitFor("WATCHDOG=1", child: child, log: log)

    child.signal(SIGTERM)
    try notify.waitFor("STOPPING=1", child: child, log: log)
    #expect(child.wait(seconds: 20) == 0, "\(daemon.log)")
  }

  /// WATCHDOG_PID names another process (the watchdog is meant for it): no pings.
  @Test func noWatchdogPingsWhenWatchdogPIDIsAnotherProcess() throws {
    let daemon = try DaemonFixture(start: false)
    let notify = try NotifyListener(path: daemon.directory + "/notify.sock")
    let child = try start(
      daemon, notify: notify, environment: ["WATCHDOG_USEC": "200000", "WATCHDOG_PID": "1"])
    try notify.waitFor("READY=1", child: child, log: { daemon.log })
    let pings = notify.collect(for: 0.4).filter { $0.line == "WATCHDOG=1" }
    #expect(pings.isEmpty)
    child.signal(SIGTERM)
    #expect(child.wait(seconds: 20) == 0, "\(daemon.log)")
  }

  // MARK: Socket activation

  /// `systemd-socket-activate` binds the socket, waits for a connection, and
  /// execs switchd in its own process (same pid) with LISTEN_PID/LISTEN_FDS
  /// and the socket as fd 3. switchd must serve that descriptor and never bind
  /// or remove a path: `--socket` names either the activated path (as
  /// Socket= does under switchd.socket), which must survive switchd's exit
  /// as the same socket, or another path, which must never appear.
  @Test(
    .enabled(
      if: access(SystemdEndToEndTests.activator, X_OK) == 0,
      "systemd-socket-activate is not installed (apt-get install systemd)"),
    arguments: [true, false])
  func socketActivationServesThePassedSocketAndNeverTouchesAPath(socketFlagIsActivatedPath: Bool)
    throws
  {
    let daemon = try DaemonFixture(start: false)
    let activated = daemon.directory + "/activated.sock"
    let other = daemon.directory + "/other/switchd.sock"
    let notify = try NotifyListener(path: daemon.directory + "/notify.sock")
    let child = try daemon.launch(
      environment: [:], socket: socketFlagIsActivatedPath ? activated : other,
      through: [Self.activator, "-l", activated, "-E", "NOTIFY_SOCKET=\(notify.address)"])
    let log = { daemon.log }

    let bound = pollUntil(seconds: 20) { isSocketFile(activated) || child.hasExited }
    #expect(!child.hasExited, "systemd-socket-activate exited: \(daemon.log)")
    try #require(bound && isSocketFile(activated), "no socket at \(activated): \(daemon.log)")
    let boundInode = inode(of: activated)
    // The first connection starts switchd; it is in the backlog of the
    // passed socket when switchd starts, and is answered.
    // The activator binds before it listens: a connect in between is
    // refused, so it is retried until the deadline.
    var connected: RPCClient?
    _ = pollUntil(seconds: 20) {
      connected = try? RPCClient(socketPath: activated, receiveTimeout: 10)
      return connected != nil
    }
    let first = try #require(connected, "cannot connect to \(activated): \(daemon.log)")
    let ready = try notify.waitFor("READY=1", child: child, log: log)
    #expect(ready.allSatisfy { $0.pid == child.pid }, "switchd must run in the activator's pid")
    let status = try first.result("status")
    #expect(status["switches"]?.int64Value == 5)
    #expect(status["socket"]?.stringValue == activated)

    // More connections: the passed descriptor must have been made
    // non-blocking, or accept() would have stalled the loop.
    let more = try (0..<3).map { _ in try RPCClient(socketPath: activated, receiveTimeout: 10) }
    for client in more {
      #expect(try client.result("get", #"{"key":"wifi"}"#)["checked"]?.boolValue == true)
    }

    child.signal(SIGTERM)
    try notify.waitFor("STOPPING=1", child: child, log: log)
    #expect(child.wait(seconds: 20) == 0, "\(daemon.log)")
    #expect(isSocketFile(activated), "switchd removed the socket path it did not bind")
    #expect(inode(of: activated) == boundInode, "switchd replaced the activated socket file")
    #expect(!pathExists(other), "switchd bound --socket although it was socket-activated")
    #expect(!pathExists(daemon.directory + "/other"), "switchd created the --socket directory")
    #expect(daemon.log.contains("socket-activated"), "\(daemon.log)")
  }

  /// Under activation the units decide the sockets: switchd.conf's
  /// `SocketMode=` and an empty `VarlinkSocket=` cannot apply to sockets
  /// systemd made, and switchd says so in its log at start, with what to do,
  /// instead of ignoring them in silence. Both sockets are still served.
  @Test(
    .enabled(
      if: access(SystemdEndToEndTests.activator, X_OK) == 0,
      "systemd-socket-activate is not installed (apt-get install systemd)"))
  func settingsTheActivatedSocketsCannotTakeAreNamedAtStart() throws {
    let daemon = try DaemonFixture(
      daemonConf: "[Daemon]\nAdminGroup=\nSocketMode=0600\nVarlinkSocket=\n", start: false)
    let jsonRPC = daemon.directory + "/activated.sock"
    let varlink = daemon.directory + "/varlink.sock"
    let (child, notify) = try Self.activate(
      daemon, sockets: [(jsonRPC, "switchd"), (varlink, "varlink")], socket: jsonRPC)
    let log = { daemon.log }
    let bound = pollUntil(seconds: 20) {
      (isSocketFile(jsonRPC) && isSocketFile(varlink)) || child.hasExited
    }
    try #require(bound && !child.hasExited, "the activator did not bind: \(daemon.log)")
    // Whatever the umask gave them: the units' mode, not switchd.conf's.
    #expect(chmod(jsonRPC, 0o644) == 0 && chmod(varlink, 0o644) == 0)
    var connected: RPCClient?
    _ = pollUntil(seconds: 20) {
      connected = try? RPCClient(socketPath: jsonRPC, receiveTimeout: 10)
      return connected != nil
    }
    let client = try #require(connected, "cannot connect to \(jsonRPC): \(daemon.log)")
    try notify.waitFor("READY=1", child: child, log: log)
    #expect(try client.result("get", #"{"key":"wifi"}"#)["checked"]?.boolValue == true)
    for line in [
      "switchd.socket makes \(jsonRPC) 0644, looser than SocketMode=0600 in switchd.conf, "
        + "which is not used under socket activation; set SocketMode= for switchd.socket "
        + "(systemctl edit switchd.socket)",
      "switchd-varlink.socket makes \(varlink) 0644, looser than SocketMode=0600 in "
        + "switchd.conf, which is not used under socket activation; set SocketMode= for "
        + "switchd-varlink.socket (systemctl edit switchd-varlink.socket)",
      "VarlinkSocket= is empty, but systemd passed a varlink socket (\(varlink)), "
        + "which is served; for none, systemctl disable --now switchd-varlink.socket",
    ] {
      #expect(daemon.log.contains("<4>" + line), "\(daemon.log)")
    }
    child.signal(SIGTERM)
    try notify.waitFor("STOPPING=1", child: child, log: log)
    #expect(child.wait(seconds: 20) == 0, "\(daemon.log)")
  }

  // MARK: Logging

  /// Log lines for journald: `<N>` first, no timestamp (journald adds one);
  /// the start line is info and says what was loaded from where.
  @Test func theStartLineSaysWhatWasLoadedAndEveryLineHasAPriority() throws {
    let policy = """
      [bluetooth]
      ReadOnly=yes
      Checked=off
      Reason=Bluetooth is turned off by your organisation.

      [email.marketing]
      Disabled=yes
      Reason=Marketing email is not offered on managed devices.
      """
    let daemon = try DaemonFixture(policies: ["50-corp.conf": policy])
    #expect(daemon.stop() == 0)
    let version =
      runProcess([Products.path("switchd"), "--version"]).stdout
      .split(separator: " ").last.map { $0.trimmingSpaces } ?? ""
    #expect(!version.isEmpty)

    let lines = daemon.log.split(separator: "\n").map(String.init)
    let start = try #require(
      lines.first { $0.contains(daemon.socketPath) }, "no start line naming the socket: \(lines)")
    #expect(start.hasPrefix("<6>"), "\(start)")
    #expect(start.contains(version), "no version \(version) in: \(start)")
    #expect(start.contains(daemon.databasePath), "\(start)")
    #expect(start.contains("5 switches"), "\(start)")
    #expect(start.contains("2 policies"), "\(start)")

    for line in lines {
      let bytes = Array(line.utf8)
      let prefixed =
        bytes.count > 3 && bytes[0] == UInt8(ascii: "<") && bytes[2] == UInt8(ascii: ">")
        && (UInt8(ascii: "0")...UInt8(ascii: "7")).contains(bytes[1])
      #expect(prefixed, "no <N> priority prefix: \(line)")
      // A timestamp would start with a digit (2024-.., 12:00:..) or a bracket.
      let first = bytes.count > 3 ? bytes[3] : 0
      #expect(
        !(UInt8(ascii: "0")...UInt8(ascii: "9")).contains(first) && first != UInt8(ascii: "["),
        "a timestamp after the prefix: \(line)")
    }
  }

  @Test func logLevelWarningDropsNoticeAndInfoLines() throws {
    let daemon = try DaemonFixture(daemonConf: "[Daemon]\nAdminGroup=\nLogLevel=warning\n")
    #expect(try daemon.client().result("status")["switches"]?.int64Value == 5)
    #expect(daemon.stop() == 0)
    for line in daemon.log.split(separator: "\n") {
      #expect(["<0>", "<1>", "<2>", "<3>", "<4>"].contains(line.prefix(3)), "\(line)")
    }
  }
}

extension Substring {
  fileprivate var trimmingSpaces: String {
    String(drop { $0 == " " || $0 == "\n" }.reversed().drop { $0 == " " || $0 == "\n" }.reversed())
  }
}
