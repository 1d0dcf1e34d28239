import Glibc
import SwitchCore
import SwitchSystem
import Synchronization

/// Log lines for journald: stderr, a `<N>` syslog priority prefix, no
/// timestamps (journald adds them). On a terminal, where a person reads
/// them, the prefix is left out. Thread-safe; lines are written whole.
public final class Log: Sendable {
  private let threshold: Atomic<Int>
  private let limiter = ThreadLock(RateLimiter())
  private let priorityPrefixes: Bool

  /// - Parameter priorityPrefixes: whether lines start with `<N>`; by
  ///   default, whether stderr goes to journald or anywhere but a terminal.
  public init(
    level: LogLevel = .info, priorityPrefixes: Bool = Log.stderrWantsPriorityPrefixes()
  ) {
    threshold = Atomic(level.rawValue)
    self.priorityPrefixes = priorityPrefixes
  }

  /// Whether this process's stderr should carry `<N>` prefixes.
  public static func stderrWantsPriorityPrefixes() -> Bool {
    var st = stat()
    let identity = fstat(2, &st) == 0 ? "\(st.st_dev):\(st.st_ino)" : nil
    let journalStream = getenv("JOURNAL_STREAM").map { String(cString: $0) }
    return wantsPriorityPrefixes(
      isTerminal: isatty(2) == 1, journalStream: journalStream, stderrIdentity: identity)
  }

  /// The rule: prefixes when journald reads stderr (`JOURNAL_STREAM` holds
  /// the `device:inode` of the stream it gave us, and stderr still is that
  /// stream), or when stderr is not a terminal (a supervisor or a file that
  /// a collector parses); none on a terminal.
  static func wantsPriorityPrefixes(
    isTerminal: Bool, journalStream: String?, stderrIdentity: String?
  ) -> Bool {
    if let journalStream, let stderrIdentity, journalStream == stderrIdentity { return true }
    return !isTerminal
  }

  public func setLevel(_ level: LogLevel) { threshold.store(level.rawValue, ordering: .relaxed) }

  public func error(_ message: String) { write(.error, message) }
  public func warning(_ message: String) { write(.warning, message) }
  public func notice(_ message: String) { write(.notice, message) }
  public func info(_ message: String) { write(.info, message) }
  public func debug(_ message: String) { write(.debug, message) }

  /// Logs at most a few lines per `cause` and 10-second window, then one
  /// line saying how many were suppressed: a flood of bad clients cannot
  /// fill the journal.
  public func rateLimited(_ level: LogLevel, cause: String, _ message: @autoclosure () -> String) {
    guard level.rawValue <= threshold.load(ordering: .relaxed) else { return }
    let now = monotonicSeconds()
    let verdict = limiter.withLock { $0.admit(cause: cause, now: now) }
    switch verdict {
    case .log(let suppressedBefore):
      if suppressedBefore > 0 {
        write(level, "(\(suppressedBefore) more \"\(cause)\" lines were suppressed)")
      }
      write(level, message())
    case .suppress:
      break
    }
  }

  /// One line at `level` (what `error`, `warning`… write), for a caller
  /// whose level is data.
  func write(_ level: LogLevel, _ message: String) {
    guard level.rawValue <= threshold.load(ordering: .relaxed) else { return }
    var line = priorityPrefixes ? "<\(level.rawValue)>" : ""
    for scalar in message.unicodeScalars {
      line.unicodeScalars.append(scalar == "\n" ? " " : scalar)
    }
    line += "\n"
    var bytes = Array(line.utf8)
    bytes.withUnsafeMutableBytes { buffer in
      var offset = 0
      while offset < buffer.count {
        let n = retryingEINTR {
          Glibc.write(2, buffer.baseAddress! + offset, buffer.count - offset)
        }
        if n <= 0 { return }
        offset += n
      }
    }
  }
}

private struct RateLimiter {
  enum Verdict {
    case log(suppressedBefore: Int)
    case suppress
  }
  static let window = 10.0
  static let linesPerWindow = 5
  var windows: [String: (start: Double, count: Int, suppressed: Int)] = [:]

  mutating func admit(cause: String, now: Double) -> Verdict {
    var w = windows[cause] ?? (start: now, count: 0, suppressed: 0)
    var suppressedBefore = 0
    if now - w.start >= Self.window {
      suppressedBefore = w.suppressed
      w = (start: now, count: 0, suppressed: 0)
    }
    if w.count < Self.linesPerWindow {
      w.count += 1
      windows[cause] = w
      return .log(suppressedBefore: suppressedBefore)
    }
    w.suppressed += 1
    windows[cause] = w
    return .suppress
  }
}
