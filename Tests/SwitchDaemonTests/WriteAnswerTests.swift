import Glibc
import SwitchProtocol
import Testing

@testable import SwitchDaemon

/// A write's answer shows the switch as that write left it, whether the loop
/// kept an encoded object of that revision (a read made it) or writes it into
/// the answer (issue 26: it is not kept after a write).
@Suite struct WriteAnswerTests {
  static let daemonConf = "[Daemon]\nAdminGroup=\nLogLevel=warning\n"

  static func request(_ id: Int, _ method: String, _ params: String = "") -> String {
    #"{"jsonrpc":"2.0","id":\#(id),"method":"\#(method)","params":{"key":"wifi"\#(params)}}"#
      + "\n"
  }

  /// The Switch object of an answer line: a write's `result.switch`, a get's `result`.
  static func switchObject(_ line: String) -> JSONValue? {
    guard let result = (try? JSONParser.parse(line, maxDepth: 64))?["result"] else { return nil }
    return result["switch"] ?? result
  }

  /// Pipelined toggles of one switch, several decided in one group: each
  /// answer shows its own revision and value, not the group's last.
  @Test func pipelinedTogglesAnswerEachWithItsOwnRevision() throws {
    let harness = try LoopHarness(daemonConf: Self.daemonConf)
    defer { harness.stop() }
    let peer = try TestClient(harness)
    defer { close(peer.fd) }
    let count = 200
    let input = (1...count).map { Self.request($0, "toggle") }.joined()
    peer.drive(input: Array(input.utf8)) { $0.lines.count >= count }
    #expect(peer.answered(inOrder: 1...count))
    let objects = peer.lines.compactMap(Self.switchObject)
    let revisions = objects.compactMap { $0["revision"]?.int64Value }
    #expect(revisions.elementsEqual(1...Int64(count)))
    // wifi starts on: odd toggles leave it off.
    let checked = objects.compactMap { $0["checked"]?.boolValue }
    #expect(checked.elementsEqual((1...count).map { $0 % 2 == 0 }))
  }

  /// After a read kept the object, a write that changes nothing answers with
  /// it (same revision); a write that changes the switch answers with the new
  /// revision, and the next read shows exactly what that answer showed.
  @Test func anAnswerAndTheReadAfterItShowTheSameSwitch() throws {
    let harness = try LoopHarness(daemonConf: Self.daemonConf)
    defer { harness.stop() }
    let peer = try TestClient(harness)
    defer { close(peer.fd) }
    let steps = [
      Self.request(1, "get"), Self.request(2, "set", #","checked":true"#),
      Self.request(3, "toggle"), Self.request(4, "get"),
    ]
    for (index, step) in steps.enumerated() {
      peer.drive(input: Array(step.utf8)) { $0.lines.count > index }
    }
    let objects = peer.lines.map(Self.switchObject)
    #expect(objects.count == 4)
    guard objects.count == 4, let first = objects[0], let unchanged = objects[1],
      let toggled = objects[2], let after = objects[3]
    else { return }
    #expect(unchanged == first)
    #expect(toggled["revision"]?.int64Value == 1)
    #expect(toggled["checked"]?.boolValue == false)
    #expect(toggled["writable"]?.boolValue == true)
    #expect(after == toggled)
  }
}
