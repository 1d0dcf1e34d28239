import Glibc
import SwitchTestSupport
import Testing

@testable import SwitchDaemon

/// A call sent after `reload` on the same connection is judged by the
/// configuration the reload loaded, as the answers' order says: the loop
/// holds it until the reload is answered.
@Suite struct ReloadOrderTests {
  static let daemonConf = "[Daemon]\nAdminGroup=\nLogLevel=warning\n"

  static func line(_ id: Int, _ method: String, _ params: String) -> String {
    #"{"jsonrpc":"2.0","id":\#(id),"method":"\#(method)","params":\#(params)}"# + "\n"
  }

  /// A switch added to the files, then `reload`, `set` and `get` of it in
  /// one write: without the wait the `set` reached the writer before the
  /// new configuration did, and failed with UnknownSwitch.
  @Test func aWritePipelinedAfterAReloadSeesWhatTheReloadLoaded() throws {
    let harness = try LoopHarness(daemonConf: Self.daemonConf)
    defer { harness.stop() }
    try writeWholeFile(
      harness.directory + "/config/switches.d/20-added.conf", "[added]\nLabel=Added\nDefault=off\n")
    let client = try TestClient(harness)
    defer { close(client.fd) }
    let input =
      Self.line(1, "reload", "{}") + Self.line(2, "set", #"{"key":"added","checked":true}"#)
      + Self.line(3, "get", #"{"key":"added"}"#)
    client.drive(input: Array(input.utf8)) { $0.lines.count == 3 }
    try #require(client.lines.count == 3)
    #expect(client.lines[0].contains(#""id":1,"result""#), "reload: \(client.lines[0])")
    #expect(client.lines[1].contains(#""changed":true"#), "set: \(client.lines[1])")
    #expect(client.lines[2].contains(#""checked":true"#), "get: \(client.lines[2])")
  }

  /// A write sent before `reload` is judged by the configuration before
  /// it: here the reload brings a policy that holds the switch, and the
  /// write before it still changes it. (The writes of the turn are handed
  /// to the writer before the reload is read: the reader could otherwise
  /// hand the writer the new configuration first. It seldom wins that
  /// race, so this test passes without that line too; it holds the order.)
  @Test func aWriteSentBeforeAReloadIsJudgedByTheConfigurationBeforeIt() throws {
    let harness = try LoopHarness(daemonConf: Self.daemonConf)
    defer { harness.stop() }
    mkdir(harness.directory + "/config/policy.d", 0o755)
    try writeWholeFile(
      harness.directory + "/config/policy.d/50-held.conf", "[wifi]\nReadOnly=yes\nReason=Held.\n")
    let client = try TestClient(harness)
    defer { close(client.fd) }
    let input =
      Self.line(1, "set", #"{"key":"wifi","checked":false}"#) + Self.line(2, "reload", "{}")
      + Self.line(3, "get", #"{"key":"wifi"}"#)
    client.drive(input: Array(input.utf8)) { $0.lines.count == 3 }
    try #require(client.lines.count == 3)
    #expect(client.lines[0].contains(#""changed":true"#), "set: \(client.lines[0])")
    #expect(client.lines[1].contains(#""id":2,"result""#), "reload: \(client.lines[1])")
    #expect(client.lines[2].contains(#""readOnly":true"#), "get: \(client.lines[2])")
    #expect(client.lines[2].contains(#""checked":false"#), "get: \(client.lines[2])")
  }

  /// The wait ends with the reload's answer, refused or not: a reload the
  /// files refuse (InvalidConfig) lets the next call run, on the old ones.
  @Test func aRefusedReloadReleasesTheCallsAfterIt() throws {
    let harness = try LoopHarness(daemonConf: Self.daemonConf)
    defer { harness.stop() }
    try writeWholeFile(harness.directory + "/config/switches.d/20-bad.conf", "[bad\n")
    let client = try TestClient(harness)
    defer { close(client.fd) }
    let input =
      Self.line(1, "reload", "{}") + Self.line(2, "set", #"{"key":"wifi","checked":false}"#)
    client.drive(input: Array(input.utf8)) { $0.lines.count == 2 }
    try #require(client.lines.count == 2)
    #expect(client.lines[0].contains(#""id":1,"error""#), "reload: \(client.lines[0])")
    #expect(client.lines[1].contains(#""changed":true"#), "set: \(client.lines[1])")
    let connection = try #require(harness.server.connections.values.first)
    #expect(connection.barriersInFlight == 0)
  }
}
