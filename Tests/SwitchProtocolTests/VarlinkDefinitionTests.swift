import Glibc
import SwitchCore
import Testing

@testable import SwitchProtocol

/// The shipped interface definition (`io.switchd.Switches.varlink`) says
/// what the daemon serves (PROTOCOL.md "varlink": the JSON-RPC methods in
/// CamelCase, with the same parameters). A client that goes by the
/// definition (python's `varlink`, `varlinkctl introspect`) can reach no
/// more than it declares: once it lacked `Confirm`, `Revert` and the time
/// parameters, which the daemon took.
@Suite struct VarlinkDefinitionTests {
  /// `method Name(a: T, b: ?U) -> (…)` of the definition: name → parameters.
  static let declared: [String: [String]] = {
    var methods: [String: [String]] = [:]
    for line in VarlinkInterface.description.split(separator: "\n")
    where line.hasPrefix("method ") {
      let signature = line.dropFirst("method ".count)
      guard let open = signature.firstIndex(of: "("),
        let close = signature.firstIndex(of: ")")
      else { continue }
      let parameters = signature[signature.index(after: open)..<close]
        .split(separator: ",")
        .compactMap { $0.split(separator: ":").first?.trimmingPrefix(" ") }
      methods[String(signature[..<open])] = parameters.map(String.init)
    }
    return methods
  }()

  /// PROTOCOL.md's methods table, and "Acting as a user": each method's
  /// parameters. Those that need a right also take
  /// `allowInteractiveAuthentication` ("Authorization parameter").
  static let contract: [Method: [String]] = [
    .get: ["key", "user"],
    .list: ["prefix", "user"],
    .set: [
      "key", "checked", "ifRevision", "user", "confirmWithin", "revertOnDisconnect", "for",
      "until",
    ],
    .toggle: [
      "key", "ifRevision", "user", "confirmWithin", "revertOnDisconnect", "for", "until",
    ],
    .confirm: ["key", "user"],
    .revert: ["key", "user"],
    .reset: ["key", "user"],
    .watch: ["keys", "since", "user"],
    .history: ["key", "limit", "before", "user"],
    .lock: ["key", "reason", "checked", "for", "until"],
    .unlock: ["key"],
    .disable: ["key", "reason", "for", "until"],
    .enable: ["key"],
    .reload: [],
    .apply: ["key"],
    .status: [],
  ]

  @Test func everyMethodIsDeclaredWithTheParametersOfTheContract() throws {
    let served = Method.allCases.compactMap { VarlinkInterface.methodName($0) }
    #expect(Set(Self.declared.keys) == Set(served))
    for method in Method.allCases {
      guard let name = VarlinkInterface.methodName(method) else { continue }
      let expected = try #require(Self.contract[method], "\(method) is not in the table")
      // A right is needed by writes and administering, and by any call
      // that names a user (acting as another is administering).
      let rightNeeded = method.privilege != .anyone || expected.contains(WireField.user)
      let withAuthorization =
        expected + (rightNeeded ? [WireField.allowInteractiveAuthentication] : [])
      #expect(Set(Self.declared[name] ?? []) == Set(withAuthorization), "\(name)")
    }
  }

  /// And the decoder takes each parameter the definition declares, with
  /// what a method needs besides it (`key`, `checked`).
  @Test func everyDeclaredParameterIsOneTheDaemonTakes() throws {
    var now = timespec()
    clock_gettime(CLOCK_REALTIME, &now)
    let inAnHour = Timestamp.iso8601(milliseconds: (Int64(now.tv_sec) + 3600) * 1000)
    let values: [String: JSONValue] = [
      "key": .string("wifi"), "checked": .bool(true), "user": .int(0), "prefix": .string("w"),
      "keys": .array([.string("wifi")]), "since": .int(0), "limit": .int(1), "before": .int(1),
      "ifRevision": .int(1), "confirmWithin": .int(30), "revertOnDisconnect": .bool(false),
      "for": .int(60), "until": .string(inAnHour), "reason": .string("r"),
      WireField.allowInteractiveAuthentication: .bool(true),
    ]
    for (name, parameters) in Self.declared {
      let method = try #require(VarlinkInterface.method(named: name))
      let needed = ["key", "checked"].filter { parameters.contains($0) }
      for parameter in parameters {
        // revertOnDisconnect comes only with confirmWithin.
        let with = parameter == "revertOnDisconnect" ? ["confirmWithin"] : []
        let names = Array(Set(needed + with + [parameter]))
        let params = JSONValue.object(
          try names.map { JSONMember($0, try #require(values[$0], "no value for \($0)")) })
        if case .failure(let error) = Call.decode(method, params: params) {
          Issue.record("\(name)(\(parameter)): \(error.message)")
        }
      }
    }
  }
}
