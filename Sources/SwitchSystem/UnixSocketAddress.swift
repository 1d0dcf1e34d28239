import Glibc

/// A `sockaddr_un`, built in one place: a file system path, or an abstract
/// name written `@name` (systemd's spelling, as in `NOTIFY_SOCKET`).
public struct UnixSocketAddress: Sendable {
  /// `sun_path` holds 108 bytes; a path needs one of them for its NUL.
  public static let maxPathBytes = MemoryLayout.size(ofValue: sockaddr_un().sun_path) - 1

  /// The path (or `@name`) does not fit in `sun_path`, or is empty.
  public struct PathTooLong: Error, Equatable, Sendable, CustomStringConvertible {
    public var path: String
    public var description: String {
      "the socket path \(path) is longer than \(UnixSocketAddress.maxPathBytes) bytes"
    }
  }

  private var storage = sockaddr_un()
  /// The address length to pass with it: an abstract name is exactly its
  /// bytes, a path includes its terminating NUL.
  public let length: socklen_t

  public init(_ path: String) throws(PathTooLong) {
    var bytes = Array(path.utf8)
    let abstract = bytes.first == UInt8(ascii: "@")
    if abstract { bytes[0] = 0 }
    guard !bytes.isEmpty, bytes.count <= Self.maxPathBytes else { throw PathTooLong(path: path) }
    storage.sun_family = sa_family_t(AF_UNIX)
    withUnsafeMutableBytes(of: &storage.sun_path) { raw in raw.copyBytes(from: bytes) }
    length = socklen_t(
      MemoryLayout<sockaddr_un>.offset(of: \.sun_path)! + bytes.count + (abstract ? 0 : 1))
  }

  /// Calls `body` with the address as the `sockaddr` pointer C wants.
  public func withSockaddr<T>(_ body: (UnsafePointer<sockaddr>, socklen_t) -> T) -> T {
    withUnsafePointer(to: storage) { pointer in
      pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, length) }
    }
  }

  /// The file system path a Unix socket is bound to (getsockname); nil for
  /// an abstract or unnamed one, or another family.
  public static func boundPath(of fd: Int32) -> String? {
    var address = sockaddr_un()
    var length = socklen_t(MemoryLayout<sockaddr_un>.size)
    let rc = withUnsafeMutablePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
    }
    guard rc == 0, address.sun_family == sa_family_t(AF_UNIX) else { return nil }
    let count = Int(length) - MemoryLayout<sockaddr_un>.offset(of: \.sun_path)!
    let bytes = withUnsafeBytes(of: &address.sun_path) { Array($0.prefix(max(0, count))) }
    guard let first = bytes.first, first != 0 else { return nil }
    return String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self)
  }
}
