import Glibc
import SwitchSystem

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
    guard let address, let destination = try? UnixSocketAddress(address) else { return }
    let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue | SOCK_CLOEXEC.rawValue), 0)
    guard fd >= 0 else { return }
    let socket = Descriptor(fd)
    let bytes = Array(message.utf8)
    _ = destination.withSockaddr { to, length in
      bytes.withUnsafeBytes { buffer in
        retryingEINTR {
          sendto(socket.raw, buffer.baseAddress, buffer.count, Int32(MSG_NOSIGNAL), to, length)
        }
      }
    }
  }
}
