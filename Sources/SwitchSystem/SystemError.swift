// SwitchSystem: the thin layer over Glibc that the daemon and switchctl
// share. Every C call with a protocol of its own (EINTR, errno, sockaddr_un,
// advisory locks, directory ownership, the group database) is wrapped here
// once, so the layers above speak in Swift values and typed errors.
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
  public static func last(_ call: String) -> SystemError {
    SystemError(errno: Glibc.errno, call: call)
  }

  public var description: String { "\(call): \(reason)" }

  /// What errno means, for a person: "No such file or directory".
  public var reason: String { String(cString: strerror(errno)) }
}

/// Runs a system call, retrying while it fails with EINTR (house rule 5).
@inlinable @inline(__always)
public func retryingEINTR<T: BinaryInteger>(_ body: () -> T) -> T {
  while true {
    let result = body()
    if result == -1 && errno == EINTR { continue }
    return result
  }
}
