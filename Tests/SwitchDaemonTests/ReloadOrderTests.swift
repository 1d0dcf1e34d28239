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

  /// Sends `lines` (method and params each, ids from 1) in one write on a
  /// new connection and turns the loop until each has its answer.
  static func answers(
    to lines: [(method: String, params: String)], on harness: LoopHarness
  ) throws -> [String] {
    let client = try TestClient(harness)
    defer { close(client.fd) }
    let input = lines.enumerated().map { line($0.offset + 1, $0.element.method, $0.element.params) }
    client.drive(input: Array(input.joined().utf8)) { $0.lines.count == lines.count }
    try #require(client.lines.count == lines.count)
    return client.lines
  }

  /// A switch added to the files, then `reload`, `set` and `get` of it in
  /// one write: without the wait the `set` reached the writer before the
  /// new configuration did, and failed with UnknownSwitch.
  @Test func aWritePipelinedAfterAReloadSeesWhatTheReloadLoaded() throws {
    let harness = try LoopHarness(daemonConf: Self.daemonConf)
    defer { harness.stop() }
    try writeWholeFile(
      harness.directory + "/config/switches.d/20-added.conf", "[added]\nLabel=Added\nDefault=off\n")
    let answers = try Self.answers(
      to: [
        ("reload", "{}"), ("set", #"{"key":"added","checked":true}"#), ("get", #"{"key":"added"}"#),
      ],
      on: harness)
    #expect(answers[0].contains(#""id":1,"result""#), "reload: \(answers[0])")
    #expect(answers[1].contains(#""changed":true"#), "set: \(answers[1])")
    #expect(answers[2].contains(#""checked":true"#), "get: \(answers[2])")
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
    let answers = try Self.answers(
      to: [
        ("set", #"{"key":"wifi","checked":false}"#), ("reload", "{}"), ("get", #"{"key":"wifi"}"#),
      ],
      on: harness)
    #expect(answers[0].contains(#""changed":true"#), "set: \(answers[0])")
    #expect(answers[1].contains(#""id":2,"result""#), "reload: \(answers[1])")
    #expect(answers[2].contains(#""readOnly":true"#), "get: \(answers[2])")
    #expect(answers[2].contains(#""checked":false"#), "get: \(answers[2])")
  }

  /// The wait ends with the reload's answer, refused or not: a reload the
  /// files refuse (InvalidConfig) lets the next call run, on the old ones.
  @Test func aRefusedReloadReleasesTheCallsAfterIt() throws {
    let harness = try LoopHarness(daemonConf: Self.daemonConf)
    defer { harness.stop() }
    try writeWholeFile(harness.directory + "/config/switches.d/20-bad.conf", "[bad\n")
    let answers = try Self.answers(
      to: [("reload", "{}"), ("set", #"{"key":"wifi","checked":false}"#)], on: harness)
    #expect(answers[0].contains(#""id":1,"error""#), "reload: \(answers[0])")
    #expect(answers[1].contains(#""changed":true"#), "set: \(answers[1])")
    let connection = try #require(harness.server.connections.values.first)
    #expect(connection.barriersInFlight == 0)
  }
}
