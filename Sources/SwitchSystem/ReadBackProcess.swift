import CShim
import Glibc

/// Runs the programs that read a switch's state back (CONFIG.md,
/// `ExecCheck=` and `ExecWatch=`) as `ApplyProcess` runs an apply command:
/// no shell, a clean environment, standard input from /dev/null, a process
/// group of its own killed once the program exits, always reaped. Standard
/// output is what they read: lines of `on` or `off`.
///
/// Both block the calling thread: call them from a thread that may wait,
/// never from the event loop or the writer.
public enum ReadBackProcess {
  /// The most standard output kept of a check: one word is expected.
  public static let maxCheckOutputBytes = 4096
  /// The longest line a watch may print; a longer one is read as garbage.
  public static let maxWatchLineBytes = 4096
  /// How long a watch program that closed its output has to exit before
  /// its group is killed.
  public static let watchEndGraceSeconds = 1.0

  /// What a line says: on, off, or something else (nil).
  public static func state(of line: some Collection<UInt8>) -> Bool? {
    var text = String(decoding: line, as: UTF8.self)
    while let last = text.last, last == " " || last == "\t" || last == "\r" { text.removeLast() }
    while let first = text.first, first == " " || first == "\t" { text.removeFirst() }
    switch text {
    case "on": return true
    case "off": return false
    default: return nil
    }
  }

  /// Runs an `ExecCheck=` program to its end: the state it printed, or why
  /// there is none (a failure, a time-out, a line that is not `on` or `off`).
  public static func check(
    arguments: [String], environment: [String], timeoutMilliseconds: Int
  ) -> Result<Bool, CheckFailure> {
    let run = Spawned.start(arguments: arguments, environment: environment)
    guard case .success(let spawned) = run else {
      if case .failure(let failure) = run {
        return .failure(CheckFailure(couldNotStart: failure.errno))
      }
      return .failure(CheckFailure(reason: "could not be started"))
    }
    let deadline = monotonicSeconds() + Double(timeoutMilliseconds) / 1000
    var output: [UInt8] = []
    var errors = ErrorOutputCollector()
    // Its pipes close before it ends when it closes them itself (coreutils'
    // echo does, in an exit handler): killed then, it read as "killed by
    // signal 9" in about half the checks (`ExecCheck=/bin/echo off`).
    let finished =
      spawned.drain(until: deadline, output: &output, errors: &errors)
      && ChildExit.wait(spawned.pid, until: deadline)
    let status = spawned.end()
    if !finished {
      let seconds =
        timeoutMilliseconds % 1000 == 0
        ? "\(timeoutMilliseconds / 1000)" : "\(Double(timeoutMilliseconds) / 1000)"
      return .failure(CheckFailure(reason: "timed out after \(seconds)s"))
    }
    if status != 0 {
      let signal = status & 0x7f
      let fallback =
        signal != 0 ? "killed by signal \(signal)" : "exit status \((status >> 8) & 0xff)"
      return .failure(CheckFailure(reason: errors.firstLine ?? fallback))
    }
    let firstLine = output.split(separator: UInt8(ascii: "\n")).first ?? []
    guard let state = state(of: firstLine) else {
      let printed = programText(firstLine.prefix(80))
      return .failure(CheckFailure(reason: "printed \"\(printed)\", not on or off"))
    }
    return .success(state)
  }

  /// Why a check read nothing.
  public struct CheckFailure: Error, Equatable, Sendable {
    public var reason: String

    public init(reason: String) { self.reason = reason }

    init(couldNotStart errno: Int32) {
      reason = "could not be started: \(SystemError(errno: errno, call: "posix_spawn").reason)"
    }
  }

