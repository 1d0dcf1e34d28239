import CShim
import Glibc

/// Runs one apply command to its end (CONFIG.md, `ExecApply=`): no shell, a
/// clean environment, standard input from /dev/null, standard output
/// discarded, standard error read through a pipe and bounded; a time limit
/// after which the whole process group is killed; whatever the program left
/// in its process group is killed once it exits; always reaped.
///
/// `run` blocks the calling thread until all that is done: call it from a
/// thread that may wait (the daemon's apply pool), never from the event loop.
public enum ApplyProcess {
  /// How a run ended.
  public enum Outcome: Equatable, Sendable {
    case exited(status: Int32)
    case killed(signal: Int32)
    /// It ran past its time limit; its process group was killed.
    case timedOut
    /// It could not be started (`errno`, from posix_spawn or a pipe).
    case couldNotStart(errno: Int32)
  }

  /// What a run produced.
  public struct Result: Equatable, Sendable {
    public var outcome: Outcome
    /// The first non-empty line written to standard error (at most
    /// `maxReasonBytes`), nil when there was none.
    public var firstErrorLine: String?

    public init(outcome: Outcome, firstErrorLine: String?) {
      self.outcome = outcome
      self.firstErrorLine = firstErrorLine
    }

    public var succeeded: Bool { outcome == .exited(status: 0) }
  }

  /// Standard error kept for finding the first line; the rest is read and dropped.
  public static let maxKeptErrorBytes = 65_536
  /// The longest reason taken from a line of standard error.
  public static let maxReasonBytes = 1024

  /// Runs `arguments[0]` (an absolute path) with `arguments` and exactly
  /// `environment` ("NAME=value" strings), for at most `timeoutMilliseconds`.
  public static func run(
    arguments: [String], environment: [String], timeoutMilliseconds: Int
  ) -> Result {
    var fds: [Int32] = [-1, -1]
    guard shim_pipe_for_output(&fds) == 0 else {
      return Result(outcome: .couldNotStart(errno: errno), firstErrorLine: nil)
    }
    let errorOutput = Descriptor(fds[0])
    var pid: Int32 = 0
    let spawned = withCStrings(arguments) { argv in
      withCStrings(environment) { envp in
        shim_spawn_apply(arguments[0], argv, envp, fds[1], &pid)
      }
    }
    _ = close(fds[1])  // the child has its own copy; EOF comes when it and its children close
    guard spawned == 0 else {
      return Result(outcome: .couldNotStart(errno: spawned), firstErrorLine: nil)
    }
    var collector = ErrorOutputCollector()
    let finished = ChildExit.wait(
      pid, until: monotonicSeconds() + Double(timeoutMilliseconds) / 1000,
      draining: errorOutput.raw
    ) { collector.read($0) }
    // The leader is exited but not reaped (or still running, when timed
    // out), so its process group id cannot have been reused: kill the group.
    _ = kill(-pid, SIGKILL)
    var status: Int32 = 0
    _ = retryingEINTR { waitpid(pid, &status, 0) }
    _ = collector.read(errorOutput.raw)  // what was written before the end
    let line = collector.firstLine
    if !finished { return Result(outcome: .timedOut, firstErrorLine: line) }
    let signal = status & 0x7f
    if signal != 0 { return Result(outcome: .killed(signal: signal), firstErrorLine: line) }
    return Result(outcome: .exited(status: (status >> 8) & 0xff), firstErrorLine: line)
  }

  /// Calls `body` with a NULL-terminated array of C strings that live for the call.
  public static func withCStrings<R>(
    _ strings: [String], _ body: (UnsafePointer<UnsafeMutablePointer<CChar>?>) -> R
  ) -> R {
    // Copied into memory Swift allocates (and frees), not strdup's: one
    // allocator for both ends, whatever a sanitizer interposes.
    var pointers: [UnsafeMutablePointer<CChar>?] = strings.map { string in
      let bytes = Array(string.utf8CString)
      let copy = UnsafeMutablePointer<CChar>.allocate(capacity: bytes.count)
      copy.initialize(from: bytes, count: bytes.count)
      return copy
    }
    pointers.append(nil)
    defer { for pointer in pointers { pointer?.deallocate() } }
    return pointers.withUnsafeBufferPointer { body($0.baseAddress!) }
  }
}

/// Standard error of a run: the first `maxKeptErrorBytes` kept, the rest
/// read and dropped.
struct ErrorOutputCollector {
  private(set) var kept: [UInt8] = []
  private var chunk = [UInt8](repeating: 0, count: 16_384)

  /// Reads what `fd` (non-blocking) holds now. Returns false at end of file
  /// or on an error, true while more may come.
  mutating func read(_ fd: Int32) -> Bool {
    while true {
      let n = chunk.withUnsafeMutableBytes { raw in
        retryingEINTR { Glibc.read(fd, raw.baseAddress, raw.count) }
      }
      if n > 0 {
        let room = ApplyProcess.maxKeptErrorBytes - kept.count
        if room > 0 { kept.append(contentsOf: chunk[0..<min(n, room)]) }
        continue
      }
      if n < 0 && errno == EAGAIN { return true }
      return false
    }
  }

  /// The first line with something other than white space in it, trimmed
  /// and cut to `maxReasonBytes` (on a character boundary).
  var firstLine: String? {
    for line in kept.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: true) {
      let text = programText(line).trimmingWhiteSpace()
      if text.isEmpty { continue }
      var cut = ""
      for character in text {
        if cut.utf8.count + character.utf8.count > ApplyProcess.maxReasonBytes { break }
        cut.append(character)
      }
      return cut
    }
    return nil
  }
}

extension String {
  fileprivate func trimmingWhiteSpace() -> String {
    let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" || $0 == "\r" }
    guard let first = firstIndex(where: { !isSpace($0) }),
      let last = lastIndex(where: { !isSpace($0) })
    else { return "" }
    return String(self[first...last])
  }
}
