import SwitchCore

/// A JSON-RPC error code. An open set: a code from a newer daemon decodes
/// as itself and never traps.
public struct RPCErrorCode: RawRepresentable, Hashable, Sendable {
  public var rawValue: Int
  public init(rawValue: Int) { self.rawValue = rawValue }

  public static let parseError = RPCErrorCode(rawValue: -32700)
  public static let invalidRequest = RPCErrorCode(rawValue: -32600)
  public static let methodNotFound = RPCErrorCode(rawValue: -32601)
  public static let invalidParams = RPCErrorCode(rawValue: -32602)
  public static let internalError = RPCErrorCode(rawValue: -32603)
  public static let unknownSwitch = RPCErrorCode(rawValue: -32001)
  public static let readOnly = RPCErrorCode(rawValue: -32002)
  public static let disabled = RPCErrorCode(rawValue: -32003)
  public static let permissionDenied = RPCErrorCode(rawValue: -32004)
  public static let conflict = RPCErrorCode(rawValue: -32005)
  public static let applyFailed = RPCErrorCode(rawValue: -32006)
  public static let storageFailure = RPCErrorCode(rawValue: -32007)
  public static let overloaded = RPCErrorCode(rawValue: -32008)
  public static let historyCompacted = RPCErrorCode(rawValue: -32009)
  public static let invalidConfig = RPCErrorCode(rawValue: -32010)

  private static let names: [Int: String] = [
    -32700: "ParseError", -32600: "InvalidRequest", -32601: "MethodNotFound",
    -32602: "InvalidParams", -32603: "InternalError", -32001: "UnknownSwitch",
    -32002: "ReadOnly", -32003: "Disabled", -32004: "PermissionDenied", -32005: "Conflict",
    -32006: "ApplyFailed", -32007: "StorageFailure", -32008: "Overloaded",
    -32009: "HistoryCompacted", -32010: "InvalidConfig",
  ]

  /// Every code this build knows (and names), as docs/protocol.md's error
  /// table lists them; DocumentedTablesTests compares the two.
  public static var known: [RPCErrorCode] { names.keys.sorted().map { RPCErrorCode(rawValue: $0) } }

  /// `data.name`: `ReadOnly`, `Conflict`, …; `Error-32099` for a code this build does not know.
  public var name: String { Self.names[rawValue] ?? "Error\(rawValue)" }
}

/// A JSON-RPC error object: a code, one sentence for a person, and `data`
/// with at least `name` and, where it applies, `key`, `param`, `reason`,
/// `heldBy`, `disabledBy`, `policySource`, `revision`, `oldest`, `errors`.
public struct RPCError: Error, Equatable, Sendable {
  public var code: RPCErrorCode
  public var message: String
  /// Members of `data` after `name`, in order.
  public var data: [JSONMember]

  public init(_ code: RPCErrorCode, _ message: String, data: [JSONMember] = []) {
    self.code = code
    self.message = message
    self.data = data
  }

  /// The full `data` object, `name` first.
  public var dataObject: JSONValue {
    .object([JSONMember("name", .string(code.name))] + data)
  }

  public static func parseError(_ detail: String) -> RPCError {
    RPCError(.parseError, "The message is not valid JSON: \(detail).")
  }

  public static func invalidRequest(_ why: String) -> RPCError {
    RPCError(.invalidRequest, "The message is not a JSON-RPC 2.0 request: \(why).")
  }

  public static func methodNotFound(_ method: String) -> RPCError {
    RPCError(
      .methodNotFound, "There is no method named \(method).",
      data: [JSONMember("method", .string(method))])
  }

  /// `param` names the parameter that is missing or wrong (`params` for the
  /// params as a whole); `key` is the request's key, when it has a valid one.
  public static func invalidParams(_ why: String, param: String, key: String? = nil) -> RPCError {
    var data: [JSONMember] = []
    if let key { data.append(JSONMember(WireField.key, .string(key))) }
    data.append(JSONMember(WireField.param, .string(param)))
    return RPCError(.invalidParams, "Invalid params: \(why).", data: data)
  }

  public static func internalError(_ why: String) -> RPCError {
    RPCError(.internalError, "The daemon failed inside (\(why)); nothing changed.")
  }

  public static func storageFailure(_ why: String) -> RPCError {
    RPCError(.storageFailure, "The database could not commit (\(why)); nothing changed.")
  }

  public static func overloaded(_ why: String) -> RPCError {
    RPCError(.overloaded, "The daemon is at a limit: \(why).")
  }

  /// `since` is beyond the current revision: the client saw changes this
  /// database does not have (it was restored from a backup, or replaced).
  /// `data.revision` is the current one, so the client can start again from
  /// a fresh snapshot.
  public static func sinceBeyondRevision(_ since: Int64, current: Int64) -> RPCError {
    var error = invalidParams(
      "\"since\" is \(since), beyond the current revision \(current)", param: WireField.since)
    error.data.append(JSONMember(WireField.revision, .int(current)))
    return error
  }

  /// A backup could not be taken; the database is untouched.
  public static func backupFailed(_ why: String) -> RPCError {
    RPCError(.storageFailure, "The backup could not be taken (\(why)); nothing changed.")
  }

