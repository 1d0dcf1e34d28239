import Glibc
import SwitchSystem

/// How a process that ran to its end ended, and what it printed.
public struct ProcessResult {
  public var status: Int32
  public var stdout: String
  public var stderr: String

  public init(status: Int32, stdout: String, stderr: String) {
    self.status = status
    self.stdout = stdout
    self.stderr = stderr
  }

  /// The lines of stdout and of stderr, without their newlines.
  public var outLines: [String] { lines(stdout) }
  public var errLines: [String] { lines(stderr) }

  private func lines(_ text: String) -> [String] {
    var lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
    if lines.last == "" { lines.removeLast() }
    return lines
  }
}

/// Starts a process with stdout/stderr sent to files (the same one is
/// opened once) and stdin from `stdin` (nil: /dev/null); returns its pid.
/// `environment` nil: the test runner's own; otherwise exactly those
/// variables and a PATH (what a service manager gives a service).
public func spawn(
  _ argv: [String], stdin: Int32? = nil, stdoutPath: String, stderrPath: String,
  append: Bool = false, environment: [String: String]? = nil
) throws -> pid_t {
  var actions = posix_spawn_file_actions_t()
  posix_spawn_file_actions_init(&actions)
  defer { posix_spawn_file_actions_destroy(&actions) }
  let flags = O_WRONLY | O_CREAT | (append ? O_APPEND : O_TRUNC)
  if let stdin {
    posix_spawn_file_actions_adddup2(&actions, stdin, 0)
  } else {
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
  }
  posix_spawn_file_actions_addopen(&actions, 1, stdoutPath, flags, 0o644)
  if stderrPath == stdoutPath {
    posix_spawn_file_actions_adddup2(&actions, 1, 2)
  } else {
    posix_spawn_file_actions_addopen(&actions, 2, stderrPath, flags, 0o644)
  }
  var pid: pid_t = 0
  let cArgs = argv.map { strdup($0) } + [nil]
  let variables = environment.map { chosen in
    ["PATH=/usr/local/bin:/usr/bin:/bin"]
      + chosen.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
  }
  let cEnv = variables.map { $0.map { strdup($0) } + [nil] }
  defer { for p in cArgs + (cEnv ?? []) { free(p) } }
  let rc = withDefaultSignals { attributes in
    if let cEnv { return posix_spawn(&pid, argv[0], &actions, &attributes, cArgs, cEnv) }
    return posix_spawn(&pid, argv[0], &actions, &attributes, cArgs, environ)
  }
  guard rc == 0 else { throw FixtureError("posix_spawn \(argv[0]) failed: \(rc)") }
  return pid
}

/// A `waitpid` status as an exit status, or 128+signal.
public func decodeWaitStatus(_ status: Int32) -> Int32 {
  status & 0x7f == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
}

/// Spawn attributes that start a child with no signal blocked and each at its default: the
/// test runner's threads may block or ignore signals, and a child inherits both (a tracer
/// started with SIGTERM blocked never sees the SIGTERM that should detach it).
private func withDefaultSignals<T>(_ body: (inout posix_spawnattr_t) throws -> T) rethrows -> T {
  var attributes = posix_spawnattr_t()
  posix_spawnattr_init(&attributes)
  defer { posix_spawnattr_destroy(&attributes) }
  var none = sigset_t()
  sigemptyset(&none)
  var all = sigset_t()
  sigfillset(&all)
  posix_spawnattr_setsigmask(&attributes, &none)
  posix_spawnattr_setsigdefault(&attributes, &all)
  posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
  return try body(&attributes)
}

/// Waits for a child; SIGKILL when it outlives the deadline. Returns its
/// exit status, or 128+signal.
public func waitForExit(_ pid: pid_t, seconds: Double) -> Int32? {
  let deadline = monotonicSeconds() + seconds
  var status: Int32 = 0
  while true {
    let r = waitpid(pid, &status, WNOHANG)
    if r == pid { break }
    if r < 0 { return nil }
    if monotonicSeconds() > deadline {
      kill(pid, SIGKILL)
      waitpid(pid, &status, 0)
      break
    }
    usleep(2000)  // poll interval
  }
  return decodeWaitStatus(status)
}

private let outputCounter = SerialCounter()

/// Runs a process to completion, capturing its output.
public func runProcess(_ argv: [String], timeout: Double = 60) -> ProcessResult {
  let base = "/tmp/switchd-test-out-\(getpid())-\(outputCounter.next())"
  defer {
    unlink(base + ".out")
    unlink(base + ".err")
  }
  guard let pid = try? spawn(argv, stdoutPath: base + ".out", stderrPath: base + ".err") else {
    return ProcessResult(status: -1, stdout: "", stderr: "spawn failed")
  }
  let status = waitForExit(pid, seconds: timeout) ?? -1
  return ProcessResult(
    status: status, stdout: (try? readWholeFile(base + ".out")) ?? "",
    stderr: (try? readWholeFile(base + ".err")) ?? "")
}
