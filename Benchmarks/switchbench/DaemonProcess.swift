import Glibc
import SwitchSystem
import Synchronization

/// Every process the benchmark started, by PID, so each one is ended on
/// every way out: the normal end, an error, or SIGINT/SIGTERM.
enum Children {
  private static let live = Mutex<[pid_t: String]>([:])
  private static let temporary = Mutex<String?>(nil)

  static func add(_ pid: pid_t, _ name: String) { live.withLock { $0[pid] = name } }
  static func remove(_ pid: pid_t) { _ = live.withLock { $0.removeValue(forKey: pid) } }

  /// The temp dir to remove when interrupted.
  static func setTemporaryDirectory(_ path: String?) { temporary.withLock { $0 = path } }

  /// Ends every child still running (SIGTERM, then SIGKILL after 3 s).
  static func stopAll() {
    let pids = live.withLock { Array($0.keys) }
    for pid in pids { stopProcess(pid) }
  }

  /// Blocks SIGINT/SIGTERM/SIGHUP in every thread and waits for them on one
  /// thread that stops the children by PID and exits. Call before any thread starts.
  static func installSignalHandling() {
    signal(SIGPIPE, SIG_IGN)
    var set = sigset_t()
    sigemptyset(&set)
    sigaddset(&set, SIGINT)
    sigaddset(&set, SIGTERM)
    sigaddset(&set, SIGHUP)
    pthread_sigmask(SIG_BLOCK, &set, nil)
    let blocked = set
    let thread = startJoinableThread {
      var waited = blocked
      var signal: Int32 = 0
      sigwait(&waited, &signal)
      printError("switchbench: signal \(signal): stopping what it started")
      stopAll()
      if let dir = temporary.withLock({ $0 }) { removeTree(dir) }
      _exit(130)
    }
    pthread_detach(thread)
  }
}

/// Sends SIGTERM to `pid`, waits up to `grace` seconds, then SIGKILL.
/// `reap`: it is our child (waitpid); otherwise (a process the D-Bus
/// daemon activated) wait until it is gone or a zombie of its parent.
func stopProcess(_ pid: pid_t, grace: Double = 3, reap: Bool = true) {
  var status: Int32 = 0
  func gone() -> Bool {
    if reap { return waitpid(pid, &status, WNOHANG) == pid }
    if kill(pid, 0) != 0 { return true }
    guard let stat = readFile("/proc/\(pid)/stat"), let close = stat.lastIndex(of: ")") else {
      return true
    }
    return stat[stat.index(after: close)...].hasPrefix(" Z")
  }
  if gone() {
    Children.remove(pid)
    return
  }
  kill(pid, SIGTERM)
  let deadline = nowSeconds() + grace
  while nowSeconds() < deadline {
    if gone() {
      Children.remove(pid)
      return
    }
    sleepSeconds(0.005)
  }
  kill(pid, SIGKILL)
  if reap {
    _ = waitpid(pid, &status, 0)
  } else {
    let killDeadline = nowSeconds() + 2
    while !gone() && nowSeconds() < killDeadline { sleepSeconds(0.005) }
  }
  Children.remove(pid)
}

/// Where a spawned process's output goes.
enum Output {
  case discard
  case file(String)
}

/// Starts `path` with `arguments` (without argv[0]) and `environment`
/// (nil: ours). Signals are reset to default and unblocked in the child.
func spawn(
  _ path: String, _ arguments: [String], environment: [String]? = nil, output: Output = .discard,
  name: String? = nil, track: Bool = true
) throws -> pid_t {
  var actions = posix_spawn_file_actions_t()
  posix_spawn_file_actions_init(&actions)
  defer { posix_spawn_file_actions_destroy(&actions) }
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
  switch output {
  case .discard:
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
  case .file(let file):
    posix_spawn_file_actions_addopen(&actions, 1, file, O_WRONLY | O_CREAT | O_APPEND, 0o644)
  }
  posix_spawn_file_actions_adddup2(&actions, 1, 2)

  var attributes = posix_spawnattr_t()
  posix_spawnattr_init(&attributes)
  defer { posix_spawnattr_destroy(&attributes) }
  var empty = sigset_t()
  sigemptyset(&empty)
  posix_spawnattr_setsigmask(&attributes, &empty)
  var defaults = sigset_t()
  sigemptyset(&defaults)
  for s in [SIGPIPE, SIGINT, SIGTERM, SIGHUP] { sigaddset(&defaults, s) }
  posix_spawnattr_setsigdefault(&attributes, &defaults)
  posix_spawnattr_setflags(
    &attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))

  let argv = ([path] + arguments).map { strdup($0) } + [nil]
  defer { for p in argv { free(p) } }
  let env: [UnsafeMutablePointer<CChar>?]
  if let environment {
    env = environment.map { strdup($0) } + [nil]
  } else {
    env = []
  }
  defer { for p in env { free(p) } }
  var pid: pid_t = 0
  let rc = argv.withUnsafeBufferPointer { argvBuffer in
    env.withUnsafeBufferPointer { envBuffer in
      if environment == nil {
        return posix_spawn(&pid, path, &actions, &attributes, argvBuffer.baseAddress!, environ)
      }
      return posix_spawn(
        &pid, path, &actions, &attributes, argvBuffer.baseAddress!, envBuffer.baseAddress!)
    }
  }
  guard rc == 0 else { throw BenchError("cannot start \(path): \(String(cString: strerror(rc)))") }
  if track { Children.add(pid, name ?? path) }
  return pid
}

