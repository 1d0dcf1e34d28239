// JSONValue: the tree our JSON parser produces and our writer serializes.

/// A JSON value. Numbers keep their source text, so ids and huge numbers round-trip exactly.
public enum JSONValue: Equatable, Sendable {
  case null
  case bool(Bool)
  case number(JSONNumber)
  case string(String)
  case array([JSONValue])
  /// Members in source order; duplicates kept (the caller decides).
  case object([JSONMember])
}

/// One `"name": value` pair of a JSON object.
public struct JSONMember: Equatable, Sendable {
  public var name: String
  public var value: JSONValue

  public init(_ name: String, _ value: JSONValue) {
    self.name = name
    self.value = value
  }
}

/// A JSON number, kept as its exact text; a number made from an Int64, or
/// read as up to 18 digits (how nearly every request id is written), is
/// kept as its value, and its text is made only when asked for: a String
/// made per request and written back through `withUTF8` cost ~250
/// instructions of every call (callgrind).
public struct JSONNumber: Equatable, Sendable {
  private enum Storage: Sendable {
    /// The text is exactly `String(value)`.
    case integer(Int64)
    case text(String)
  }
  private let storage: Storage

  /// The exact JSON number text, e.g. "-12", "1.5e3".
  public var text: String {
    switch storage {
    case .integer(let value): String(value)
    case .text(let text): text
    }
  }

  /// A number whose text is the decimal form of `value`.
  public init(_ value: Int64) {
    storage = .integer(value)
  }

  /// A number with the given text; nil unless `text` is a valid JSON number.
  public init?(text: String) {
    var copy = text
    let valid = copy.withUTF8 { buf -> Bool in
      guard let base = buf.baseAddress, !buf.isEmpty else { return false }
      do {
        return try JSONGrammar.numberEnd(base, start: 0, count: buf.count) == buf.count
      } catch {
        return false
      }
    }
    guard valid else { return nil }
    storage = .text(text)
  }

  /// For text already checked against the JSON number grammar.
  init(validatedText: String) {
    storage = .text(validatedText)
  }

  /// Equal when their texts are: `1` and `1.0` are different numbers here.
  public static func == (a: JSONNumber, b: JSONNumber) -> Bool {
    if case .integer(let x) = a.storage, case .integer(let y) = b.storage { return x == y }
    return a.text == b.text
  }

  /// Appends the text to `w`.
  func write(to w: inout JSONWriter) {
    switch storage {
    case .integer(let value): w.int(value)
    case .text(let text): w.append(utf8: text)
    }
  }

  /// The value when the text is an integer (no '.', no exponent) that fits Int64; else nil.
  public var int64: Int64? {
    if case .integer(let value) = storage { return value }
    let text = self.text
    var result: Int64 = 0  // accumulated as a negative number, so Int64.min fits
    var negative = false
    var sawDigit = false
    for byte in text.utf8 {
      if byte == UInt8(ascii: "-") && !sawDigit && !negative {
        negative = true
        continue
      }
      guard byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") else { return nil }
      sawDigit = true
      let (times10, overflow1) = result.multipliedReportingOverflow(by: 10)
      let (next, overflow2) = times10.subtractingReportingOverflow(
        Int64(byte &- UInt8(ascii: "0")))
      if overflow1 || overflow2 { return nil }
      result = next
    }
    guard sawDigit else { return nil }
    if negative { return result }
    let (positive, overflow) = (0 as Int64).subtractingReportingOverflow(result)
    return overflow ? nil : positive
  }
}

extension JSONValue {
  /// The first member with that name, for `.object`; nil otherwise.
  public subscript(name: String) -> JSONValue? {
    guard case .object(let members) = self else { return nil }
    for member in members where member.name == name {
      return member.value
    }
    return nil
  }

  public var objectMembers: [JSONMember]? {
    if case .object(let members) = self { return members }
    return nil
  }

  public var arrayValue: [JSONValue]? {
    if case .array(let elements) = self { return elements }
    return nil
  }

  public var stringValue: String? {
    if case .string(let s) = self { return s }
    return nil
  }

  /// Only `.bool`; never 1, 0 or "true".
  public var boolValue: Bool? {
    if case .bool(let b) = self { return b }
    return nil
  }

  /// Only a `.number` whose text is an integer that fits Int64.
  public var int64Value: Int64? {
    if case .number(let n) = self { return n.int64 }
    return nil
  }

  public var isNull: Bool {
    if case .null = self { return true }
    return false
  }

  /// `.number(JSONNumber(v))`.
  public static func int(_ v: Int64) -> JSONValue {
    .number(JSONNumber(v))
  }
}
