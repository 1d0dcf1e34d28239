import Glibc
import SwitchCore
import SwitchSystem

/// What switchd.conf says about the sockets that the units, not switchd,
/// decide under socket activation: `SocketMode=` and `VarlinkSocket=`.
/// switchd cannot change a socket systemd made (its file is systemd's, and
/// switchd runs as its own user), so where a unit's socket is looser than
/// switchd.conf asks it says so at start, with what to do, rather than leave
/// an administrator who tightened `SocketMode=` believing it applied.
enum ActivatedSockets {
  /// What a socket systemd passed looks like: its path and mode bits (nil
  /// when its file cannot be read).
  struct Seen: Equatable {
    var path: String
    var mode: UInt32?
  }

  /// One line for the log at start.
  struct Finding: Equatable {
    var level: LogLevel
    var text: String
  }

  /// The findings for sockets systemd passed (`jsonRPC`, `varlink`: nil
  /// when it passed none, or one with no path), against switchd.conf's
  /// `socketMode` and the varlink path it names (nil: `VarlinkSocket=`
  /// empty, none wanted).
  static func mismatches(
    jsonRPC: Seen?, varlink: Seen?, socketMode: UInt32, varlinkWanted: String?
  ) -> [Finding] {
    var found: [Finding] = []
    for (socket, unit) in [(jsonRPC, "switchd.socket"), (varlink, "switchd-varlink.socket")] {
      // Tighter than switchd.conf is the administrator's choice, made where
      // the docs say: only a looser socket is news.
      guard let socket, let mode = socket.mode, mode & ~socketMode & 0o777 != 0 else { continue }
      found.append(
        Finding(
          level: .warning,
          text: "\(unit) makes \(socket.path) \(octal(mode)), looser than SocketMode="
            + "\(octal(socketMode)) in switchd.conf, which is not used under socket "
            + "activation; set SocketMode= for \(unit) (systemctl edit \(unit))"))
    }
    switch (varlink, varlinkWanted) {
    case (let passed?, nil):
      found.append(
        Finding(
          level: .warning,
          text: "VarlinkSocket= is empty, but systemd passed a varlink socket "
            + "(\(passed.path)), which is served; for none, "
            + "systemctl disable --now switchd-varlink.socket"))
    case (let passed?, let wanted?) where passed.path != wanted:
      found.append(
        Finding(
          level: .warning,
          text: "varlink is served on \(passed.path), the socket systemd passed, not on "
            + "VarlinkSocket=\(wanted); set ListenStream= for switchd-varlink.socket"))
    case (nil, let wanted?) where jsonRPC != nil:
      // What `systemctl disable --now switchd-varlink.socket` leaves: a
      // choice the docs offer, so a notice, not a warning.
      found.append(
        Finding(
          level: .notice,
          text: "no varlink socket: systemd passed none, so VarlinkSocket=\(wanted) is "
            + "not served (switchd-varlink.socket is disabled or stopped)"))
    default:
      break
    }
    return found
  }

  /// A passed socket's path, from the kernel, and mode, from its file; nil
  /// for none, or for one with no path (an abstract socket, or not a Unix one).
  static func seen(_ listener: Listener?) -> Seen? {
    guard let listener, let path = UnixSocketAddress.boundPath(of: listener.fd) else { return nil }
    var status = stat()
    let mode =
      lstat(path, &status) == 0 && status.st_mode & S_IFMT == S_IFSOCK
      ? UInt32(status.st_mode & 0o777) : nil
    return Seen(path: path, mode: mode)
  }
}
