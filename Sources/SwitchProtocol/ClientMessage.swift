/// What a client reads from the daemon: a response or a notification.
public enum ClientMessage: Sendable {
  case response(id: RequestID, outcome: Result<JSONValue, RemoteError>)
  case notification(method: String, params: JSONValue)

  /// Parses one line from the daemon.
  public static func parse(_ line: [UInt8]) -> ClientMessage? {
    guard let value = try? JSONParser.parse(line, maxDepth: 512),
      value["jsonrpc"]?.stringValue == "2.0"
    else { return nil }
    if let method = value["method"]?.stringValue {
      return .notification(method: method, params: value["params"] ?? .null)
    }
    guard let id = value["id"].flatMap(RequestID.init) else { return nil }
    if let error = value["error"] {
      return .response(id: id, outcome: .failure(RemoteError(error)))
    }
    return .response(id: id, outcome: .success(value["result"] ?? .null))
  }
}

/// An error the daemon answered with. Unknown codes decode as themselves.
public struct RemoteError: Error, Sendable {
  public var code: RPCErrorCode
  public var message: String
  public var data: JSONValue

  public init(_ value: JSONValue) {
    code = RPCErrorCode(rawValue: Int(value["code"]?.int64Value ?? -32603))
    message = value["message"]?.stringValue ?? "The daemon answered with an error."
    data = value["data"] ?? .null
  }

  public init(code: RPCErrorCode, message: String, data: JSONValue = .null) {
    self.code = code
    self.message = message
    self.data = data
  }
}

/// Writes a request line (with its newline).
public enum RequestEncoding {
  public static func line(id: Int64, method: Method, params: [JSONMember]) -> [UInt8] {
    var w = JSONWriter(capacity: 128)
    w.raw("{\"jsonrpc\":\"2.0\",\"id\":")
    w.int(id)
    w.raw(",\"method\":")
    w.string(method.rawValue)
    w.raw(",\"params\":")
    w.value(.object(params))
    w.raw("}\n")
    return w.bytes
  }
}
