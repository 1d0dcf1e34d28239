import Glibc
import SwitchSystem
import Synchronization

struct ProcessResult {
  var status: Int32
  var stdout: String
  var stderr: String
}

/// Starts a process with stdout/stderr sent to files; returns its pid.
/// `environment` nil: the test runner's own; otherwise exactly those
/// variables and a PATH (what a service manager gives a service).
func spawn(
  _ argv: [String], stdoutPath: String, stderrPath: String, append: Bool = false,
  environment: [String: String]? = nil
) throws -> pid_t {
  var actions = posix_spawn_file_actions_t()
  posix_spawn_file_actions_init(&actions)
  defer { posix_spawn_file_actions_destroy(&actions) }
  let flags = O_WRONLY | O_CREAT | (append ? O_APPEND : O_TRUNC)
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
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

/// A process the test started, stdout and stderr appended to `logPath`.
/// Killed and reaped on deinit if still running, so a failed test leaves
/// nothing behind.
final class Child {
  let pid: pid_t
  private(set) var exitStatus: Int32?

  init(_ argv: [String], environment: [String: String]? = nil, logPath: String) throws {
    pid = try spawn(
      argv, stdoutPath: logPath, stderrPath: logPath, append: true, environment: environment)
  }

  deinit {
    if exitStatus == nil {
      kill(pid, SIGKILL)
      _ = wait(seconds: 30)
    }
  }

  /// Reaps the process if it has exited.
  var hasExited: Bool {
    if exitStatus != nil { return true }
    var status: Int32 = 0
    guard waitpid(pid, &status, WNOHANG) == pid else { return false }
    exitStatus = decodeWaitStatus(status)
    return true
  }

  func signal(_ signal: Int32) {
    if exitStatus == nil { kill(pid, signal) }
  }

  /// Waits for the exit (SIGKILL after `seconds`); the exit status, or 128+signal.
  @discardableResult
  func wait(seconds: Double) -> Int32? {
    if let exitStatus { return exitStatus }
    exitStatus = waitForExit(pid, seconds: seconds)
    return exitStatus
  }

  /// SIGTERM, then SIGKILL if it has not exited after `seconds`.
  @discardableResult
  func stop(seconds: Double = 30) -> Int32? {
    signal(SIGTERM)
    return wait(seconds: seconds)
  }

  /// The process state letter from /proc/PID/stat (R, S, T, ...).
  var state: Character? {
    guard let stat = try? readWholeFile("/proc/\(pid)/stat"),
      let end = stat.lastIndex(of: ")")
    else { return nil }
    return stat[end...].dropFirst().first { $0 != " " }
  }
}

/// A `waitpid` status as an exit status, or 128+signal.
func decodeWaitStatus(_ status: Int32) -> Int32 {
  status & 0x7f == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
}

/// Spawn attributes that start a child with no signal blocked and each at its default: the
/// test runner's threads may block or ignore signals, and a child inherits both (a tracer
/// started with SIGTERM blocked never sees the SIGTERM that should detach it).
func withDefaultSignals<T>(_ body: (inout posix_spawnattr_t) throws -> T) rethrows -> T {
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
func waitForExit(_ pid: pid_t, seconds: Double) -> Int32? {
  let deadline = monotonicNow() + seconds
  var status: Int32 = 0
  while true {
    let r = waitpid(pid, &status, WNOHANG)
    if r == pid { break }
    if r < 0 { return nil }
    if monotonicNow() > deadline {
      kill(pid, SIGKILL)
      waitpid(pid, &status, 0)
      break
    }
    usleep(2000)  // poll interval
  }
  return decodeWaitStatus(status)
}

private let outputCounter = SerialCounter()

/// A process-wide counter for unique names in tests that run in parallel.
final class SerialCounter: Sendable {
  private let value = Mutex(0)
  func next() -> Int {
    value.withLock {
      $0 += 1
      return $0
    }
  }
}

/// Runs a process to completion, capturing its output.
func runProcess(_ argv: [String], timeout: Double = 60) -> ProcessResult {
  let base = "/tmp/switchd-e2e-out-\(getpid())-\(outputCounter.next())"
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

/// A POSIX thread that runs `body` and hands back its result at `join()`.
///
/// For blocking socket I/O in tests: Swift's cooperative pool is as wide as
/// the machine has cores (two here), and a task that blocks in `recv` holds
/// one of them, so a few blocked tasks can stall every other test.
final class TestThread<Result: Sendable>: @unchecked Sendable {
  // `result` is written by the thread before it ends and read after
  // `pthread_join`, which orders the two.
  private var result: Result?
  private var thread = pthread_t()
  private var joined = false

  init(_ body: @escaping @Sendable () -> Result) {
    thread = startJoinableThread { [self] in result = body() }
  }

  deinit {
    if !joined { pthread_detach(thread) }
  }

  /// Waits for the thread to end; its result.
  func join() -> Result {
    if !joined {
      pthread_join(thread, nil)
      joined = true
    }
    return result!
  }
}
