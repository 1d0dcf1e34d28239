import Glibc

/// What switchd.conf says about the sockets that the units, not switchd,
/// decide under socket activation: `SocketMode=` and `VarlinkSocket=`.
/// switchd cannot change a socket systemd made (its file is systemd's, and
/// switchd runs as its own user), so where the two disagree it says so at
/// start, with what to do, rather than leave an administrator who tightened
/// `SocketMode=` believing it applied.
enum ActivatedSockets {
  /// What a socket systemd passed looks like: its path and mode bits, or
  /// nil when it has no path (an abstract socket) or cannot be read.
  struct Seen: Equatable {
    var path: String
    var mode: UInt32?
  }

  /// The warnings for sockets systemd passed (`jsonRPC`, `varlink`: nil
  /// when it passed none), against switchd.conf's `socketMode` and the
  /// varlink path it names (nil: `VarlinkSocket=` empty, none wanted).
  static func mismatches(
    jsonRPC: Seen?, varlink: Seen?, socketMode: UInt32, varlinkWanted: String?
  ) -> [String] {
    var found: [String] = []
    for (socket, unit) in [(jsonRPC, "switchd.socket"), (varlink, "switchd-varlink.socket")] {
      guard let socket, let mode = socket.mode, mode != socketMode else { continue }
      found.append(
        "SocketMode=\(octal(socketMode)) does not apply to \(socket.path): systemd made it "
          + "(mode \(octal(mode))); set SocketMode= for \(unit) (systemctl edit \(unit))")
    }
    switch (varlink, varlinkWanted) {
    case (let passed?, nil):
      found.append(
        "VarlinkSocket= is empty, but systemd passed a varlink socket (\(passed.path)), "
          + "which is served; for none, systemctl disable --now switchd-varlink.socket")
    case (let passed?, let wanted?) where passed.path != wanted:
      found.append(
        "varlink is served on \(passed.path), the socket systemd passed, not on "
          + "VarlinkSocket=\(wanted); set ListenStream= for switchd-varlink.socket")
    case (nil, let wanted?) where jsonRPC != nil:
      found.append(
        "no varlink socket: systemd passed none, so VarlinkSocket=\(wanted) is not bound "
          + "(systemctl enable switchd-varlink.socket, then stop switchd.service and start "
          + "switchd-varlink.socket; VarlinkSocket= empty for none)")
    default:
      break
    }
    return found
  }

  /// A passed socket's path and mode, read from its file.
  static func seen(_ listener: Listener?) -> Seen? {
    guard let listener else { return nil }
    var status = stat()
    let mode =
      lstat(listener.path, &status) == 0 && status.st_mode & S_IFMT == S_IFSOCK
      ? UInt32(status.st_mode & 0o777) : nil
    return Seen(path: listener.path, mode: mode)
  }

  private static func octal(_ mode: UInt32) -> String {
    let digits = String(mode, radix: 8)
    return String(repeating: "0", count: max(0, 4 - digits.count)) + digits
  }
}
