import Glibc
import SwitchProtocol
import SwitchTestSupport
import Testing

/// The same calls on each socket of two fresh daemons give the same
/// revisions, events and errors: varlink is a second wire format of one
/// service, not a second service.
@Suite struct VarlinkParityEndToEndTests {
  /// JSON-RPC method, params; the varlink name is the method in CamelCase.
  static let sequence: [(String, String)] = [
    ("toggle", #"{"key":"wifi"}"#), ("set", #"{"key":"wifi","checked":true}"#),
    ("set", #"{"key":"wifi","checked":true}"#), ("get", #"{"key":"nope"}"#),
    ("set", #"{"key":"wifi","checked":"yes"}"#), ("toggle", #"{"key":"wifi","ifRevision":9}"#),
    ("lock", #"{"key":"bluetooth","checked":true,"reason":"Held."}"#),
    ("disable", #"{"key":"notifications.mail"}"#), ("reset", #"{"key":"email.marketing"}"#),
    ("toggle", #"{"key":"email.marketing"}"#), ("unlock", #"{"key":"bluetooth"}"#),
    ("enable", #"{"key":"notifications.mail"}"#), ("history", #"{"limit":3}"#),
    ("list", #"{"prefix":"notifications."}"#), ("get", #"{"key":"wifi"}"#),
  ]

  /// What must agree: the outcome without times and pids, which differ
  /// between two daemons, and errors by varlink name and parameters.
  static func comparable(_ value: JSONValue) -> JSONValue {
    switch value {
    case .object(let members):
      return .object(
        members.filter { !["changedAt", "time", "pid", "uptimeSeconds"].contains($0.name) }
          .map { JSONMember($0.name, comparable($0.value)) })
    case .array(let items): return .array(items.map(comparable))
    default: return value
    }
  }

  static func varlinkError(_ error: JSONValue) -> JSONValue {
    let code = RPCErrorCode(rawValue: Int(error["code"]?.int64Value ?? 0))
    var members = (error["data"]?.objectMembers ?? []).filter { $0.name != "name" }
    if code == .invalidParams {
      members = [JSONMember("parameter", error["data"]?["param"] ?? .null)]
    }
    return .object([
      JSONMember("error", .string(VarlinkEncoding.errorName(code))),
      JSONMember("parameters", .object(members)),
    ])
  }

  @Test func theSameCallsGiveTheSameRevisionsEventsAndErrors() throws {
    let (rpcDaemon, varlinkDaemon) = (try DaemonFixture(), try DaemonFixture())
    let rpc = try rpcDaemon.client()
    let rpcWatcher = try rpcDaemon.client()
    _ = try rpcWatcher.result("watch")
    let varlink = try varlinkDaemon.varlink()
    let varlinkWatcher = try varlinkDaemon.varlink()
    _ = try varlinkWatcher.call("io.switchd.Switches.Watch", more: true)
    for (method, params) in Self.sequence {
      let response = try rpc.call(method, params)
      var expected: JSONValue
      if let error = response["error"] {
        expected = Self.varlinkError(error)
      } else {
        let result = response["result"] ?? .null
        expected = .object([
          JSONMember(
            "parameters", method == "get" ? .object([JSONMember("switch", result)]) : result)
        ])
      }
      let name = method.prefix(1).uppercased() + method.dropFirst()
      let reply = try varlink.call("io.switchd.Switches." + name, params)
      #expect(Self.comparable(reply) == Self.comparable(expected), "\(method) \(params)")
    }
    let revision = try rpc.result("status")["revision"]?.int64Value ?? 0
    #expect(revision == 7)
    #expect(try varlink.result("Status")["revision"]?.int64Value == revision)
    for _ in 1...revision {
      let event = try rpcWatcher.nextEvent().objectMembers?.filter { $0.name != "watch" } ?? []
      let reply = try varlinkWatcher.readReply()
      #expect(reply["continues"]?.boolValue == true)
      #expect(
        Self.comparable(reply["parameters"]?["event"] ?? .null) == Self.comparable(.object(event)))
    }
  }
}
