import SwitchCore

/// A result or event that does not have the shape docs/protocol.md gives
/// it: a member missing, or of another type. `description` names both.
public struct WireDecodingError: Error, Equatable, CustomStringConvertible {
  public var description: String
}

/// A result, event or object of docs/protocol.md, read from its parsed JSON.
/// Members this build does not know are ignored: a newer daemon adds some
/// ("Writing a client that lasts"). Any member it knows must be there with
/// its type, or decoding fails with a `WireDecodingError`.
public protocol WireDecodable {
  /// What the object is, for errors: "a Switch", "the list result".
  static var objectName: String { get }
  /// Reads the value from the members of its object.
  init(members: WireMembers) throws(WireDecodingError)
}

extension WireDecodable {
  public init(wire: JSONValue) throws(WireDecodingError) {
    try self.init(members: WireMembers(wire, Self.objectName))
  }
}

/// The members of one wire object, read by their `WireField` names.
public struct WireMembers {
  private let value: JSONValue
  /// What the object is, for errors: "a Switch", "the list result".
  private let object: String

  public init(_ value: JSONValue, _ object: String) throws(WireDecodingError) {
    guard value.objectMembers != nil else {
      throw WireDecodingError(description: "\(object) is not a JSON object")
    }
    self.value = value
    self.object = object
  }

  /// Whether the object has the member, for one that may be left out.
  public func has(_ name: String) -> Bool { value[name] != nil }

  public func string(_ name: String) throws(WireDecodingError) -> String {
    try read(name, "a string", \.stringValue)
  }

  /// A switch key, as the key grammar allows: what a client prints as it
  /// is, so a key that is not one (a terminal escape sent by whatever
  /// answers at the socket) is refused here.
  public func key(_ name: String) throws(WireDecodingError) -> String {
    try read(name, "a switch key") { $0.stringValue.flatMap { SwitchKey.isValid($0) ? $0 : nil } }
  }

  /// A name of the protocol's (a cause, a source): lower-case letters,
  /// digits and `-`, also one this build does not know, nothing else.
  public func name(_ name: String) throws(WireDecodingError) -> String {
    try read(name, "a name of lower-case letters, digits and -") { value in
      value.stringValue.flatMap { text in
        !text.isEmpty && text.utf8.count <= 64
          && text.utf8.allSatisfy {
            ($0 >= 0x61 && $0 <= 0x7A) || ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x2D
          }
          ? text : nil
      }
    }
  }

  public func stringOrNull(_ name: String) throws(WireDecodingError) -> String? {
    try readOrNull(name, "a string", \.stringValue)
  }

  public func bool(_ name: String) throws(WireDecodingError) -> Bool {
    try read(name, "true or false", \.boolValue)
  }

  public func boolOrNull(_ name: String) throws(WireDecodingError) -> Bool? {
    try readOrNull(name, "true or false", \.boolValue)
  }

  /// A whole number that fits `T` (a uid in `UInt32`, a count in `Int`).
  public func integer<T: FixedWidthInteger>(_ name: String) throws(WireDecodingError) -> T {
    try read(name, "a whole number") { $0.int64Value.flatMap { T(exactly: $0) } }
  }

  public func integerOrNull<T: FixedWidthInteger>(_ name: String) throws(WireDecodingError) -> T? {
    try readOrNull(name, "a whole number") { $0.int64Value.flatMap { T(exactly: $0) } }
  }

  /// A string that `parse` knows: a word of a set this build has all of.
  public func word<T>(
    _ name: String, _ parse: (String) -> T?
  ) throws(WireDecodingError) -> T {
    try read(name, "a word this build knows") { $0.stringValue.flatMap(parse) }
  }

  /// A time (`2026-11-30T03:41:07.002Z`), as milliseconds since the epoch.
  public func time(_ name: String) throws(WireDecodingError) -> Int64 {
    try read(name, "a time", Self.time)
  }

  public func timeOrNull(_ name: String) throws(WireDecodingError) -> Int64? {
    try readOrNull(name, "a time", Self.time)
  }

  /// A time or null, and nil when absent: a member a daemon from before it
  /// does not send (the deadlines of SEMANTICS.md rules 20–22).
  public func timeIfPresent(_ name: String) throws(WireDecodingError) -> Int64? {
    has(name) ? try timeOrNull(name) : nil
  }

  public func strings(_ name: String) throws(WireDecodingError) -> [String] {
    try read(name, "an array of strings") { value in
      guard let items = value.arrayValue else { return nil }
      let strings = items.compactMap(\.stringValue)
      return strings.count == items.count ? strings : nil
    }
  }

  /// An object member, decoded as `T`.
  public func decode<T: WireDecodable>(_ name: String) throws(WireDecodingError) -> T {
    try T(wire: read(name, "an object") { $0 })
  }

  /// `decode`, where `null` is a value too (nil).
  public func decodeOrNull<T: WireDecodable>(_ name: String) throws(WireDecodingError) -> T? {
    if value[name] == .null { return nil }
    return try decode(name) as T
  }

  /// An array member whose elements are decoded as `T`.
  public func decodeArray<T: WireDecodable>(_ name: String) throws(WireDecodingError) -> [T] {
    try decodeEach(name).map(\.value)
  }

  /// An array member whose elements are decoded as `T`, each with the JSON
  /// it was decoded from.
  public func decodeEach<T: WireDecodable>(
    _ name: String
  ) throws(WireDecodingError) -> [(value: T, json: JSONValue)] {
    var decoded: [(value: T, json: JSONValue)] = []
    for element in try read(name, "an array", \.arrayValue) {
      decoded.append((try T(wire: element), element))
    }
    return decoded
  }

  private func read<T>(
    _ name: String, _ expected: String, _ convert: (JSONValue) -> T?
  ) throws(WireDecodingError) -> T {
    guard let member = value[name], let typed = convert(member) else {
      throw WireDecodingError(
        description: "\(object) has no member \"\(name)\" that is \(expected)")
    }
    return typed
  }

  /// `read`, where `null` is a value too (nil).
  private func readOrNull<T>(
    _ name: String, _ expected: String, _ convert: (JSONValue) -> T?
  ) throws(WireDecodingError) -> T? {
    if value[name] == .null { return nil }
    return try read(name, expected + " or null", convert)
  }

  private static func time(_ value: JSONValue) -> Int64? {
    value.stringValue.flatMap { Timestamp.milliseconds($0) }
  }
}