/// Runs a short command to its end; returns its exit status and wall time.
func runTimed(
  _ path: String, _ arguments: [String], environment: [String]? = nil, output: Output = .discard
) throws -> (status: Int32, seconds: Double) {
  let start = nowNanoseconds()
  let pid = try spawn(path, arguments, environment: environment, output: output)
  var status: Int32 = 0
  while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
  let elapsed = Double(nowNanoseconds() - start) / 1e9
  Children.remove(pid)
  let exited = (status & 0x7f) == 0
  return (exited ? (status >> 8) & 0xff : 128 + (status & 0x7f), elapsed)
}

/// The environment as `NAME=value` strings, with `changes` applied.
func makeEnvironment(_ changes: [String: String]) -> [String] {
  var out: [String] = []
  var p = environ
  while let entry = p.pointee {
    let text = String(cString: entry)
    let name = text.split(separator: "=", maxSplits: 1).first.map(String.init) ?? text
    if changes[name] == nil { out.append(text) }
    p += 1
  }
  for (name, value) in changes.sorted(by: { $0.key < $1.key }) { out.append("\(name)=\(value)") }
  return out
}

/// A peak figure from /proc/PID/status, in KiB (`VmHWM`, `VmRSS`).
func procStatusKiB(_ pid: pid_t, _ field: String) -> Int? {
  guard let text = readFile("/proc/\(pid)/status") else { return nil }
  for line in text.split(separator: "\n") where line.hasPrefix("\(field):") {
    let digits = line.dropFirst(field.count + 1).filter { $0.isNumber }
    return Int(digits)
  }
  return nil
}

/// CPU seconds a process has run, all threads together: the sum of the
/// first field of /proc/PID/task/*/schedstat (nanoseconds on a CPU), so a
/// short window is not rounded to clock ticks as /proc/PID/stat would be.
/// Threads that ended earlier are not counted, so take differences only
/// over windows in which the process keeps its threads (switchd, Redis do).
func processCPUSeconds(_ pid: pid_t) -> Double? {
  guard let dir = opendir("/proc/\(pid)/task") else { return nil }
  defer { closedir(dir) }
  var total: UInt64 = 0
  var found = false
  while let entry = readdir(dir) {
    let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
      String(cString: raw.bindMemory(to: CChar.self).baseAddress!)
    }
    guard Int(name) != nil, let text = readFile("/proc/\(pid)/task/\(name)/schedstat"),
      let first = text.split(separator: " ").first, let ns = UInt64(first)
    else { continue }
    total += ns
    found = true
  }
  return found ? Double(total) / 1e9 : nil
}

/// A release switchd running in a temp dir, with its own config, socket and database.
final class DaemonProcess {
  let pid: pid_t
  let socket: String
  let logPath: String
  /// Seconds from spawn until a `status` request was answered.
  let readySeconds: Double

  private init(pid: pid_t, socket: String, logPath: String, readySeconds: Double) {
    self.pid = pid
    self.socket = socket
    self.logPath = logPath
    self.readySeconds = readySeconds
  }

  /// Starts `binary --config config --socket socket --database database`
  /// and waits (connect, then `status`) until it answers, or `timeout`.
  /// `launcher`: a command line to run it under (a tool that counts its work).
  static func start(
    binary: String, config: String, socket: String, database: String, logPath: String,
    environment: [String]? = nil, launcher: [String] = [], timeout: Double = 120
  ) throws -> DaemonProcess {
    let start = nowNanoseconds()
    let command =
      launcher + [binary, "--config", config, "--socket", socket, "--database", database]
    let pid = try spawn(
      command[0], Array(command.dropFirst()), environment: environment, output: .file(logPath),
      name: "switchd")
    let deadline = start + UInt64(timeout * 1e9)
    let status = Array("{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"status\"}\n".utf8)
    while nowNanoseconds() < deadline {
      var exit: Int32 = 0
      if waitpid(pid, &exit, WNOHANG) == pid {
        Children.remove(pid)
        throw BenchError("switchd exited at start:\n\(readFile(logPath) ?? "")")
      }
      let fd = connectUnix(socket)
      if fd < 0 {
        sleepSeconds(0.0002)
        continue
      }
      defer { close(fd) }
      guard sendAll(fd, status), let reply = readLines(fd, lines: 1, deadline: deadline),
        reply.starts(with: Array("{\"jsonrpc\":\"2.0\",\"id\":0,\"result\"".utf8))
      else { continue }
      let ready = Double(nowNanoseconds() - start) / 1e9
      return DaemonProcess(pid: pid, socket: socket, logPath: logPath, readySeconds: ready)
    }
    stopProcess(pid)
    throw BenchError("switchd did not become ready in \(timeout) s:\n\(readFile(logPath) ?? "")")
  }

  /// Peak resident memory (VmHWM) in KiB.
  var peakRSSKiB: Int? { procStatusKiB(pid, "VmHWM") }

  func stop() { stopProcess(pid, grace: 10) }
}

/// Writes a line to stderr.
func printError(_ line: String) {
  let bytes = Array((line + "\n").utf8)
  _ = bytes.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
}
