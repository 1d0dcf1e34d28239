import Glibc
import SwitchProtocol
import SwitchSystem

/// polkit's text agent for this process, as `systemctl` brings one: when a
/// call that needs a right is made from a terminal, switchctl starts
/// Debian's `pkttyagent` for its own pid and asks with
/// `allowInteractiveAuthentication`, so that under `Authorization=polkit`
/// polkit can ask the person for a password right there. It is started
/// when a call comes back "authentication needed" (polkit found no agent),
/// and the call is made again: a call nobody asks polkit about starts none.
/// Without the agent (not installed, no system bus) the refusal stands,
/// and says that authentication was needed.
final class PolkitAgent {
  static let path = "/usr/bin/pkttyagent"
  /// How long the agent may take to register before switchctl goes on
  /// (it says it has at once; this bounds an agent that hangs).
  static let registerMilliseconds: Int32 = 30_000

  private var pid: pid_t = 0

  /// Starts the agent for this process and waits until it has registered
  /// with polkit (it closes its notify descriptor then) or failed. False
  /// when there is none.
  func start() -> Bool {
    guard pid == 0, access(Self.path, X_OK) == 0 else { return pid != 0 }
    var pipeFDs: [Int32] = [0, 0]
    guard pipe(&pipeFDs) == 0 else { return false }
    for fd in pipeFDs { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
    defer { close(pipeFDs[0]) }
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    // The write end as descriptor 3 (dup2 clears close-on-exec).
    posix_spawn_file_actions_adddup2(&actions, pipeFDs[1], 3)
    // Not --fallback (systemctl's): polkit 122 then never uses an agent
    // registered for a process, only for a session.
    let argv = [Self.path, "--process", "\(getpid())", "--notify-fd", "3"]
    var child: pid_t = 0
    // Swift's own copies, not strdup's: a sanitizer's free cannot take
    // glibc's inner malloc (seen under TSan).
    let rc = ApplyProcess.withCStrings(argv) { cArgs in
      posix_spawn(&child, Self.path, &actions, nil, cArgs, environ)
    }
    close(pipeFDs[1])
    guard rc == 0 else { return false }
    pid = child
    // Registered: the agent closes descriptor 3 (EOF here). Exited: EOF too.
    var ready = pollfd(fd: pipeFDs[0], events: Int16(POLLIN), revents: 0)
    _ = poll(&ready, 1, Self.registerMilliseconds)
    var status: Int32 = 0
    if waitpid(child, &status, WNOHANG) == child {
      pid = 0
      return false
    }
    return true
  }

  /// Whether the agent was started (and had not exited by then).
  var isRunning: Bool { pid != 0 }

  /// Makes `call` (one that allows interactive authentication); when
  /// polkit answered that authentication is needed, having found no agent,
  /// starts this one and makes it once more. The refused call did nothing.
  func callStartingIfAsked(
    _ call: () throws(ClientError) -> Result<JSONValue, RemoteError>
  ) throws(ClientError) -> Result<JSONValue, RemoteError> {
    let first = try call()
    guard case .failure(let refusal) = first, refusal.code == .permissionDenied,
      refusal.data[WireField.authenticationRequired]?.boolValue == true, !isRunning, start()
    else { return first }
    return try call()
  }

  /// Ends the agent, if one runs.
  func stop() {
    guard pid != 0 else { return }
    kill(pid, SIGTERM)
    var status: Int32 = 0
    _ = waitpid(pid, &status, 0)
    pid = 0
  }

  deinit { stop() }
}
