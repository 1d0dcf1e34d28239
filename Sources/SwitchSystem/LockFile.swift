import Glibc

/// An exclusive advisory lock (`flock`) on a file, held for as long as the
/// value lives (the kernel drops it when the process ends, even by SIGKILL).
/// The holder writes its pid into the file, so a second process that finds
/// the lock taken can say who has it.
public struct LockFile: ~Copyable {
  public enum Failure: Error, Equatable, CustomStringConvertible {
    /// Another process holds the lock; `pid` is what it wrote (nil when it
    /// has not written yet).
    case held(path: String, pid: Int32?)
    case system(SystemError)

    public var description: String {
      switch self {
      case .held(let path, let pid?): return "\(path) is locked by process \(pid)"
      case .held(let path, nil): return "\(path) is locked by another process"
      case .system(let error): return "\(error)"
      }
    }
  }

  public let path: String
  private let descriptor: Descriptor

  /// Takes the lock without waiting, creating the file if need be.
  public init(path: String) throws(Failure) {
    guard let descriptor = Descriptor(opening: path, O_RDWR | O_CREAT | O_NOFOLLOW, mode: 0o644)
    else { throw .system(.last("open \(path)")) }
    if retryingEINTR({ flock(descriptor.raw, LOCK_EX | LOCK_NB) }) != 0 {
      guard errno == EWOULDBLOCK else { throw .system(.last("flock \(path)")) }
      throw .held(path: path, pid: Self.recordedPID(descriptor))
    }
    let record = Array("\(getpid())\n".utf8)
    guard ftruncate(descriptor.raw, 0) == 0 else { throw .system(.last("ftruncate \(path)")) }
    do throws(SystemError) {
      try descriptor.writeAll(record)
    } catch {
      throw .system(SystemError(errno: error.errno, call: "write \(path)"))
    }
    self.path = path
    self.descriptor = descriptor
  }

  /// The pid the holder wrote, if the file holds one.
  private static func recordedPID(_ descriptor: borrowing Descriptor) -> Int32? {
    guard let bytes = try? descriptor.readAll(limit: 64) else { return nil }
    let text = String(decoding: bytes, as: UTF8.self)
    return Int32(text.split(separator: "\n").first ?? "").flatMap { $0 > 0 ? $0 : nil }
  }
}
