import Glibc
import SwitchProtocol
import Testing

/// A real `switchd` in its own temp directory: config, socket and database
/// passed by flag; readiness waited for by connecting, never by sleeping;
/// stopped with SIGTERM, then SIGKILL after a deadline. The one way every
/// end-to-end test starts a daemon: plainly (`start`), as a service manager
/// would (`launch` with an environment, or through a wrapper such as
/// systemd-socket-activate), or expecting a refusal (`startExpectingRefusal`).
final class DaemonFixture {
  let directory: String
  let configDirectory: String
  let socketPath: String
  let databasePath: String
  let logPath: String
  /// The running daemon (or its wrapper), if one was started and not stopped.
  private(set) var process: Child?
  /// Its pid, 0 when none runs.
  var pid: pid_t { process?.pid ?? 0 }

  /// Generous for a loaded two-core machine under a sanitizer.
  static let startSeconds = 60.0
  static let stopSeconds = 30.0

  /// The shipped example schema, for tests that need a few switches.
  static let standardSwitches = """
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

  init(
    switches: String = DaemonFixture.standardSwitches, policies: [String: String] = [:],
    daemonConf: String = "[Daemon]\nAdminGroup=\n", start: Bool = true
  ) throws {
    var template = Array("/tmp/switchd-e2e-XXXXXX".utf8CString)
    guard let made = mkdtemp(&template) else { throw FixtureError("mkdtemp failed") }
    directory = String(cString: made)
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
    chmod(directory, 0o755)
    try writeFile("switchd.conf", daemonConf)
    try writeFile("switches.d/10-test.conf", switches)
    for (name, text) in policies { try writeFile("policy.d/" + name, text) }
    if start { try self.start() }
  }

  deinit {
    stop()
    _ = runProcess(["/bin/rm", "-rf", directory])
  }

  /// Writes a file relative to the config directory.
  func writeFile(_ relative: String, _ text: String) throws {
    try writeWholeFile(configDirectory + "/" + relative, text)
    chmod(configDirectory + "/" + relative, 0o644)  // not the umask's (see init)
  }

  func removeFile(_ relative: String) {
    unlink(configDirectory + "/" + relative)
  }

  /// Starts switchd and waits until its socket accepts.
  func start(extraArguments: [String] = []) throws {
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
  func launch(
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
  func waitUntilServing() throws {
    guard let child = process else { throw FixtureError("switchd was not started") }
    let deadline = monotonicNow() + Self.startSeconds
    while monotonicNow() < deadline {
      if let client = try? RPCClient(socketPath: socketPath) {
        client.close()
        return
      }
      if child.hasExited {
        throw FixtureError("switchd exited (\(child.exitStatus ?? -1)) at start: \(log)")
      }
      usleep(5000)  // poll interval
    }
    throw FixtureError("switchd did not accept connections within \(Self.startSeconds) s: \(log)")
  }

  enum StartOutcome: Equatable {
    /// switchd exited by itself with this status (128+n for signal n).
    case exited(Int32)
    /// switchd accepted a connection: it started (and was killed).
    case served
  }

  /// Starts switchd on the fixture's files, expecting it to refuse: returns
  /// how it ended, its exit or its socket accepting, whichever comes first.
  /// While this fixture's daemon runs, pass another `socket` (the one it
  /// would serve), and the running daemon is left alone.
  func startExpectingRefusal(socket: String? = nil) throws -> StartOutcome {
    let path = socket ?? socketPath
    let argv = [
      Products.path("switchd"), "--config", configDirectory, "--socket", path,
      "--database", databasePath,
    ]
    let child = try Child(argv, logPath: logPath)
    let deadline = monotonicNow() + Self.startSeconds
    while monotonicNow() < deadline {
      if child.hasExited { return .exited(child.exitStatus ?? -1) }
      if let client = try? RPCClient(socketPath: path) {
        client.close()
        break
      }
      usleep(5000)  // poll interval
    }
    child.signal(SIGKILL)
    child.wait(seconds: Self.stopSeconds)
    return .served
  }

  /// SIGTERM, then SIGKILL after a deadline. Returns the exit status.
  @discardableResult
  func stop() -> Int32? {
    defer { process = nil }
    return process?.stop(seconds: Self.stopSeconds)
  }

  /// SIGKILL: a crash at an arbitrary moment.
  func crash() {
    process?.signal(SIGKILL)
    process?.wait(seconds: Self.stopSeconds)
    process = nil
  }

  func signal(_ signal: Int32) {
    process?.signal(signal)
  }

  var log: String { (try? readWholeFile(logPath)) ?? "" }

  func client() throws -> RPCClient { try RPCClient(socketPath: socketPath) }

  /// Runs switchctl against this daemon.
  func ctl(_ arguments: [String], asUser uid: UInt32? = nil) -> ProcessResult {
    var argv = [Products.path("switchctl"), "--socket", socketPath] + arguments
    if let uid {
      argv = ["/usr/bin/setpriv", "--reuid=\(uid)", "--regid=\(uid)", "--clear-groups"] + argv
    }
    return runProcess(argv)
  }
}

extension Trait where Self == ConditionTrait {
  /// Runs the test only as root, and says why it needs to: as a normal user it
  /// is skipped with that reason, not failed.
  static func needsRoot(_ why: String) -> Self {
    .enabled(if: geteuid() == 0, Comment(rawValue: "needs root: " + why))
  }
}

struct FixtureError: Error, CustomStringConvertible {
  var description: String
  init(_ description: String) { self.description = description }
}

/// Where the built products are: beside the test runner.
enum Products {
  static let directory: String = {
    var path = CommandLine.arguments[0]
    while let slash = path.lastIndex(of: "/") {
      path = String(path[..<slash])
      if access(path + "/switchd", X_OK) == 0 { return path }
    }
    return ".build/debug"
  }()

  static func path(_ name: String) -> String { directory + "/" + name }
}

func monotonicNow() -> Double {
  var ts = timespec()
  clock_gettime(CLOCK_MONOTONIC, &ts)
  return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
}

func writeWholeFile(_ path: String, _ text: String) throws {
  let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
  guard fd >= 0 else { throw FixtureError("cannot write \(path)") }
  defer { close(fd) }
  let bytes = Array(text.utf8)
  var offset = 0
  while offset < bytes.count {
    let n = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + offset, bytes.count - offset) }
    if n <= 0 { throw FixtureError("cannot write \(path)") }
    offset += n
  }
}

func readWholeFile(_ path: String) throws -> String {
  let fd = open(path, O_RDONLY | O_CLOEXEC)
  guard fd >= 0 else { throw FixtureError("cannot read \(path)") }
  defer { close(fd) }
  var bytes: [UInt8] = []
  var chunk = [UInt8](repeating: 0, count: 65_536)
  while true {
    let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
    if n <= 0 { break }
    bytes += chunk[0..<n]
  }
  return String(decoding: bytes, as: UTF8.self)
}
