import Glibc
import SwitchTestSupport
import Testing

/// Socket activation of both sockets, as switchd.socket and
/// switchd-varlink.socket pass them: switchd tells them apart by
/// LISTEN_FDNAMES and serves each in its own format, binding no path.
@Suite struct VarlinkActivationTests {
  @Test(
    .enabled(
      if: access(SystemdEndToEndTests.activator, X_OK) == 0,
      "systemd-socket-activate is not installed (apt-get install systemd)"))
  func bothPassedSocketsAreServedByTheirNames() throws {
    let daemon = try DaemonFixture(start: false)
    let jsonRPC = daemon.directory + "/activated.sock"
    let varlink = daemon.directory + "/activated.varlink"
    // The varlink socket first: the names, not the order, say which is which.
    let (child, notify) = try SystemdEndToEndTests.activate(
      daemon, sockets: [(varlink, "varlink"), (jsonRPC, "jsonrpc")], socket: jsonRPC)
    var client: RPCClient?
    #expect(
      pollUntil(seconds: 20) {
        client = try? RPCClient(socketPath: jsonRPC, receiveTimeout: 10)
        return client != nil || child.hasExited
      })
    let status = try #require(client).result("status")
    #expect(status["socket"]?.stringValue == jsonRPC)
    let info = try VarlinkClient(socketPath: varlink).call("org.varlink.service.GetInfo")
    #expect(info["parameters"]?["product"]?.stringValue == "switchd", "\(daemon.log)")
    #expect(!pathExists(daemon.varlinkPath), "switchd bound a varlink path while activated")
    child.signal(SIGTERM)
    _ = try notify.waitFor("STOPPING=1", child: child, log: { daemon.log })
    #expect(child.wait(seconds: 20) == 0, "\(daemon.log)")
  }
}
