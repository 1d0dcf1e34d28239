import Glibc
import SwitchProtocol
import Testing

@testable import SwitchCtl

/// A console that keeps what switchctl prints, and can stop `watch` after
/// a number of lines.
final class CapturedConsole: Console {
  var outLines: [String] = []
  var errLines: [String] = []
  /// `watch` stops once this many lines are out; nil never stops it.
  var stopAfter: Int?

  init(stopAfter: Int? = nil) {
    self.stopAfter = stopAfter
  }

  var wantsMore: Bool { stopAfter.map { outLines.count < $0 } ?? true }
  func out(_ lines: [String]) { outLines += lines }
  func err(_ lines: [String]) { errLines += lines }
}

/// Runs switchctl in-process with a captured console.
func runCtl(
  _ arguments: [String], environment: Environment = Environment.fixed([:]),
  stopAfter: Int? = nil
) -> (code: ExitCode, out: [String], err: [String]) {
  let console = CapturedConsole(stopAfter: stopAfter)
  let code = SwitchCtl.run(arguments, environment: environment, console: console)
  return (code, console.outLines, console.errLines)
}

extension Environment {
  /// An environment with exactly these variables, uid 1000, and no files.
  static func fixed(
    _ variables: [String: String], uid: UInt32 = 1000, files: Set<String> = []
  ) -> Environment {
    Environment(variables: variables, uid: uid, fileExists: { files.contains($0) })
  }
}

/// Parses JSON text that a test wrote, trapping on a typo in the test.
func json(_ text: String) -> JSONValue {
  try! JSONParser.parse(text, maxDepth: 64)
}

/// Milliseconds on the monotonic clock.
func monotonicMilliseconds() -> Int64 {
  var now = timespec()
  clock_gettime(CLOCK_MONOTONIC, &now)
  return Int64(now.tv_sec) * 1000 + Int64(now.tv_nsec) / 1_000_000
}

/// A failure in test set-up, with what happened.
struct SetupError: Error, CustomStringConvertible {
  var description: String
}

/// Runs a program with posix_spawn. `stdin`/`stdout`/`stderr` are
/// descriptors to give the child (dup2'd to 0, 1 and 2); nil is `/dev/null`.
func spawn(
  _ program: String, _ arguments: [String], stdin: Int32? = nil, stdout: Int32? = nil,
  stderr: Int32? = nil
) throws -> pid_t {
  var actions = posix_spawn_file_actions_t()
  posix_spawn_file_actions_init(&actions)
  defer { posix_spawn_file_actions_destroy(&actions) }
  for (fd, target) in [(stdin, Int32(0)), (stdout, Int32(1)), (stderr, Int32(2))] {
    if let fd {
      posix_spawn_file_actions_adddup2(&actions, fd, target)
    } else {
      posix_spawn_file_actions_addopen(
        &actions, target, "/dev/null", target == 0 ? O_RDONLY : O_WRONLY, 0)
    }
  }
  // Start the child as a shell would: nothing blocked (the test runner's
  // threads block signals, and the mask is inherited), default dispositions.
  var attributes = posix_spawnattr_t()
  posix_spawnattr_init(&attributes)
  defer { posix_spawnattr_destroy(&attributes) }
  var mask = sigset_t()
  sigemptyset(&mask)
  posix_spawnattr_setsigmask(&attributes, &mask)
  var defaults = sigset_t()
  sigemptyset(&defaults)
  for signalNumber in [SIGINT, SIGTERM, SIGPIPE] { sigaddset(&defaults, signalNumber) }
  posix_spawnattr_setsigdefault(&attributes, &defaults)
  posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
  let argv = ([program] + arguments).map { strdup($0) } + [nil]
  defer { for pointer in argv { free(pointer) } }
  var pid: pid_t = 0
  let result = posix_spawn(&pid, program, &actions, &attributes, argv, environ)
  guard result == 0 else {
    throw SetupError(description: "posix_spawn \(program): \(String(cString: strerror(result)))")
  }
  return pid
}

