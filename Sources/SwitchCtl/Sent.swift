import SwitchProtocol

/// `Value` decoded from what the daemon sent. One that switchctl cannot
/// read fails the command; nothing is guessed and printed as `?`.
func decode<Value: WireDecodable>(
  _ json: JSONValue, as type: Value.Type = Value.self
) throws(Failure) -> Value {
  do {
    return try Value(wire: json)
  } catch {
    throw .undecodable(error)
  }
}

/// An object the daemon sent, decoded for the text, and as it came for
/// `--json` (which prints it exactly, members a newer daemon adds included).
struct Sent<Value: WireDecodable & Equatable>: Equatable {
  var value: Value
  var json: JSONValue

  init(_ json: JSONValue) throws(Failure) {
    self.init(value: try decode(json), json: json)
  }

  init(value: Value, json: JSONValue) {
    self.value = value
    self.json = json
  }
}

extension Sent<EntryObject> {
  /// The entries of a `history` result, each as it came.
  static func entries(ofHistory result: JSONValue) throws(Failure) -> [Self] {
    do {
      return try HistoryResult.entriesAsSent(result).map { Self(value: $0.value, json: $0.json) }
    } catch {
      throw .undecodable(error)
    }
  }
}
