import Glibc

/// Splits a byte stream into lines (NDJSON framing), bounded by `maxFrameBytes`.
///
/// A line longer than the bound is reported once as `.oversized` and its
/// bytes are dropped up to its newline, so the connection stays usable and
/// the buffer never grows past the bound. Blank lines are skipped. varlink
/// frames the same way with NUL for the newline (`delimiter: 0`), but
/// every varlink frame is a message, a blank one too: it is answered (an
/// error), as a client that sent it waits for a reply.
public struct LineFramer {
  public enum Frame: Equatable {
    case line(ArraySlice<UInt8>)
    case oversized
  }

  public let maxFrameBytes: Int
  public let delimiter: UInt8
  /// What was received, valid up to `end`. Emptied by moving `end`, not
  /// by `Array.removeAll(keepingCapacity:)`, which cost ~80 instructions a
  /// request (callgrind); the array grows only for more than it held.
  private var buffer: [UInt8] = []
  private var end = 0
  private var start = 0
  private var scanned = 0
  private var discarding = false

  public init(maxFrameBytes: Int, delimiter: UInt8 = UInt8(ascii: "\n")) {
    self.maxFrameBytes = maxFrameBytes
    self.delimiter = delimiter
  }

  /// Bytes received and not yet returned as a frame.
  public var bufferedCount: Int { end - start }

  public mutating func append(_ bytes: UnsafeRawBufferPointer) {
    compact()
    guard let source = bytes.baseAddress, bytes.count > 0 else { return }
    let needed = end + bytes.count
    if needed > buffer.count {
      buffer.append(contentsOf: repeatElement(0, count: needed - buffer.count))
    }
    buffer.withUnsafeMutableBytes { raw in
      (raw.baseAddress! + end).copyMemory(from: source, byteCount: bytes.count)
    }
    end = needed
  }

  public mutating func append(_ bytes: [UInt8]) {
    bytes.withUnsafeBytes { append($0) }
  }

  /// The next complete frame, or nil until more bytes arrive.
  public mutating func next() -> Frame? {
    while true {
      guard let newline = firstDelimiter(from: scanned) else {
        scanned = end
        if discarding {
          end = 0
          start = 0
          scanned = 0
        } else if end - start > maxFrameBytes {
          discarding = true
          end = 0
          start = 0
          scanned = 0
          return .oversized
        }
        return nil
      }
      let line = start..<newline
      start = newline + 1
      scanned = start
      if discarding {
        discarding = false
        continue
      }
      if line.count > maxFrameBytes { return .oversized }
      if delimiter != 0 && buffer[line].allSatisfy(Self.isBlank) { continue }
      return .line(buffer[line])
    }
  }

  /// The index of the first delimiter at or after `start`: memchr, not
  /// the generic search, which cost ~5 instructions a byte of every line.
  private func firstDelimiter(from start: Int) -> Int? {
    guard start < end else { return nil }
    return buffer.withUnsafeBufferPointer { all in
      let base = all.baseAddress!
      guard let found = memchr(base + start, Int32(delimiter), end - start) else {
        return nil
      }
      return base.distance(to: found.assumingMemoryBound(to: UInt8.self))
    }
  }

  private static func isBlank(_ b: UInt8) -> Bool {
    b == UInt8(ascii: " ") || b == UInt8(ascii: "\t") || b == UInt8(ascii: "\r")
  }

  /// Drops consumed bytes before appending, so the buffer holds at most one
  /// partial line plus what was just received.
  private mutating func compact() {
    guard start > 0 else { return }
    if start < end {
      let (from, count) = (start, end - start)
      buffer.withUnsafeMutableBytes { raw in
        _ = memmove(raw.baseAddress!, raw.baseAddress! + from, count)
      }
    }
    end -= start
    scanned -= start
    start = 0
  }
}
