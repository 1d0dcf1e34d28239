import Glibc
import Synchronization

struct ProcessResult {
  var status: Int32
  var stdout: String
  var stderr: String
}

/// Starts a process with stdout/stderr sent to files; returns its pid.
func spawn(
  _ argv: [String], stdoutPath: String, stderrPath: String, append: Bool = false
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
  defer { for p in cArgs { free(p) } }
  let rc = withDefaultSignals { posix_spawn(&pid, argv[0], &actions, &$0, cArgs, environ) }
  guard rc == 0 else { throw FixtureError("posix_spawn \(argv[0]) failed: \(rc)") }
  return pid
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
    usleep(2000)
  }
  if status & 0x7f == 0 { return (status >> 8) & 0xff }
  return 128 + (status & 0x7f)
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
