import Glibc
import SwitchCore
import SwitchProtocol
import Testing

@testable import SwitchDaemon

/// A switch's first `get` writes its object without keeping it; the
/// second keeps it, and the third answers from it. The three answers are
/// the same bytes.
@Suite struct FirstReadTests {
  static let schema = """
    [wifi]
    Label=Wi-Fi
    Description=Connect to "wireless" networks.
    Default=on
    CheckedIcon=wifi
    UncheckedIcon=wifi_off
    Group=Network

    [bluetooth]
    Label=Bluetooth
    Default=off

    """

  static func get(_ key: String, id: Int) -> String {
    #"{"jsonrpc":"2.0","id":\#(id),"method":"get","params":{"key":"\#(key)"}}"# + "\n"
  }

  static func toggle(_ key: String, id: Int) -> String {
    #"{"jsonrpc":"2.0","id":\#(id),"method":"toggle","params":{"key":"\#(key)"}}"# + "\n"
  }

  /// A loop over `schema`, and a client of it.
  static func start() throws -> (LoopHarness, TestClient) {
    let harness = try LoopHarness(
      daemonConf: "[Daemon]\nAdminGroup=\nLogLevel=warning\n", switches: { _ in Self.schema })
    do {
      return (harness, try TestClient(harness))
    } catch {
      harness.stop()
      throw error
    }
  }

  @Test(arguments: ["wifi", "bluetooth"])
  func theFirstReadIsWrittenAndTheSecondKept(key: String) throws {
    let (harness, client) = try Self.start()
    defer {
      close(client.fd)
      harness.stop()
    }
    let server = harness.server
    let position = try #require(server.encodings.positions[key])
    var kept: [Bool] = []
    for id in 1...3 {
      client.drive(input: Array(Self.get(key, id: id).utf8)) { $0.lines.count >= id }
      kept.append(server.encodings.bytes(at: position) != nil)
    }
    #expect(kept == [false, true, true], "kept after each read")
    let answers = client.lines.map { $0.replacing(#/"id":\d+/#, with: "") }
    #expect(answers.count == 3)
    #expect(Set(answers).count == 1, "\(answers)")
    #expect(answers.first?.contains(#""key":"\#(key)""#) == true)
  }

  /// A write's answer is a read too: the first is written from the
  /// switch's definition and keeps no template, and shows the switch as a
  /// `get` right after it does; a second answer in a row keeps it.
  @Test(arguments: ["wifi", "bluetooth"])
  func theFirstWriteAnswerKeepsNoTemplate(key: String) throws {
    let (harness, client) = try Self.start()
    defer {
      close(client.fd)
      harness.stop()
    }
    let encodings = { harness.server.encodings }
    let position = try #require(encodings().positions[key])
    let other = key == "wifi" ? "bluetooth" : "wifi"
    let otherPosition = try #require(encodings().positions[other])
    client.drive(input: Array(Self.toggle(key, id: 1).utf8)) { $0.lines.count >= 1 }
    #expect(!encodings().hasTemplate(at: position), "kept at the first answer")
    client.drive(input: Array(Self.get(key, id: 2).utf8)) { $0.lines.count >= 2 }
    // Two answers in a row, of the other switch.
    client.drive(input: Array(Self.toggle(other, id: 3).utf8)) { $0.lines.count >= 3 }
    #expect(!encodings().hasTemplate(at: otherPosition))
    client.drive(input: Array(Self.toggle(other, id: 4).utf8)) { $0.lines.count >= 4 }
    #expect(encodings().hasTemplate(at: otherPosition), "not kept at the second answer")
    // The Switch objects: a write's (`"switch":{…}}}`) and a get's (`"result":{…}}`).
    func object(_ line: String, after member: String, dropping tail: Int) -> Substring? {
      line.firstRange(of: member).map { line[$0.upperBound...].dropLast(tail) }
    }
    let lines = client.lines
    #expect(lines.count == 4)
    let written = object(lines[0], after: #""switch":"#, dropping: 2)
    #expect(written != nil && written == object(lines[1], after: #""result":"#, dropping: 1))
  }

  /// A switch read before, then changed, is kept again at its next read:
  /// a change forgets the object, not that the switch is read.
  @Test func aSwitchReadBeforeIsKeptAgainAfterAChange() throws {
    let (harness, client) = try Self.start()
    defer {
      close(client.fd)
      harness.stop()
    }
    let encodings = { harness.server.encodings }
    let position = try #require(encodings().positions["bluetooth"])
    client.drive(input: Array(Self.get("bluetooth", id: 1).utf8)) { $0.lines.count >= 1 }
    #expect(encodings().bytes(at: position) == nil, "not kept at its first read")
    client.drive(input: Array(Self.toggle("bluetooth", id: 2).utf8)) { $0.lines.count >= 2 }
    client.drive(input: Array(Self.get("bluetooth", id: 3).utf8)) { $0.lines.count >= 3 }
    #expect(encodings().bytes(at: position) != nil, "kept at its second read")
    #expect(client.lines.last?.contains(#""checked":true"#) == true)
  }
}
