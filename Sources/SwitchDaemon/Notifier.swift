import Glibc

/// The sd_notify protocol, written directly (no libsystemd): datagrams to
/// `$NOTIFY_SOCKET`, a path or an `@abstract` name. Silent when unset.
struct Notifier {
  private let address: String?
  /// Half of `WATCHDOG_USEC`, in seconds, when systemd asks for pings.
  let watchdogInterval: Double?

  init(environment: [String: String]) {
    address = environment["NOTIFY_SOCKET"].flatMap { $0.isEmpty ? nil : $0 }
    if let usec = environment["WATCHDOG_USEC"].flatMap(Double.init), usec > 0,
      environment["WATCHDOG_PID"].map({ Int32($0) == getpid() }) ?? true
    {
      watchdogInterval = usec / 2_000_000
    } else {
      watchdogInterval = nil
    }
  }

  func send(_ message: String) {
    guard let address else { return }
    let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue | SOCK_CLOEXEC.rawValue), 0)
    guard fd >= 0 else { return }
    defer { close(fd) }
    var addr = sockaddr_un()
    addr.sun_family = sa_family_t(AF_UNIX)
    var path = Array(address.utf8)
    if path.first == UInt8(ascii: "@") { path[0] = 0 }
    guard path.count < MemoryLayout.size(ofValue: addr.sun_path) else { return }
    withUnsafeMutableBytes(of: &addr.sun_path) { raw in
      for (i, b) in path.enumerated() { raw[i] = b }
    }
    let length = socklen_t(MemoryLayout<sa_family_t>.size + path.count + (path[0] == 0 ? 0 : 1))
    let bytes = Array(message.utf8)
    _ = withUnsafePointer(to: &addr) { pointer in
      pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { sa in
        bytes.withUnsafeBytes { buffer in
          retryingEINTR {
            sendto(fd, buffer.baseAddress, buffer.count, Int32(MSG_NOSIGNAL), sa, length)
          }
        }
      }
    }
  }
}
