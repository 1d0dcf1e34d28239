import SwitchCore

/// A JSON-RPC request id: a number (kept as its text), a string, or null.
public enum RequestID: Equatable, Hashable, Sendable {
  case number(JSONNumber)
  case string(String)
  case null

  public var jsonValue: JSONValue {
    switch self {
    case .number(let n): return .number(n)
    case .string(let s): return .string(s)
    case .null: return .null
    }
  }

  public init?(_ value: JSONValue) {
    switch value {
    case .number(let n): self = .number(n)
    case .string(let s): self = .string(s)
    case .null: self = .null
    default: return nil
    }
  }
}

extension JSONNumber: Hashable {
  public func hash(into hasher: inout Hasher) { hasher.combine(text) }
}

/// One JSON-RPC 2.0 request, its envelope checked; params not yet decoded.
public struct Request: Equatable, Sendable {
  /// nil for a notification: carried out, never answered.
  public var id: RequestID?
  public var method: String
  public var params: JSONValue?
}

/// What one line holds.
public enum Incoming: Equatable, Sendable {
  /// A request, or the error that answers an invalid one.
  public typealias Item = Result<Request, EnvelopeError>
  case single(Item)
  /// A batch: each element stands alone.
  case batch([Item])
}

/// An invalid message, with the id to answer it with (null when none can be read).
public struct EnvelopeError: Error, Equatable, Sendable {
  public var error: RPCError
  public var id: RequestID
}

/// A request whose params are already decoded into its Call.
public struct DecodedCall: Equatable, Sendable {
  /// nil for a notification: carried out, never answered.
  public var id: RequestID?
  public var method: Method
  public var call: Call
}

public enum RequestDecoder {
  /// The most requests one batch may hold; a larger one is refused whole
  /// with one `InvalidRequest`, nothing in it carried out. Every request
  /// of a batch is answered, an error or `Overloaded` included, so without
  /// it a line of MaxFrameBytes (`[1,1,1,…]`, half a million elements)
  /// made ~88 MB of answers that the daemon held for a client that need
  /// not read them. With it a line's answer is at most the 4 MiB of
  /// results plus ~3 MB of errors.
  public static let maxBatchRequests = 16_384

  /// The common request (a `get`, `toggle` or `set` of a key) read straight
  /// into its Call; nil for any other line, which `decode` then reads.
  /// Exactly what `decode` and `Call.decode` give for the same line; a
  /// declared long key is `keys`' String (`KeyInterner`).
  public static func decodeCall(
    _ line: UnsafeBufferPointer<UInt8>, maxDepth: Int, keys: KeyInterner = KeyInterner()
  ) -> DecodedCall? {
    RequestFastPath.keyCall(line, maxDepth: maxDepth, keys: keys)
  }

  /// Decodes one line: JSON, then the JSON-RPC 2.0 envelope of each request.
  public static func decode(_ line: UnsafeBufferPointer<UInt8>, maxDepth: Int) -> Incoming {
    // The common single request, read without a JSON tree (RequestFastPath.swift).
    if let request = RequestFastPath.request(line, maxDepth: maxDepth) {
      return .single(.success(request))
    }
    return decodeGeneral(line, maxDepth: maxDepth)
  }

  /// `decode` without its fast path: every line through JSONParser and the
  /// envelope checks. The reference the fast path is tested and fuzzed against.
  public static func decodeGeneral(_ line: UnsafeBufferPointer<UInt8>, maxDepth: Int) -> Incoming {
    let value: JSONValue
    do {
      value = try JSONParser.parse(line, maxDepth: maxDepth)
    } catch {
      switch error.kind {
      case .tooDeep:
        return .single(
          .failure(
            EnvelopeError(
              error: .invalidRequest("it nests deeper than \(maxDepth) levels"), id: .null)))
      case .invalidUTF8, .syntax:
        return .single(.failure(EnvelopeError(error: .parseError(error.message), id: .null)))
      }
    }
    if let items = value.arrayValue {
      if items.isEmpty {
        return .single(
          .failure(EnvelopeError(error: .invalidRequest("an empty batch"), id: .null)))
      }
      if items.count > maxBatchRequests {
        return .single(
          .failure(
            EnvelopeError(
              error: .invalidRequest(
                "a batch holds at most \(maxBatchRequests) requests; this one has \(items.count)"),
              id: .null)))
      }
      return .batch(items.map(envelope))
    }
    return .single(envelope(value))
  }

  /// Checks one request object: `jsonrpc` is "2.0", `method` a string, `id`
  /// a string, number or null, `params` structured (an object or an array,
  /// as JSON-RPC says), nothing else.
  static func envelope(_ value: JSONValue) -> Incoming.Item {
    guard let members = value.objectMembers else {
      return .failure(
        EnvelopeError(error: .invalidRequest("a request is a JSON object"), id: .null))
    }
    var id: RequestID?
    for m in members where m.name == "id" {
      id = RequestID(m.value)
      if id == nil {
        return .failure(
          EnvelopeError(
            error: .invalidRequest("\"id\" must be a string, number or null"), id: .null))
      }
      break
    }
    let answerID = id ?? .null
    func fail(_ why: String) -> Incoming.Item {
      .failure(EnvelopeError(error: .invalidRequest(why), id: answerID))
    }
    var method: String?
    var params: JSONValue?
    var version: JSONValue?
    // Only four names are allowed, so a bit each finds duplicates without
    // hashing (this runs for every request).
    var seen: UInt8 = 0
    for m in members {
      let bit: UInt8
      switch m.name {
      case "jsonrpc": bit = 1
      case "method": bit = 2
      case "params": bit = 4
      case "id": bit = 8
      default: return fail("unknown member \"\(m.name)\"")
      }
      if seen & bit != 0 { return fail("\"\(m.name)\" is given twice") }
      seen |= bit
      switch m.name {
      case "jsonrpc": version = m.value
      case "method":
        guard let name = m.value.stringValue else { return fail("\"method\" must be a string") }
        method = name
      case "params":
        // JSON-RPC 2.0 allows only a structured value here, so `null` or a
        // scalar is not a request; an array is one, but switchd takes named
        // params only (Call.decode answers it InvalidParams). The sentence
        // names what switchd accepts, never the array it then refuses.
        guard m.value.objectMembers != nil || m.value.arrayValue != nil else {
          return fail("\"params\" must be an object of named params, or left out")
        }
        params = m.value
      case "id": break
      default: return fail("unknown member \"\(m.name)\"")
      }
    }
    guard version?.stringValue == "2.0" else { return fail("\"jsonrpc\" must be \"2.0\"") }
    guard let method else { return fail("\"method\" is missing") }
    return .success(Request(id: id, method: method, params: params))
  }
}
