import Glibc

/// A file descriptor with one owner: closed when its owner goes away, or
/// handed on with `release()`. Non-copyable, so it cannot be closed twice.
public struct Descriptor: ~Copyable {
  public let raw: Int32

  /// Takes ownership of `raw` (which must be open).
  public init(_ raw: Int32) { self.raw = raw }

  /// Opens `path`; nil with errno set when that fails.
  public init?(opening path: String, _ flags: Int32, mode: mode_t = 0) {
    let fd = retryingEINTR { open(path, flags | O_CLOEXEC, mode) }
    guard fd >= 0 else { return nil }
    raw = fd
  }

  /// Gives the descriptor up without closing it; the caller owns it now.
  public consuming func release() -> Int32 {
    let fd = raw
    discard self
    return fd
  }

  deinit { _ = Glibc.close(raw) }
}

extension Descriptor {
  /// Writes all of `bytes`, retrying short writes and EINTR.
  public func writeAll(_ bytes: [UInt8]) throws(SystemError) {
    var offset = 0
    while offset < bytes.count {
      let n = bytes.withUnsafeBytes { buffer in
        retryingEINTR { write(raw, buffer.baseAddress! + offset, buffer.count - offset) }
      }
      guard n > 0 else { throw SystemError.last("write") }
      offset += n
    }
  }

  /// Reads to the end of the file, refusing more than `limit` bytes.
  public func readAll(limit: Int) throws(SystemError) -> [UInt8] {
    var bytes: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 65_536)
    while true {
      let n = chunk.withUnsafeMutableBytes { raw in
        retryingEINTR { read(self.raw, raw.baseAddress, raw.count) }
      }
      if n < 0 { throw SystemError.last("read") }
      if n == 0 { return bytes }
      bytes.append(contentsOf: chunk[0..<n])
      if bytes.count > limit { throw SystemError(errno: EFBIG, call: "read") }
    }
  }
}
