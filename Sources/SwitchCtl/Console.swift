import Glibc

/// Where switchctl's output goes: the process's stdout and stderr, or a
/// capture in tests, so every command runs in-process without a terminal.
protocol Console: AnyObject {
  /// Writes complete lines to standard output, now: scripts pipe `watch`,
  /// so nothing may sit in a buffer.
  func out(_ lines: [String])
  /// Writes complete lines to standard error.
  func err(_ lines: [String])
  /// False once nobody reads standard output any more (or a test has seen
  /// enough); `watch` then stops.
  var wantsMore: Bool { get }
  /// Why standard output could not be written, when it failed for another
  /// reason than its reader leaving (a full disk, a closed descriptor):
  /// the output is lost, so the command failed.
  var outputFailure: String? { get }
  /// The descriptor standard output is, whose reader leaving ends a
  /// `watch` at once (`DaemonClient.outputToFollow`); nil in a capture.
  var outputDescriptor: Int32? { get }
}

extension Console {
  func out(_ line: String) { out([line]) }
  func err(_ line: String) { err([line]) }
  var outputFailure: String? { nil }
  var outputDescriptor: Int32? { nil }
}

/// File descriptors 1 and 2, written with `write(2)` and no buffer, so a
/// line is out the moment it is printed and an exit loses nothing.
final class StandardConsole: Console {
  private var outputClosed = false
  private(set) var outputFailure: String?
  var outputDescriptor: Int32? { STDOUT_FILENO }

  var wantsMore: Bool { !outputClosed }

  func out(_ lines: [String]) {
    guard !outputClosed else { return }
    if !Self.write(lines, to: 1) {
      outputClosed = true
      // A reader that left (`watch | head -1`) is how a pipe ends, not a failure.
      if errno != EPIPE { outputFailure = String(cString: strerror(errno)) }
    }
  }

  func err(_ lines: [String]) {
    _ = Self.write(lines, to: 2)
  }

  /// Writes the lines in one buffer; false when the reader is gone (EPIPE)
  /// or the descriptor fails otherwise.
  private static func write(_ lines: [String], to fd: Int32) -> Bool {
    guard !lines.isEmpty else { return true }
    var bytes: [UInt8] = []
    for line in lines {
      bytes.append(contentsOf: line.utf8)
      bytes.append(UInt8(ascii: "\n"))
    }
    var offset = 0
    while offset < bytes.count {
      let count = bytes.withUnsafeBytes {
        Glibc.write(fd, $0.baseAddress! + offset, $0.count - offset)
      }
      if count >= 0 {
        offset += count
      } else if errno != EINTR {
        return false
      }
    }
    return true
  }
}
