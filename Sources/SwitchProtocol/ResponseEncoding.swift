/// Writes JSON-RPC response objects, each without its newline: the caller
/// ends the line (or joins a batch's responses into one).
public enum ResponseEncoding {
  /// `{"jsonrpc":"2.0","id":…,"result":` — the caller writes the result, then `endResult`.
  public static func beginResult(_ w: inout JSONWriter, id: RequestID) {
    w.raw(Parts.head)
    w.value(id.jsonValue)
    w.raw(Parts.result)
  }

  /// Closes what `beginResult` opened.
  public static func endResult(_ w: inout JSONWriter) {
    w.raw("}")
  }

  /// An error response object.
  public static func writeError(_ w: inout JSONWriter, id: RequestID, _ error: RPCError) {
    w.raw(Parts.head)
    w.value(id.jsonValue)
    w.member(WireField.error)
    w.firstMember(WireField.code)
    w.int(Int64(error.code.rawValue))
    w.member(WireField.message)
    w.string(error.message)
    w.member(WireField.data)
    w.value(error.dataObject)
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
