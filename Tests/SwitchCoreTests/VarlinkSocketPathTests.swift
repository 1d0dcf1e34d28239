import SwitchCore
import Testing

/// CONFIG.md `VarlinkSocket=`: absent, a socket named io.switchd.Switches
/// in the JSON-RPC socket's folder; empty, none; else the path given.
@Suite struct VarlinkSocketPathTests {
  @Test func absentIsBesideTheJSONRPCSocketEmptyIsNone() {
    var settings = DaemonSettings()
    #expect(
      settings.varlinkSocketPath(besides: "/run/switchd/switchd.sock")
        == "/run/switchd/io.switchd.Switches")
    settings.varlinkSocket = ""
    #expect(settings.varlinkSocketPath(besides: "/run/switchd/switchd.sock") == nil)
    settings.varlinkSocket = "/run/other/v.sock"
    #expect(settings.varlinkSocketPath(besides: "/run/switchd/switchd.sock") == "/run/other/v.sock")
  }
}
