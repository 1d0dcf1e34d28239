import Glibc
import SwitchProtocol
import SwitchTestSupport

/// A small blocking varlink client for the tests: NUL-framed calls and
/// replies, written here from PROTOCOL.md "varlink" rather than shared with
/// the daemon's code, so the tests check the daemon against the spec.
final class VarlinkClient {
  private let connection: RPCClient
  private var buffer: [UInt8] = []

  init(socketPath: String) throws { connection = try RPCClient(socketPath: socketPath) }

  /// On a connection made elsewhere (as another user: `client(asUser:socket:)`).
  init(_ connection: RPCClient) { self.connection = connection }

  /// Closes the connection (both directions): the daemon sees a hang-up.
  func close() { connection.close() }

  func send(raw bytes: [UInt8]) throws {
    guard sendAll(connection.fd, bytes) else { throw FixtureError("send failed: errno \(errno)") }
  }

  /// Sends a call; `parameters` is a JSON object's text.
  func send(
    _ method: String, _ parameters: String = "{}", more: Bool = false, oneway: Bool = false
  ) throws {
    var text = #"{"method":"\#(method)","parameters":\#(parameters)"#
    if more { text += #","more":true"# }
    if oneway { text += #","oneway":true"# }
    try send(raw: Array((text + "}").utf8) + [0])
  }

  /// The next message (without its NUL); nil at end of stream or timeout.
  func readMessage() -> [UInt8]? {
    while true {
      if let end = buffer.firstIndex(of: 0) {
        let message = Array(buffer[..<end])
        buffer.removeSubrange(...end)
        return message
      }
      var chunk = [UInt8](repeating: 0, count: 65_536)
      let n = chunk.withUnsafeMutableBytes { recv(connection.fd, $0.baseAddress, $0.count, 0) }
      if n <= 0 { return nil }
      buffer += chunk[0..<n]
    }
  }

  func readReply() throws -> JSONValue {
    guard let message = readMessage() else { throw FixtureError("no reply from the daemon") }
    if message.contains(UInt8(ascii: "\n")) { throw FixtureError("a raw newline in a reply") }
    return try JSONParser.parse(message, maxDepth: 512)
  }

  /// A call and its (first) reply.
  func call(_ method: String, _ parameters: String = "{}", more: Bool = false) throws -> JSONValue {
    try send(method, parameters, more: more)
    return try readReply()
  }

  /// A call of io.switchd.Switches expecting parameters back.
  func result(_ method: String, _ parameters: String = "{}") throws -> JSONValue {
    let reply = try call("io.switchd.Switches." + method, parameters)
    guard reply["error"] == nil, let result = reply["parameters"] else {
      throw FixtureError("\(method) failed: \(reply.jsonText)")
    }
    return result
  }

  /// A call of io.switchd.Switches expecting an error: its name and parameters.
  func error(_ method: String, _ parameters: String = "{}") throws -> (String, JSONValue) {
    let reply = try call("io.switchd.Switches." + method, parameters)
    guard let name = reply["error"]?.stringValue else {
      throw FixtureError("\(method) did not fail: \(reply.jsonText)")
    }
    return (name, reply["parameters"] ?? .object([]))
  }
}

extension DaemonFixture {
  /// The varlink socket: `io.switchd.Switches` beside the JSON-RPC one (CONFIG.md).
  var varlinkPath: String { directory + "/io.switchd.Switches" }

  func varlink() throws -> VarlinkClient { try VarlinkClient(socketPath: varlinkPath) }
}