  public static func historyCompacted(since: Int64, oldest: Int64) -> RPCError {
    RPCError(
      .historyCompacted,
      "Changes after revision \(since) are no longer retained; the oldest kept is \(oldest).",
      data: [JSONMember(WireField.oldest, .int(oldest))])
  }

  /// Every problem is in `data.errors` and in the message, none left out.
  public static func invalidConfig(_ errors: [String]) -> RPCError {
    let list = errors.isEmpty ? "unknown problem" : errors.joined(separator: "; ")
    let count = errors.count == 1 ? "1 error" : "\(errors.count) errors"
    return RPCError(
      .invalidConfig,
      "The configuration was refused (\(count)), the running one stays: \(list).",
      data: [JSONMember(WireField.errors, .array(errors.map { .string($0) }))])
  }

  /// The wire form of a refusal by the rules (house rule 4: one place maps errors to codes).
  public init(_ refusal: Refusal) {
    switch refusal {
    case .unknownSwitch(let key):
      self.init(.unknownSwitch, refusal.message, data: [JSONMember("key", .string(key))])
    case .permissionDenied(let key, _, let requirement):
      // `reason`: why, for a client that shows no message (varlink's
      // parameters are these members alone).
      self.init(
        .permissionDenied, refusal.message,
        data: (key.map { [JSONMember(WireField.key, .string($0))] } ?? [])
          + [JSONMember(WireField.reason, .string(requirement))])
    case .disabled(let key, let reason, let by, let source):
      self.init(
        .disabled, refusal.message,
        data: [
          JSONMember(WireField.key, .string(key)),
          JSONMember(WireField.reason, reason.map(JSONValue.string) ?? .null),
          JSONMember(WireField.disabledBy, by.map { .string($0.wireName) } ?? .null),
          JSONMember(WireField.policySource, source.map { .string($0.policySourceText) } ?? .null),
        ])
    case .readOnly(let key, let reason, let heldBy, let source):
      self.init(
        .readOnly, refusal.message,
        data: [
          JSONMember(WireField.key, .string(key)),
          JSONMember(WireField.reason, reason.map(JSONValue.string) ?? .null),
          JSONMember(WireField.heldBy, heldBy.map { .string($0.wireName) } ?? .null),
          JSONMember(WireField.policySource, source.map { .string($0.policySourceText) } ?? .null),
        ])
    case .conflict(let key, _, let current):
      self.init(
        .conflict, refusal.message,
        data: [JSONMember("key", .string(key)), JSONMember("revision", .int(current))])
    case .pending(let key):
      // `data.revision` is added by the daemon, which knows it (`pendingConflict`).
      self.init(
        .conflict, refusal.message,
        data: [JSONMember("key", .string(key)), JSONMember(WireField.pending, .bool(true))])
    case .noApplyCommand(let key):
      self.init(
        .invalidParams, refusal.message,
        data: [
          JSONMember(WireField.key, .string(key)), JSONMember(WireField.param, .string("key")),
        ]
      )
    }
  }

  /// `Conflict` for a write of a switch pending a tried change (rule 20),
  /// with the switch's current revision.
  public static func pendingConflict(key: String, revision: Int64) -> RPCError {
    RPCError(
      .conflict, Refusal.pending(key: key).message,
      data: [
        JSONMember(WireField.key, .string(key)), JSONMember(WireField.pending, .bool(true)),
        JSONMember(WireField.revision, .int(revision)),
      ])
  }

  /// The switch's apply command failed or timed out; nothing changed.
  /// `reason` is the command's own first line of error output.
  /// `dependent`: the switch whose command failed, when it is not `key`'s
  /// own but one `key`'s change changes too (Requires=/Conflicts=): the
  /// sentence names it, `data.key` stays the switch the call named.
  public static func applyFailed(key: String, reason: String, dependent: String? = nil)
    -> RPCError
  {
    let what =
      dependent.map { $0 == key ? key : "\($0) (which this change of \(key) changes too)" } ?? key
    return RPCError(
      .applyFailed, "Applying \(what) failed, nothing changed: \(reason)",
      data: [
        JSONMember(WireField.key, .string(key)), JSONMember(WireField.reason, .string(reason)),
      ])
  }
}

extension RPCError {
  /// The caller may not call `method` at all (the first check of the order).
  public static func permissionDenied(method: Method, requirement: String) -> RPCError {
    RPCError(
      .permissionDenied, "You may not call \(method.rawValue): \(requirement).",
      data: [
        JSONMember("method", .string(method.rawValue)),
        JSONMember(WireField.reason, .string(requirement)),
      ])
  }
}

extension RPCError {
  /// polkit did not grant the right a call needs (`Authorization=polkit`).
  /// `authenticationRequired`: it would after authentication (a call with
  /// `allowInteractiveAuthentication` lets polkit ask).
  public static func permissionDeniedByPolkit(
    method: Method, key: String?, why: String, authenticationRequired: Bool
  ) -> RPCError {
    var data = [JSONMember]()
    if let key { data.append(JSONMember(WireField.key, .string(key))) }
    data.append(JSONMember("method", .string(method.rawValue)))
    data.append(JSONMember(WireField.authenticationRequired, .bool(authenticationRequired)))
    data.append(JSONMember(WireField.reason, .string(why)))
    return RPCError(
      .permissionDenied, "You may not \(method.refusedAction(key: key)): \(why).", data: data)
  }
}
