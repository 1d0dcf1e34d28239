import Glibc
import SwitchSystem

/// A real `switchd` in its own temp directory: config, socket and database
/// passed by flag; readiness waited for by connecting, never by sleeping;
/// stopped with SIGTERM, then SIGKILL after a deadline. The one way every
/// test starts a daemon: plainly (`start`), as a service manager would
/// (`launch` with an environment, or through a wrapper such as
/// systemd-socket-activate), or expecting a refusal (`startExpectingRefusal`);
/// on the test's own files (`init`) or on the shipped ones (`shipped`).
public final class DaemonFixture {
  public let directory: String
  public let configDirectory: String
  public let socketPath: String
  public let databasePath: String
  public let logPath: String
  /// The running daemon (or its wrapper), if one was started and not stopped.
  public private(set) var process: Child?
  /// Its pid, 0 when none runs.
  public var pid: pid_t { process?.pid ?? 0 }

  /// Generous for a loaded two-core machine under a sanitizer.
  public static let startSeconds = 60.0
  public static let stopSeconds = 30.0

  /// The shipped example schema, for tests that need a few switches.
  public static let standardSwitches = """
    [wifi]
    Label=Wi-Fi
    Description=Connect to wireless networks.
    Default=on
    CheckedIcon=wifi
    UncheckedIcon=wifi_off

    [bluetooth]
    Label=Bluetooth
    Default=off

    [notifications.chat]
    Label=Chat notifications
    Default=on

    [notifications.mail]
    Label=Mail notifications
    Default=on

    [email.marketing]
    Label=Marketing emails
    Description=Receive emails about new products.
    Default=on
    """

  /// The repository's Config (what the package ships), found from this file's path.
  public static let shippedConfigDirectory: String = {
    var path = #filePath
    for _ in 0..<3 { path = String(path[..<path.lastIndex(of: "/")!]) }
    return path + "/Config"
  }()

  /// A daemon on these files: the schema, policy files by name, switchd.conf.
  public convenience init(
    switches: String = DaemonFixture.standardSwitches, policies: [String: String] = [:],
    daemonConf: String = "[Daemon]\nAdminGroup=\n", start: Bool = true
  ) throws {
    try self.init(emptyConfig: ())
    try writeFile("switchd.conf", daemonConf)
    try writeFile("switches.d/10-test.conf", switches)
    for (name, text) in policies { try writeFile("policy.d/" + name, text) }
    if start { try self.start() }
  }

  /// A running daemon on a copy of the shipped configuration.
  public static func shipped() throws -> DaemonFixture {
    let fixture = try DaemonFixture(emptyConfig: ())
    let copy = runProcess(["/bin/cp", "-R", shippedConfigDirectory + "/.", fixture.configDirectory])
    guard copy.status == 0 else { throw FixtureError("cannot copy Config: \(copy.stderr)") }
    try fixture.start()
    return fixture
  }

  /// The temp directory with an empty configuration tree.
  private init(emptyConfig: ()) throws {
    directory = try makeTemporaryDirectory("switchd-e2e")
    configDirectory = directory + "/config"
    socketPath = directory + "/switchd.sock"
    databasePath = directory + "/state/switches.db"
    logPath = directory + "/switchd.log"
    // Modes are set with chmod, not left to mkdir and the umask: an in-process
    // server of another test narrows the process's umask while it binds.
    for path in [configDirectory, configDirectory + "/switches.d", configDirectory + "/policy.d"] {
      mkdir(path, 0o755)
      chmod(path, 0o755)
    }
    // Other uids (the setpriv tests) must reach the socket inside.
    chmod(directory, 0o755)
  }

  deinit {
    stop()
    removeTree(directory)
  }

  /// Writes a file relative to the config directory.
  public func writeFile(_ relative: String, _ text: String) throws {
    try writeWholeFile(configDirectory + "/" + relative, text)
    chmod(configDirectory + "/" + relative, 0o644)  // not the umask's (see init)
  }

  public func removeFile(_ relative: String) {
    unlink(configDirectory + "/" + relative)
  }

  /// Starts switchd and waits until its socket accepts.
  public func start(extraArguments: [String] = []) throws {
    try launch(extraArguments: extraArguments)
    try waitUntilServing()
  }