  /// Runs an `ExecWatch=` program until it exits or `stop` ends it,
  /// calling `line` with each state it prints (nil for a line that is not
  /// `on` or `off`) and `errorLine` with each non-empty line of its
  /// standard error, as they come. `started` gets the running process, so
  /// that another thread may stop it. Returns why it ended.
  public static func follow(
    arguments: [String], environment: [String], started: (RunningWatch) -> Void,
    line: (Bool?) -> Void, errorLine: (String) -> Void,
    endGraceSeconds: Double = watchEndGraceSeconds
  ) -> String {
    let run = Spawned.start(arguments: arguments, environment: environment)
    guard case .success(let spawned) = run else {
      if case .failure(let failure) = run {
        return CheckFailure(couldNotStart: failure.errno).reason
      }
      return "could not be started"
    }
    let running = RunningWatch(pid: spawned.pid)
    started(running)
    var lines = LineSplitter()
    var errors = LineSplitter()
    spawned.follow { fd, bytes in
      if fd == spawned.output {
        lines.append(bytes) { line(state(of: $0)) }
      } else {
        errors.append(bytes) { text in
          let message = programText(text.prefix(1024))
          if !message.allSatisfy({ $0 == " " || $0 == "\t" || $0 == "\r" }) { errorLine(message) }
        }
      }
    }
    // Given a moment to end by itself once its pipes are closed, so that
    // how it ended is its own exit status, not the kill that follows.
    _ = ChildExit.wait(spawned.pid, until: monotonicSeconds() + endGraceSeconds)
    let status = running.reap()
    let signal = status & 0x7f
    if running.wasStopped { return "stopped" }
    return signal != 0 ? "killed by signal \(signal)" : "exit status \((status >> 8) & 0xff)"
  }
}

/// A watch program that is running: another thread may `stop` it.
/// `@unchecked Sendable`: `pid` and `stopped` are touched only with the mutex held.
public final class RunningWatch: @unchecked Sendable {
  private var pid: Int32
  private var stopped = false
  private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)

  init(pid: Int32) {
    self.pid = pid
    pthread_mutex_init(mutex, nil)
  }

  deinit {
    pthread_mutex_destroy(mutex)
    mutex.deallocate()
  }

  /// Kills the program's process group (it is not reaped yet, so its id
  /// cannot have been reused); the following thread then sees its end.
  public func stop() {
    pthread_mutex_lock(mutex)
    stopped = true
    if pid > 0 { _ = kill(-pid, SIGKILL) }
    pthread_mutex_unlock(mutex)
  }

  var wasStopped: Bool {
    pthread_mutex_lock(mutex)
    defer { pthread_mutex_unlock(mutex) }
    return stopped
  }

  /// Kills what is left of the group and reaps the program: its status.
  func reap() -> Int32 {
    pthread_mutex_lock(mutex)
    let leader = pid
    _ = kill(-leader, SIGKILL)
    var status: Int32 = 0
    _ = retryingEINTR { waitpid(leader, &status, 0) }
    pid = 0
    pthread_mutex_unlock(mutex)
    return status
  }
}

/// Splits bytes that come in pieces into lines, each at most
/// `ReadBackProcess.maxWatchLineBytes` (the rest of a longer one is dropped).
struct LineSplitter {
  private var partial: [UInt8] = []

  mutating func append(_ bytes: ArraySlice<UInt8>, _ each: (ArraySlice<UInt8>) -> Void) {
    for byte in bytes {
      if byte == UInt8(ascii: "\n") {
        each(partial[...])
        partial.removeAll(keepingCapacity: true)
      } else if partial.count < ReadBackProcess.maxWatchLineBytes {
        partial.append(byte)
      }
    }
  }
}

/// Why a program could not be started: an errno.
private struct SpawnFailure: Error {
  var errno: Int32
}

/// A program started with its standard output and error on pipes, whose
/// read ends it closes when it goes.
private final class Spawned {
  let pid: Int32
  let output: Int32
  let errors: Int32

  private init(pid: Int32, output: Int32, errors: Int32) {
    self.pid = pid
    self.output = output
    self.errors = errors
  }

  deinit {
    _ = close(output)
    _ = close(errors)
  }

