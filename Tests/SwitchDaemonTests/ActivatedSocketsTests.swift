import Glibc
import SwitchSystem
import SwitchTestSupport
import Testing

@testable import SwitchDaemon

/// Under socket activation the units decide the sockets' modes and paths:
/// where switchd.conf says otherwise, switchd says so at start (it cannot
/// change a socket systemd made) and what to do.
@Suite struct ActivatedSocketsTests {
  typealias Seen = ActivatedSockets.Seen
  let jsonRPC = Seen(path: "/run/switchd/switchd.sock", mode: 0o666)
  let varlink = Seen(path: "/run/switchd/io.switchd.Switches", mode: 0o666)

  @Test func socketsAsConfiguredSayNothing() {
    #expect(
      ActivatedSockets.mismatches(
        jsonRPC: jsonRPC, varlink: varlink, socketMode: 0o666, varlinkWanted: varlink.path
      ).isEmpty)
    // Not activated at all: nothing to compare.
    #expect(
      ActivatedSockets.mismatches(
        jsonRPC: nil, varlink: nil, socketMode: 0o600, varlinkWanted: nil
      ).isEmpty)
  }

  @Test func aTighterSocketModeThanTheUnitsIsNamedForEachSocket() {
    #expect(
      ActivatedSockets.mismatches(
        jsonRPC: jsonRPC, varlink: varlink, socketMode: 0o600, varlinkWanted: varlink.path)
        == [
          "SocketMode=0600 does not apply to /run/switchd/switchd.sock: systemd made it "
            + "(mode 0666); set SocketMode= for switchd.socket (systemctl edit switchd.socket)",
          "SocketMode=0600 does not apply to /run/switchd/io.switchd.Switches: systemd made it "
            + "(mode 0666); set SocketMode= for switchd-varlink.socket "
            + "(systemctl edit switchd-varlink.socket)",
        ])
  }

  @Test func varlinkConfiguredOffOrElsewhereOrMissing() {
    #expect(
      ActivatedSockets.mismatches(
        jsonRPC: jsonRPC, varlink: varlink, socketMode: 0o666, varlinkWanted: nil)
        == [
          "VarlinkSocket= is empty, but systemd passed a varlink socket "
            + "(/run/switchd/io.switchd.Switches), which is served; for none, "
            + "systemctl disable --now switchd-varlink.socket"
        ])
    #expect(
      ActivatedSockets.mismatches(
        jsonRPC: jsonRPC, varlink: varlink, socketMode: 0o666, varlinkWanted: "/run/v.sock")
        == [
          "varlink is served on /run/switchd/io.switchd.Switches, the socket systemd passed, "
            + "not on VarlinkSocket=/run/v.sock; set ListenStream= for switchd-varlink.socket"
        ])
    #expect(
      ActivatedSockets.mismatches(
        jsonRPC: jsonRPC, varlink: nil, socketMode: 0o666, varlinkWanted: varlink.path)
        == [
          "no varlink socket: systemd passed none, so "
            + "VarlinkSocket=/run/switchd/io.switchd.Switches is not bound "
            + "(systemctl enable switchd-varlink.socket, then stop switchd.service and start "
            + "switchd-varlink.socket; VarlinkSocket= empty for none)"
        ])
  }

  /// The mode is read from the socket's file; a path that is not a socket
  /// (or is gone) has none, and is not compared.
  @Test func theModeIsTheSocketFiles() throws {
    try withTemporaryDirectory { directory in
      let path = directory + "/s.sock"
      let listener = try Listener.bind(path: path, mode: 0o640)
      defer { listener.close() }
      #expect(ActivatedSockets.seen(listener) == Seen(path: path, mode: 0o640))
      unlink(path)
      #expect(ActivatedSockets.seen(listener) == Seen(path: path, mode: nil))
      #expect(ActivatedSockets.seen(nil) == nil)
    }
  }
}