/// Stops a child we started: SIGTERM, then SIGKILL after `graceMilliseconds`.
/// Returns the exit status, or nil when it had to be killed.
@discardableResult
func stop(_ pid: pid_t, signal: Int32 = SIGTERM, graceMilliseconds: Int64 = 10_000) -> Int32? {
  kill(pid, signal)
  let deadline = monotonicMilliseconds() + graceMilliseconds
  var status: Int32 = 0
  while monotonicMilliseconds() < deadline {
    let reaped = waitpid(pid, &status, WNOHANG)
    if reaped == pid {
      // WIFEXITED / WEXITSTATUS, which Swift does not import.
      return status & 0x7F == 0 ? (status >> 8) & 0xFF : nil
    }
    if reaped < 0 { return nil }
    usleep(5_000)
  }
  kill(pid, SIGKILL)
  waitpid(pid, &status, 0)
  return nil
}

/// A long-running child (switchd, `switchctl watch`) that cannot outlive the
/// test process.
///
/// Tests share one process, so a crash anywhere, or a runner killed by a
/// closed pipe, skips every `deinit`. Each child therefore gets a watchdog:
/// a shell blocked reading a pipe whose only writer is this process. When
/// this process dies the pipe reaches EOF and the shell sends the child
/// SIGTERM. A normal stop kills the watchdog first, so it can never signal
/// a reused pid.
final class Child {
  let pid: pid_t
  private var watchdog: pid_t = 0
  private var leash: Int32 = -1
  private(set) var isStopped = false

  init(_ program: String, _ arguments: [String], stdout: Int32? = nil, stderr: Int32? = nil)
    throws
  {
    pid = try spawn(program, arguments, stdout: stdout, stderr: stderr)
    var fds: [Int32] = [0, 0]
    guard pipe(&fds) == 0 else {
      Self.kill(pid)
      throw SetupError(description: "pipe failed")
    }
    for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
    defer { close(fds[0]) }
    leash = fds[1]
    do {
      watchdog = try spawn(
        "/bin/sh", ["-c", "read -r _; kill -TERM \"$0\" 2>/dev/null", String(pid)],
        stdin: fds[0])
    } catch {
      Self.kill(pid)
      close(leash)
      throw error
    }
  }

  deinit { stop(graceMilliseconds: 2_000) }

  /// Stops the child (SIGTERM, then SIGKILL after the grace time) and
  /// returns its exit status, or nil when it was killed or already stopped.
  @discardableResult
  func stop(signal: Int32 = SIGTERM, graceMilliseconds: Int64 = 10_000) -> Int32? {
    guard !isStopped else { return nil }
    isStopped = true
    SwitchCtlTests.stop(watchdog, signal: SIGKILL)
    close(leash)
    return SwitchCtlTests.stop(pid, signal: signal, graceMilliseconds: graceMilliseconds)
  }

  /// Whether the child has exited on its own (it is then reaped).
  func hasExited() -> Bool {
    var status: Int32 = 0
    guard waitpid(pid, &status, WNOHANG) == pid else { return false }
    isStopped = true
    SwitchCtlTests.stop(watchdog, signal: SIGKILL)
    close(leash)
    return true
  }

  private static func kill(_ pid: pid_t) {
    SwitchCtlTests.stop(pid, signal: SIGKILL)
  }
}

/// Runs a program to its end (at most `milliseconds`) and returns its exit
/// status (nil when it had to be killed) and what it printed.
func runProcess(
  _ program: String, _ arguments: [String], milliseconds: Int64 = 20_000
) throws -> (status: Int32?, out: [String], err: [String]) {
  let out = try LinePipe()
  let err = try LinePipe()
  let pid = try spawn(program, arguments, stdout: out.writeEnd, stderr: err.writeEnd)
  var status: Int32 = 0
  let deadline = monotonicMilliseconds() + milliseconds
  while waitpid(pid, &status, WNOHANG) == 0 {
    guard monotonicMilliseconds() < deadline else {
      return (stop(pid, signal: SIGKILL), out.drain(), err.drain())
    }
    usleep(2_000)
  }
  let exited = status & 0x7F == 0 ? (status >> 8) & 0xFF : nil
  return (exited, out.drain(), err.drain())
}

/// A pipe whose read end we poll for lines with a deadline.
final class LinePipe {
  let readEnd: Int32
  let writeEnd: Int32
  private var buffer: [UInt8] = []

  init() throws {
    var fds: [Int32] = [0, 0]
    guard pipe(&fds) == 0 else { throw SetupError(description: "pipe failed") }
    readEnd = fds[0]
    writeEnd = fds[1]
    // Children get the write end through dup2 only; no other child keeps it.
    for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
  }

