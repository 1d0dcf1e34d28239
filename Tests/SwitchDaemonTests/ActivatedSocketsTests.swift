import Glibc
import SwitchSystem
import SwitchTestSupport
import Testing

@testable import SwitchDaemon

/// Under socket activation the units decide the sockets' modes and paths:
/// where a unit's socket is looser than switchd.conf, or varlink is not
/// where switchd.conf says, switchd says so at start (it cannot change a
/// socket systemd made) and what to do.
@Suite struct ActivatedSocketsTests {
  typealias Seen = ActivatedSockets.Seen
  let jsonRPC = Seen(path: "/run/switchd/switchd.sock", mode: 0o666)
  let varlink = Seen(path: "/run/switchd/io.switchd.Switches", mode: 0o666)

  @Test func socketsAsConfiguredOrTighterSayNothing() {
    #expect(
      ActivatedSockets.mismatches(
        jsonRPC: jsonRPC, varlink: varlink, socketMode: 0o666, varlinkWanted: varlink.path
      ).isEmpty)
    // Tightened in the unit, as the docs say (switchd.conf still 0666).
    let tight = Seen(path: jsonRPC.path, mode: 0o660)
    #expect(
      ActivatedSockets.mismatches(
        jsonRPC: tight, varlink: nil, socketMode: 0o666, varlinkWanted: nil
      ).isEmpty)
    // Not activated at all: nothing to compare.
    #expect(
      ActivatedSockets.mismatches(
        jsonRPC: nil, varlink: nil, socketMode: 0o600, varlinkWanted: nil
      ).isEmpty)
  }

  @Test func aUnitSocketLooserThanSocketModeIsNamedForEachSocket() {
    #expect(
      ActivatedSockets.mismatches(
        jsonRPC: jsonRPC, varlink: varlink, socketMode: 0o600, varlinkWanted: varlink.path)
        == [
          .init(
            level: .warning,
            text: "switchd.socket makes /run/switchd/switchd.sock 0666, looser than "
              + "SocketMode=0600 in switchd.conf, which is not used under socket activation; "
              + "set SocketMode= for switchd.socket (systemctl edit switchd.socket)"),
          .init(
            level: .warning,
            text: "switchd-varlink.socket makes /run/switchd/io.switchd.Switches 0666, looser "
              + "than SocketMode=0600 in switchd.conf, which is not used under socket "
              + "activation; set SocketMode= for switchd-varlink.socket "
              + "(systemctl edit switchd-varlink.socket)"),
        ])
  }

  @Test func varlinkConfiguredOffOrElsewhereOrNotPassed() {
    #expect(
      ActivatedSockets.mismatches(
        jsonRPC: jsonRPC, varlink: varlink, socketMode: 0o666, varlinkWanted: nil)
        == [
          .init(
            level: .warning,
            text: "VarlinkSocket= is empty, but systemd passed a varlink socket "
              + "(/run/switchd/io.switchd.Switches), which is served; for none, "
              + "systemctl disable --now switchd-varlink.socket")
        ])
    #expect(
      ActivatedSockets.mismatches(
        jsonRPC: jsonRPC, varlink: varlink, socketMode: 0o666, varlinkWanted: "/run/v.sock")
        == [
          .init(
            level: .warning,
            text: "varlink is served on /run/switchd/io.switchd.Switches, the socket systemd "
              + "passed, not on VarlinkSocket=/run/v.sock; set ListenStream= for "
              + "switchd-varlink.socket")
        ])
    // What disabling switchd-varlink.socket leaves, as the docs offer: a notice.
    #expect(
      ActivatedSockets.mismatches(
        jsonRPC: jsonRPC, varlink: nil, socketMode: 0o666, varlinkWanted: varlink.path)
        == [
          .init(
            level: .notice,
            text: "no varlink socket: systemd passed none, so "
              + "VarlinkSocket=/run/switchd/io.switchd.Switches is not served "
              + "(switchd-varlink.socket is disabled or stopped)")
        ])
  }

  /// The path is the kernel's (not the one switchd was told), the mode the
  /// socket file's; a file that is gone has none, and is not compared; a
  /// socket with no path (abstract, or unbound) is not looked at.
  @Test func thePathIsTheKernelsAndTheModeTheSocketFiles() throws {
    try withTemporaryDirectory { directory in
      let path = directory + "/s.sock"
      // As systemd makes it: bound at its path, given the unit's mode.
      let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue | SOCK_CLOEXEC.rawValue), 0)
      let address = try UnixSocketAddress(path)
      #expect(address.withSockaddr { bind(fd, $0, $1) } == 0)
      #expect(chmod(path, 0o640) == 0)
      let listener = Listener(fd: fd, path: directory + "/told.sock", activated: true)
      defer { listener.close() }
      #expect(ActivatedSockets.seen(listener) == Seen(path: path, mode: 0o640))
      unlink(path)
      #expect(ActivatedSockets.seen(listener) == Seen(path: path, mode: nil))
      let unbound = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue | SOCK_CLOEXEC.rawValue), 0)
      defer { close(unbound) }
      #expect(ActivatedSockets.seen(Listener(fd: unbound, path: path, activated: true)) == nil)
      #expect(ActivatedSockets.seen(nil) == nil)
    }
  }
}
