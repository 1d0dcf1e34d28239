import Glibc

/// A failed system call, keeping its C facts (house rule 4).
public struct SystemError: Error, Equatable, Sendable, CustomStringConvertible {
  public var errno: Int32
  public var call: String

  public init(errno: Int32, call: String) {
    self.errno = errno
    self.call = call
  }

  /// The error of the last failed call, from the thread's errno.
  static func last(_ call: String) -> SystemError { SystemError(errno: Glibc.errno, call: call) }

  public var description: String { "\(call): \(String(cString: strerror(errno)))" }
}

/// Runs a system call, retrying while it fails with EINTR (house rule 5).
@inline(__always)
func retryingEINTR<T: BinaryInteger>(_ body: () -> T) -> T {
  while true {
    let result = body()
    if result == -1 && errno == EINTR { continue }
    return result
  }
}