  deinit {
    close(readEnd)
    close(writeEnd)
  }

  /// The lines already written, for a writer that has finished.
  func drain() -> [String] {
    var lines: [String] = []
    while let line = readLine(within: 0) { lines.append(line) }
    return lines
  }

  /// The next line, or nil when none arrives within `milliseconds`.
  func readLine(within milliseconds: Int64 = 20_000) -> String? {
    let deadline = monotonicMilliseconds() + milliseconds
    while true {
      if let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) {
        let line = String(decoding: buffer[..<newline], as: UTF8.self)
        buffer.removeSubrange(...newline)
        return line
      }
      let remaining = max(0, deadline - monotonicMilliseconds())
      var poller = pollfd(fd: readEnd, events: Int16(POLLIN), revents: 0)
      guard poll(&poller, 1, Int32(remaining)) > 0 else {
        if remaining == 0 { return nil }
        continue
      }
      var chunk = [UInt8](repeating: 0, count: 4096)
      let count = read(readEnd, &chunk, chunk.count)
      if count <= 0 { return nil }
      buffer += chunk[..<count]
    }
  }
}

/// A real switchd in its own temp directory, with the repository's Config.
final class TestDaemon {
  let directory: String
  let socket: String
  let database: String
  private var process: Child?

  /// The directory that holds the built products (switchd, switchctl):
  /// the first directory up from the test runner that contains `switchd`.
  static func productsDirectory() throws -> String {
    var path = CommandLine.arguments[0]
    while let slash = path.lastIndex(of: "/") {
      path = String(path[..<slash])
      if access(path + "/switchd", X_OK) == 0 { return path }
    }
    throw SetupError(description: "no switchd above \(CommandLine.arguments[0])")
  }

  /// The repository's Config, found from this file's path.
  static let configDirectory: String = {
    var path = #filePath
    for _ in 0..<3 { path = String(path[..<path.lastIndex(of: "/")!]) }
    return path + "/Config"
  }()

  init() throws {
    var template = Array("/tmp/switchctl-test-XXXXXX".utf8CString)
    guard let made = mkdtemp(&template) else { throw SetupError(description: "mkdtemp failed") }
    directory = String(cString: made)
    // Other uids (the setpriv tests) must reach the socket inside.
    chmod(directory, 0o755)
    socket = directory + "/switchd.sock"
    database = directory + "/switches.db"
    try start()
  }

  deinit {
    process?.stop()
    for name in ["switches.db", "switches.db-wal", "switches.db-shm", "switchd.sock", "log"] {
      unlink(directory + "/" + name)
    }
    rmdir(directory)
  }

  /// Starts switchd and waits until its socket accepts a connection.
  func start() throws {
    let log = open(directory + "/log", O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o644)
    defer { close(log) }
    let child = try Child(
      try Self.productsDirectory() + "/switchd",
      ["--config", Self.configDirectory, "--socket", socket, "--database", database],
      stdout: log, stderr: log)
    process = child
    let deadline = monotonicMilliseconds() + 30_000
    while monotonicMilliseconds() < deadline {
      if (try? DaemonClient.connect(to: socket, receiveTimeout: 5)) != nil { return }
      if child.hasExited() {
        throw SetupError(description: "switchd exited at start; see \(directory)/log")
      }
      usleep(10_000)  // poll interval while waiting for readiness, not a fixed wait
    }
    throw SetupError(description: "switchd did not accept connections within 30 s")
  }

  /// Stops switchd with SIGTERM and returns its exit status.
  @discardableResult
  func stopDaemon() -> Int32? {
    defer { process = nil }
    return process?.stop()
  }

  /// One RPC call, straight to the daemon, for comparing with switchctl.
  func call(_ method: SwitchProtocol.Method, _ params: [JSONMember]) throws -> JSONValue {
    let client = try DaemonClient.connect(to: socket, receiveTimeout: 30)
    return try client.call(method, params).get()
  }
}

extension Trait where Self == ConditionTrait {
  /// Runs the test only as root, and says why it needs to: as a normal user it
  /// is skipped with that reason, not failed.
  static func needsRoot(_ why: String) -> Self {
    .enabled(if: geteuid() == 0, Comment(rawValue: "needs root: " + why))
  }
}
