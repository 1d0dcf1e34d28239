import Glibc
import SwitchProtocol
import Testing

/// A real `switchd` in its own temp directory: config, socket and database
/// passed by flag; readiness waited for by connecting, never by sleeping;
/// stopped with SIGTERM, then SIGKILL after a deadline.
final class DaemonFixture {
  let directory: String
  let configDirectory: String
  let socketPath: String
  let databasePath: String
  let logPath: String
  private(set) var pid: pid_t = 0

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
    mkdir(configDirectory, 0o755)
    mkdir(configDirectory + "/switches.d", 0o755)
    mkdir(configDirectory + "/policy.d", 0o755)
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
  }

  func removeFile(_ relative: String) {
    unlink(configDirectory + "/" + relative)
  }

  /// Starts switchd and waits until its socket accepts.
  func start(extraArguments: [String] = []) throws {
    let arguments =
      [
        Products.path("switchd"), "--config", configDirectory, "--socket", socketPath,
        "--database", databasePath,
      ] + extraArguments
    pid = try spawn(arguments, stdoutPath: logPath, stderrPath: logPath, append: true)
    let deadline = monotonicNow() + 20
    while monotonicNow() < deadline {
      if let client = try? RPCClient(socketPath: socketPath) {
        client.close()
        return
      }
      var status: Int32 = 0
      if waitpid(pid, &status, WNOHANG) == pid {
        pid = 0
        throw FixtureError("switchd exited at start: \(log)")
      }
      usleep(5000)
    }
    throw FixtureError("switchd did not accept connections within 20 s: \(log)")
  }

  /// SIGTERM, wait up to 10 s, then SIGKILL. Returns the exit status.
  @discardableResult
  func stop() -> Int32? {
    guard pid > 0 else { return nil }
    kill(pid, SIGTERM)
    let status = waitForExit(pid, seconds: 10)
    pid = 0
    return status
  }

  /// SIGKILL: a crash at an arbitrary moment.
  func crash() {
    guard pid > 0 else { return }
    kill(pid, SIGKILL)
    _ = waitForExit(pid, seconds: 10)
    pid = 0
  }

  func signal(_ signal: Int32) {
    if pid > 0 { kill(pid, signal) }
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