  /// Starts switchd on this fixture's files without waiting for it.
  /// - Parameters:
  ///   - environment: exactly these variables (and a PATH), as a service
  ///     manager sets them; nil inherits the test runner's.
  ///   - socket: `--socket` (default: the fixture's).
  ///   - wrapper: a command that execs switchd (`systemd-socket-activate …`).
  /// - Returns: the process, also kept as `process` (and stopped with the fixture).
  @discardableResult
  public func launch(
    environment: [String: String]? = nil, socket: String? = nil, through wrapper: [String] = [],
    extraArguments: [String] = []
  ) throws -> Child {
    precondition(process == nil || process!.hasExited, "switchd is already running")
    let argv =
      wrapper + [
        Products.path("switchd"), "--config", configDirectory, "--socket", socket ?? socketPath,
        "--database", databasePath,
      ] + extraArguments
    let child = try Child(argv, environment: environment, logPath: logPath)
    process = child
    return child
  }

  /// Polls with connect until the socket accepts; throws when switchd exits
  /// first or the deadline passes.
  public func waitUntilServing() throws {
    guard let child = process else { throw FixtureError("switchd was not started") }
    var serving = false
    _ = pollUntil(seconds: Self.startSeconds) {
      serving = Self.accepts(socketPath)
      return serving || child.hasExited
    }
    if serving { return }
    if child.hasExited {
      throw FixtureError("switchd exited (\(child.exitStatus ?? -1)) at start: \(log)")
    }
    throw FixtureError("switchd did not accept connections within \(Self.startSeconds) s: \(log)")
  }

  public enum StartOutcome: Equatable {
    /// switchd exited by itself with this status (128+n for signal n).
    case exited(Int32)
    /// switchd accepted a connection: it started (and was killed).
    case served
  }

  /// Starts switchd on the fixture's files, expecting it to refuse: returns
  /// how it ended, its exit or its socket accepting, whichever comes first.
  /// While this fixture's daemon runs, pass another `socket` (the one it
  /// would serve), and the running daemon is left alone. `wrapper`: a
  /// command that execs switchd (`setpriv …`).
  public func startExpectingRefusal(
    socket: String? = nil, through wrapper: [String] = []
  ) throws -> StartOutcome {
    let path = socket ?? socketPath
    let argv =
      wrapper + [
        Products.path("switchd"), "--config", configDirectory, "--socket", path,
        "--database", databasePath,
      ]
    let child = try Child(argv, logPath: logPath)
    var served = false
    let ended = pollUntil(seconds: Self.startSeconds) {
      if child.hasExited { return true }
      served = Self.accepts(path)
      return served
    }
    if ended && !served { return .exited(child.exitStatus ?? -1) }
    child.signal(SIGKILL)
    child.wait(seconds: Self.stopSeconds)
    return .served
  }

  /// Whether a daemon accepts connections at `path`.
  private static func accepts(_ path: String) -> Bool {
    guard let client = try? RPCClient(socketPath: path) else { return false }
    client.close()
    return true
  }

  /// SIGTERM, then SIGKILL after a deadline. Returns the exit status.
  /// An exit other than 0 prints switchd's log with the test's output: under a sanitizer (TSan
  /// exits 66) the report is there, and nowhere else once the folder goes.
  @discardableResult
  public func stop() -> Int32? {
    defer { process = nil }
    let status = process?.stop(seconds: Self.stopSeconds)
    if let status, status != 0 {
      print("switchd exited \(status); its log:\n\(log)")
    }
    return status
  }

  /// SIGKILL: a crash at an arbitrary moment.
  public func crash() {
    process?.signal(SIGKILL)
    process?.wait(seconds: Self.stopSeconds)
    process = nil
  }

  public func signal(_ signal: Int32) {
    process?.signal(signal)
  }

  public var log: String { (try? readWholeFile(logPath)) ?? "" }

  public func client() throws -> RPCClient { try RPCClient(socketPath: socketPath) }

  /// Runs switchctl against this daemon.
  public func ctl(_ arguments: [String], asUser uid: UInt32? = nil) -> ProcessResult {
    var argv = [Products.path("switchctl"), "--socket", socketPath] + arguments
    if let uid {
      argv = ["/usr/bin/setpriv", "--reuid=\(uid)", "--regid=\(uid)", "--clear-groups"] + argv
    }
    return runProcess(argv)
  }
}

/// Where the built products are: beside the test runner.
public enum Products {
  public static let directory: String = {
    var path = CommandLine.arguments[0]
    while let slash = path.lastIndex(of: "/") {
      path = String(path[..<slash])
      if access(path + "/switchd", X_OK) == 0 { return path }
    }
    return ".build/debug"
  }()

  public static func path(_ name: String) -> String { directory + "/" + name }
}
