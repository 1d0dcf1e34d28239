/// Writes JSON-RPC response objects, without the newline: a batch puts
/// several on one line, and the loop ends each line (the daemon's one
/// caller is `Server.writeResponse`).
public enum ResponseEncoding {
  /// `{"jsonrpc":"2.0","id":…,"result":` — the caller writes the result, then `endResult`.
  public static func beginResult(_ w: inout JSONWriter, id: RequestID) {
    w.raw(Parts.head)
    writeID(&w, id)
    w.raw(Parts.result)
  }

  /// The id, written from its parts (no JSONValue made for it).
  static func writeID(_ w: inout JSONWriter, _ id: RequestID) {
    switch id {
    case .number(let number): number.write(to: &w)
    case .string(let text): w.string(text)
    case .null: w.null()
    }
  }

  /// Closes what `beginResult` opened.
  public static func endResult(_ w: inout JSONWriter) {
    w.raw("}")
  }

  /// An error response object.
  /// `switchObject`: `data.switch`, already encoded (a Conflict's current switch).
  public static func writeError(
    _ w: inout JSONWriter, id: RequestID, _ error: RPCError, switchObject: [UInt8]? = nil
  ) {
    w.raw(Parts.head)
    writeID(&w, id)
    w.member(WireField.error)
    w.firstMember(WireField.code)
    w.int(Int64(error.code.rawValue))
    w.member(WireField.message)
    w.string(error.message)
    w.member(WireField.data)
    w.value(error.dataObject)
    if let switchObject {
      // The last member of the data object, in place of its closing brace.
      w.removeLast()
      w.member(WireField.switch)
      w.raw(switchObject)
      w.raw("}")
    }
    w.raw("}}")
  }

  /// Every response's first bytes, made once: `{"jsonrpc":"2.0","id":`.
  private enum Parts {
    static let head = fixedBytes {
      $0.firstMember(WireField.jsonrpc)
      $0.string(WireField.jsonrpcVersion)
      $0.member(WireField.id)
    }
    static let result = fixedBytes { $0.member(WireField.result) }
  }
}