  static func start(arguments: [String], environment: [String]) -> Result<Spawned, SpawnFailure> {
    var out: [Int32] = [-1, -1]
    var err: [Int32] = [-1, -1]
    guard shim_pipe_for_output(&out) == 0 else { return .failure(SpawnFailure(errno: errno)) }
    guard shim_pipe_for_output(&err) == 0 else {
      let failure = SpawnFailure(errno: errno)
      _ = close(out[0])
      _ = close(out[1])
      return .failure(failure)
    }
    var pid: Int32 = 0
    let spawned = ApplyProcess.withCStrings(arguments) { argv in
      ApplyProcess.withCStrings(environment) { envp in
        shim_spawn_reader(arguments[0], argv, envp, out[1], err[1], &pid)
      }
    }
    // The child has its own copies: end of file comes when it and its children close them.
    _ = close(out[1])
    _ = close(err[1])
    guard spawned == 0 else {
      _ = close(out[0])
      _ = close(err[0])
      return .failure(SpawnFailure(errno: spawned))
    }
    return .success(Spawned(pid: pid, output: out[0], errors: err[0]))
  }

  /// Reads standard output (up to `maxCheckOutputBytes`) and error until
  /// both are closed, or the deadline passes (false).
  func drain(
    until deadline: Double, output kept: inout [UInt8], errors collector: inout ErrorOutputCollector
  ) -> Bool {
    var outputOpen = true
    var errorsOpen = true
    var chunk = [UInt8](repeating: 0, count: 4096)
    while outputOpen || errorsOpen {
      let remaining = Int64(((deadline - monotonicSeconds()) * 1000).rounded(.up))
      if remaining <= 0 { return false }
      var polled = [
        pollfd(fd: outputOpen ? output : -1, events: Int16(POLLIN), revents: 0),
        pollfd(fd: errorsOpen ? errors : -1, events: Int16(POLLIN), revents: 0),
      ]
      let ready = polled.withUnsafeMutableBufferPointer { buffer in
        poll(buffer.baseAddress, nfds_t(buffer.count), Int32(min(remaining, Int64(Int32.max))))
      }
      guard ready > 0 else { continue }
      if outputOpen, polled[0].revents != 0 {
        outputOpen = Self.read(output, into: &chunk) { bytes in
          let room = ReadBackProcess.maxCheckOutputBytes - kept.count
          if room > 0 { kept.append(contentsOf: bytes.prefix(room)) }
        }
      }
      if errorsOpen, polled[1].revents != 0 { errorsOpen = collector.read(errors) }
    }
    return true
  }

  /// Reads standard output and error as they come, handing each piece to
  /// `each` with its descriptor, until both are closed (the program and
  /// whatever it started have exited or were killed).
  func follow(_ each: (Int32, ArraySlice<UInt8>) -> Void) {
    var open = [output, errors]
    var chunk = [UInt8](repeating: 0, count: 4096)
    while !open.isEmpty {
      var polled = open.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
      let ready = polled.withUnsafeMutableBufferPointer { buffer in
        poll(buffer.baseAddress, nfds_t(buffer.count), -1)
      }
      guard ready > 0 else { continue }
      for entry in polled where entry.revents != 0 {
        let stillOpen = Self.read(entry.fd, into: &chunk) { each(entry.fd, $0) }
        if !stillOpen { open.removeAll { $0 == entry.fd } }
      }
    }
  }

  /// Kills what is left of the group and reaps the program: its status.
  func end() -> Int32 {
    _ = kill(-pid, SIGKILL)
    var status: Int32 = 0
    _ = retryingEINTR { waitpid(pid, &status, 0) }
    return status
  }

  /// Reads what the non-blocking `fd` holds now; false at end of file or on an error.
  static func read(_ fd: Int32, into chunk: inout [UInt8], _ each: (ArraySlice<UInt8>) -> Void)
    -> Bool
  {
    while true {
      let n = chunk.withUnsafeMutableBytes { raw in
        retryingEINTR { Glibc.read(fd, raw.baseAddress, raw.count) }
      }
      if n > 0 {
        each(chunk[0..<n])
        continue
      }
      if n < 0 && errno == EAGAIN { return true }
      return false
    }
  }
}
