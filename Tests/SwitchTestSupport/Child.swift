import Glibc

/// A process the test started (switchd, `switchctl watch`, a relay), its
/// stdout appended to `logPath` and its stderr to `errorLogPath` (default:
/// the same file). Killed and reaped on deinit if still running, so a failed
/// test leaves nothing behind.
///
/// Nor can it outlive the test process: tests share one process, so a crash
/// anywhere, or a runner killed by a closed pipe, skips every `deinit`. Each
/// child therefore gets a watchdog: a shell blocked reading a pipe whose only
/// writer is this process. When this process dies the pipe reaches EOF and
/// the shell sends the child SIGTERM. The watchdog is ended as soon as the
/// child is reaped, so it can never signal a reused pid.
public final class Child {
  public let pid: pid_t
  public private(set) var exitStatus: Int32?
  private let watchdog: pid_t
  /// The write end of the watchdog's pipe.
  private let leash: Int32

  public convenience init(
    _ argv: [String], environment: [String: String]? = nil, logPath: String,
    errorLogPath: String? = nil
  ) throws {
    try self.init(
      adopting: spawn(
        argv, stdoutPath: logPath, stderrPath: errorLogPath ?? logPath, append: true,
        environment: environment))
  }

  /// A process the test spawned itself (`spawn`, with its own stdin), kept
  /// and ended as one started by the other initializer.
  public init(adopting pid: pid_t) throws {
    do {
      (watchdog, leash) = try Self.startWatchdog(for: pid)
    } catch {
      kill(pid, SIGKILL)
      _ = waitForExit(pid, seconds: 30)
      throw error
    }
    self.pid = pid
  }

  deinit {
    if exitStatus == nil {
      kill(pid, SIGKILL)
      _ = wait(seconds: 30)
    }
  }

  /// Reaps the process if it has exited.
  public var hasExited: Bool {
    if exitStatus != nil { return true }
    var status: Int32 = 0
    guard waitpid(pid, &status, WNOHANG) == pid else { return false }
    reaped(decodeWaitStatus(status))
    return true
  }

  public func signal(_ signal: Int32) {
    if exitStatus == nil { kill(pid, signal) }
  }

  /// Waits for the exit (SIGKILL after `seconds`); the exit status, or 128+signal.
  @discardableResult
  public func wait(seconds: Double) -> Int32? {
    if let exitStatus { return exitStatus }
    reaped(waitForExit(pid, seconds: seconds) ?? -1)
    return exitStatus
  }

  /// SIGTERM, then SIGKILL if it has not exited after `seconds`.
  @discardableResult
  public func stop(seconds: Double = 30) -> Int32? {
    signal(SIGTERM)
    return wait(seconds: seconds)
  }

  /// The process state letter from /proc/PID/stat (R, S, T, ...).
  public var state: Character? {
    guard let stat = try? readWholeFile("/proc/\(pid)/stat"),
      let end = stat.lastIndex(of: ")")
    else { return nil }
    return stat[end...].dropFirst().first { $0 != " " }
  }

  private func reaped(_ status: Int32) {
    exitStatus = status
    kill(watchdog, SIGKILL)
    _ = waitForExit(watchdog, seconds: 30)
    close(leash)
  }

  /// Starts the shell that sends `pid` SIGTERM once this process is gone.
  private static func startWatchdog(for pid: pid_t) throws -> (pid_t, leash: Int32) {
    var fds: [Int32] = [0, 0]
    guard pipe(&fds) == 0 else { throw FixtureError("pipe failed: errno \(errno)") }
    // Only the watchdog may hold the read end, and only this process the write end.
    for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
    defer { close(fds[0]) }
    do {
      let watchdog = try spawn(
        ["/bin/sh", "-c", "read -r _; kill -TERM \"$0\" 2>/dev/null", String(pid)],
        stdin: fds[0], stdoutPath: "/dev/null", stderrPath: "/dev/null")
      return (watchdog, fds[1])
    } catch {
      close(fds[1])
      throw error
    }
  }
}
