// A strict RFC 8259 JSON parser over raw bytes.
//
// Why our own instead of Foundation:
// - strict types: `true` is a Bool and `1` is a number, never each other
//   (JSONSerialization turns 1 into true);
// - a nesting depth limit, enforced without recursion, so a hostile client cannot
//   overflow the stack;
// - exact numbers: the source text is kept, so ids and huge numbers round-trip;
// - no Foundation in the CLI: importing it costs ~3 ms of start-up per call;
// - speed: one pass over bytes, about a microsecond for a typical request.
//
// One file past the ~400 lines a file may have: the parser is one state
// machine (values, strings, numbers and the depth stack share its cursor),
// and split across files its hot loop would lose its private inlining.

/// Why a JSON text was rejected.
public struct JSONParseError: Error, Equatable, Sendable, CustomStringConvertible {
  public enum Kind: Sendable, Equatable {
    case invalidUTF8
    case syntax
    case tooDeep
  }

  public var kind: Kind
  /// Byte offset of the problem.
  public var offset: Int
  /// A short English phrase for a person, e.g. "unexpected character 'x' at byte 7".
  public var message: String

  public init(kind: Kind, offset: Int, message: String) {
    self.kind = kind
    self.offset = offset
    self.message = message
  }

  public var description: String { message }
}

public enum JSONParser {
  /// Parses exactly one JSON value (surrounding whitespace allowed) from bytes.
  public static func parse(
    _ bytes: UnsafeBufferPointer<UInt8>, maxDepth: Int
  ) throws(JSONParseError) -> JSONValue {
    guard let base = bytes.baseAddress, !bytes.isEmpty else {
      throw JSONParseError(kind: .syntax, offset: 0, message: "empty message")
    }
    try validateUTF8(base, count: bytes.count)
    var parser = Parser(base: base, count: bytes.count, maxDepth: max(0, maxDepth))
    return try parser.parseDocument()
  }

  /// Parses exactly one JSON value (surrounding whitespace allowed) from bytes.
  public static func parse(_ bytes: [UInt8], maxDepth: Int) throws(JSONParseError) -> JSONValue {
    let result = bytes.withUnsafeBufferPointer { buf in
      Result { () throws(JSONParseError) -> JSONValue in try parse(buf, maxDepth: maxDepth) }
    }
    return try result.get()
  }

  /// Parses exactly one JSON value (surrounding whitespace allowed) from a string.
  public static func parse(_ text: String, maxDepth: Int) throws(JSONParseError) -> JSONValue {
    var copy = text
    let result = copy.withUTF8 { buf in
      Result { () throws(JSONParseError) -> JSONValue in try parse(buf, maxDepth: maxDepth) }
    }
    return try result.get()
  }

  // MARK: UTF-8

  /// Checks that the whole input is well-formed UTF-8 (Unicode Table 3-7).
  static func validateUTF8(_ p: UnsafePointer<UInt8>, count n: Int) throws(JSONParseError) {
    var i = 0
    while i < n {
      // ASCII fast path, 8 bytes at a time.
      if n - i >= 8 {
        let word = UnsafeRawPointer(p + i).loadUnaligned(as: UInt64.self)
        if word & 0x8080_8080_8080_8080 == 0 {
          i += 8
          continue
        }
      }
      let lead = p[i]
      if lead < 0x80 {
        i += 1
        continue
      }
      let length: Int
      var low: UInt8 = 0x80  // allowed range of the second byte
      var high: UInt8 = 0xBF
      switch lead {
      case 0xC2...0xDF:
        length = 2
      case 0xE0:
        length = 3
        low = 0xA0
      case 0xED:
        length = 3
        high = 0x9F
      case 0xE1...0xEC, 0xEE...0xEF:
        length = 3
      case 0xF0:
        length = 4
        low = 0x90
      case 0xF4:
        length = 4
        high = 0x8F
      case 0xF1...0xF3:
        length = 4
      case 0x80...0xBF:
        throw utf8Error(i, "unexpected UTF-8 continuation byte")
      case 0xC0, 0xC1:
        throw utf8Error(i, "overlong UTF-8 sequence")
      default:
        throw utf8Error(i, "invalid UTF-8 byte")
      }
      guard n - i >= length else { throw utf8Error(i, "truncated UTF-8 sequence") }
      let second = p[i + 1]
      guard second >= low && second <= high else {
        if second & 0xC0 != 0x80 { throw utf8Error(i, "truncated UTF-8 sequence") }
        if lead == 0xED { throw utf8Error(i, "UTF-8 encoded surrogate") }
        if lead == 0xF4 { throw utf8Error(i, "code point above U+10FFFF") }
        throw utf8Error(i, "overlong UTF-8 sequence")
      }
      var k = 2
      while k < length {
        guard p[i + k] & 0xC0 == 0x80 else { throw utf8Error(i, "truncated UTF-8 sequence") }
        k += 1
      }
      i += length
    }
  }

  private static func utf8Error(_ offset: Int, _ what: String) -> JSONParseError {
    JSONParseError(kind: .invalidUTF8, offset: offset, message: "\(what) at byte \(offset)")
  }
}

/// Grammar pieces shared by the parser and `JSONNumber(text:)`.
enum JSONGrammar {
  @inline(__always)
  static func isDigit(_ c: UInt8) -> Bool {
    c &- UInt8(ascii: "0") < 10
  }

  /// JSON's insignificant whitespace: space, tab, newline, carriage return.
  @inline(__always)
  static func isSpace(_ c: UInt8) -> Bool {
    c == 0x20 || c == 0x0A || c == 0x0D || c == 0x09
  }

  /// Scans a number starting at `start`; returns the index just past it.
  /// Grammar: `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`.
  static func numberEnd(
    _ p: UnsafePointer<UInt8>, start: Int, count n: Int
  ) throws(JSONParseError) -> Int {
    var j = start
    if j < n && p[j] == UInt8(ascii: "-") { j += 1 }
    guard j < n else { throw syntax(j, "expected a digit at byte \(j)") }
    if p[j] == UInt8(ascii: "0") {
      j += 1
      if j < n && isDigit(p[j]) {
        throw syntax(start, "leading zeros are not allowed at byte \(start)")
      }
    } else if isDigit(p[j]) {
      j += 1
      while j < n && isDigit(p[j]) { j += 1 }
    } else {
      throw syntax(j, "expected a digit at byte \(j)")
    }
    if j < n && p[j] == UInt8(ascii: ".") {
      j += 1
      guard j < n && isDigit(p[j]) else {
        throw syntax(j, "expected a digit after the decimal point at byte \(j)")
      }
      while j < n && isDigit(p[j]) { j += 1 }
    }
    if j < n && (p[j] == UInt8(ascii: "e") || p[j] == UInt8(ascii: "E")) {
      j += 1
      if j < n && (p[j] == UInt8(ascii: "+") || p[j] == UInt8(ascii: "-")) { j += 1 }
      guard j < n && isDigit(p[j]) else {
        throw syntax(j, "expected a digit in the exponent at byte \(j)")
      }
      while j < n && isDigit(p[j]) { j += 1 }
    }
    return j
  }

  static func syntax(_ offset: Int, _ message: String) -> JSONParseError {
    JSONParseError(kind: .syntax, offset: offset, message: message)
  }

  /// `'x'` for printable ASCII, else `byte 0xNN`.
  static func describe(_ c: UInt8) -> String {
    if c > 0x20 && c < 0x7F { return "character '\(Character(Unicode.Scalar(c)))'" }
    return "byte 0x\(hex2(c))"
  }

  static func hex2(_ c: UInt8) -> String {
    let digits: StaticString = "0123456789ABCDEF"
    let hi = digits.utf8Start[Int(c >> 4)]
    let lo = digits.utf8Start[Int(c & 0x0F)]
    return String(decoding: [hi, lo], as: UTF8.self)
  }
}

// MARK: - The parser

private enum Byte {
  static let quote = UInt8(ascii: "\"")
  static let backslash = UInt8(ascii: "\\")
  static let comma = UInt8(ascii: ",")
  static let colon = UInt8(ascii: ":")
  static let openBracket = UInt8(ascii: "[")
  static let closeBracket = UInt8(ascii: "]")
  static let openBrace = UInt8(ascii: "{")
  static let closeBrace = UInt8(ascii: "}")
}

/// An iterative parser: open arrays and objects live on explicit stacks, so the
/// depth of the input never reaches the call stack.
private struct Parser {
  struct Frame {
    var isObject: Bool
    var valueStart: Int  // index in `values` of the container's first element
    var nameStart: Int  // index in `names` of an object's first member name
  }

  let p: UnsafePointer<UInt8>
  let n: Int
  let maxDepth: Int
  var i = 0
  var values: [JSONValue] = []  // elements of all open containers, innermost last
  var names: [String] = []  // member names of all open objects, innermost last
  var frames: [Frame] = []
  var scratch: [UInt8] = []  // decoded bytes of a string with escapes

  init(base: UnsafePointer<UInt8>, count: Int, maxDepth: Int) {
    self.p = base
    self.n = count
    self.maxDepth = maxDepth
    values.reserveCapacity(16)
    names.reserveCapacity(16)
    frames.reserveCapacity(8)
  }

  mutating func parseDocument() throws(JSONParseError) -> JSONValue {
    if n >= 3 && p[0] == 0xEF && p[1] == 0xBB && p[2] == 0xBF {
      throw JSONGrammar.syntax(0, "a byte order mark is not allowed")
    }
    skipWhitespace()
    guard i < n else { throw JSONGrammar.syntax(i, "empty message") }
    let value = try parseValue()
    skipWhitespace()
    guard i >= n else {
      if p[i] == 0 { throw unexpected(at: i) }
      throw JSONGrammar.syntax(
        i, "unexpected \(JSONGrammar.describe(p[i])) after the value at byte \(i)")
    }
    return value
  }

  @inline(__always)
  mutating func skipWhitespace() {
    while i < n {
      let c = p[i]
      guard JSONGrammar.isSpace(c) else { return }
      i += 1
    }
  }

  func unexpected(at offset: Int) -> JSONParseError {
    guard offset < n else {
      return JSONGrammar.syntax(offset, "unexpected end of input at byte \(offset)")
    }
    let c = p[offset]
    if c == 0 {
      return JSONGrammar.syntax(offset, "a raw NUL byte is not allowed at byte \(offset)")
    }
    return JSONGrammar.syntax(offset, "unexpected \(JSONGrammar.describe(c)) at byte \(offset)")
  }

  /// The offset of a ',' just before `i` (whitespace aside), if any.
  func trailingComma() -> Int? {
    var k = i - 1
    while k >= 0 {
      let c = p[k]
      if c == Byte.comma { return k }
      guard JSONGrammar.isSpace(c) else { return nil }
      k -= 1
    }
    return nil
  }

  func tooDeep() -> JSONParseError {
    JSONParseError(
      kind: .tooDeep, offset: i,
      message: "nesting deeper than \(maxDepth) levels at byte \(i)")
  }

  mutating func parseValue() throws(JSONParseError) -> JSONValue {
    var value: JSONValue
    while true {
      // Read the start of a value: a scalar, an empty container, or an opening.
      skipWhitespace()
      guard i < n else { throw unexpected(at: i) }
      switch p[i] {
      case Byte.openBracket:
        guard frames.count < maxDepth else { throw tooDeep() }
        i += 1
        skipWhitespace()
        if i < n && p[i] == Byte.closeBracket {
          i += 1
          value = .array([])
        } else {
          frames.append(Frame(isObject: false, valueStart: values.count, nameStart: names.count))
          continue
        }
      case Byte.openBrace:
        guard frames.count < maxDepth else { throw tooDeep() }
        i += 1
        skipWhitespace()
        if i < n && p[i] == Byte.closeBrace {
          i += 1
          value = .object([])
        } else {
          frames.append(Frame(isObject: true, valueStart: values.count, nameStart: names.count))
          try parseMemberName()
          continue
        }
      case Byte.quote:
        value = .string(try parseString())
      case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
        let start = i
        i = try JSONGrammar.numberEnd(p, start: start, count: n)
        let text = String(
          decoding: UnsafeBufferPointer(start: p + start, count: i - start), as: UTF8.self)
        value = .number(JSONNumber(validatedText: text))
      case UInt8(ascii: "t"):
        try literal("true")
        value = .bool(true)
      case UInt8(ascii: "f"):
        try literal("false")
        value = .bool(false)
      case UInt8(ascii: "n"):
        try literal("null")
        value = .null
      case Byte.closeBracket, Byte.closeBrace:
        if let comma = trailingComma() {
          throw JSONGrammar.syntax(comma, "trailing comma at byte \(comma)")
        }
        throw unexpected(at: i)
      default:
        throw unexpected(at: i)
      }

      // Place the value in its container; close every container that ends here.
      while true {
        guard let top = frames.last else { return value }
        values.append(value)
        skipWhitespace()
        guard i < n else { throw unexpected(at: i) }
        let c = p[i]
        if c == Byte.comma {
          i += 1
          if top.isObject { try parseMemberName() }
          break
        }
        if top.isObject {
          guard c == Byte.closeBrace else {
            throw JSONGrammar.syntax(
              i, "expected ',' or '}' at byte \(i), found \(JSONGrammar.describe(c))")
          }
          i += 1
          frames.removeLast()
          let count = values.count - top.valueStart
          var members: [JSONMember] = []
          members.reserveCapacity(count)
          for k in 0..<count {
            members.append(JSONMember(names[top.nameStart + k], values[top.valueStart + k]))
          }
          names.removeLast(count)
          values.removeLast(count)
          value = .object(members)
        } else {
          guard c == Byte.closeBracket else {
            throw JSONGrammar.syntax(
              i, "expected ',' or ']' at byte \(i), found \(JSONGrammar.describe(c))")
          }
          i += 1
          frames.removeLast()
          let elements = Array(values[top.valueStart...])
          values.removeLast(elements.count)
          value = .array(elements)
        }
      }
    }
  }

  /// Reads `"name"` and `:`, leaving `i` at the member's value.
  mutating func parseMemberName() throws(JSONParseError) {
    skipWhitespace()
    guard i < n && p[i] == Byte.quote else {
      if i < n && p[i] == Byte.closeBrace, let comma = trailingComma() {
        throw JSONGrammar.syntax(comma, "trailing comma at byte \(comma)")
      }
      if i < n && p[i] == UInt8(ascii: "'") {
        throw JSONGrammar.syntax(i, "single quotes are not allowed at byte \(i)")
      }
      if i < n && p[i] > 0x20 && p[i] != 0 {
        throw JSONGrammar.syntax(
          i,
          "expected a member name in double quotes at byte \(i), found \(JSONGrammar.describe(p[i]))"
        )
      }
      throw unexpected(at: i)
    }
    names.append(try parseString())
    skipWhitespace()
    guard i < n && p[i] == Byte.colon else {
      if i >= n { throw unexpected(at: i) }
      throw JSONGrammar.syntax(i, "expected ':' at byte \(i), found \(JSONGrammar.describe(p[i]))")
    }
    i += 1
  }

  mutating func literal(_ word: StaticString) throws(JSONParseError) {
    let length = word.utf8CodeUnitCount
    guard n - i >= length else { throw invalidLiteral() }
    let w = word.utf8Start
    for k in 0..<length where p[i + k] != w[k] {
      throw invalidLiteral()
    }
    i += length
  }

  func invalidLiteral() -> JSONParseError {
    JSONGrammar.syntax(i, "invalid literal at byte \(i) (expected true, false or null)")
  }

  /// Parses a string token; `p[i]` is its opening quote.
  mutating func parseString() throws(JSONParseError) -> String {
    let start = i + 1
    var j = start
    while j < n {
      let c = p[j]
      if c == Byte.quote {
        i = j + 1
        return String(
          decoding: UnsafeBufferPointer(start: p + start, count: j - start), as: UTF8.self)
      }
      if c == Byte.backslash { return try parseEscapedString(from: start, firstEscape: j) }
      if c < 0x20 { throw controlCharacter(at: j) }
      j += 1
    }
    throw JSONGrammar.syntax(i, "unterminated string starting at byte \(i)")
  }

  func controlCharacter(at j: Int) -> JSONParseError {
    if p[j] == 0 { return JSONGrammar.syntax(j, "a raw NUL byte is not allowed at byte \(j)") }
    return JSONGrammar.syntax(
      j, "unescaped control character 0x\(JSONGrammar.hex2(p[j])) in a string at byte \(j)")
  }

  /// The slow path of `parseString`, once a backslash is seen.
  mutating func parseEscapedString(from start: Int, firstEscape: Int) throws(JSONParseError)
    -> String
  {
    scratch.removeAll(keepingCapacity: true)
    scratch.append(contentsOf: UnsafeBufferPointer(start: p + start, count: firstEscape - start))
    var j = firstEscape
    while j < n {
      let c = p[j]
      if c == Byte.quote {
        i = j + 1
        return String(decoding: scratch, as: UTF8.self)
      }
      if c < 0x20 { throw controlCharacter(at: j) }
      if c != Byte.backslash {
        scratch.append(c)
        j += 1
        continue
      }
      guard j + 1 < n else { break }
      let e = p[j + 1]
      switch e {
      case Byte.quote, Byte.backslash, UInt8(ascii: "/"): scratch.append(e)
      case UInt8(ascii: "b"): scratch.append(0x08)
      case UInt8(ascii: "f"): scratch.append(0x0C)
      case UInt8(ascii: "n"): scratch.append(0x0A)
      case UInt8(ascii: "r"): scratch.append(0x0D)
      case UInt8(ascii: "t"): scratch.append(0x09)
      case UInt8(ascii: "u"):
        var scalar = try hex4(at: j + 2, escape: j)
        var length = 6
        if scalar >= 0xD800 && scalar <= 0xDBFF {
          guard n - j >= 12 && p[j + 6] == Byte.backslash && p[j + 7] == UInt8(ascii: "u") else {
            throw JSONGrammar.syntax(j, "lone surrogate escape at byte \(j)")
          }
          let low = try hex4(at: j + 8, escape: j + 6)
          guard low >= 0xDC00 && low <= 0xDFFF else {
            throw JSONGrammar.syntax(j, "lone surrogate escape at byte \(j)")
          }
          scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
          length = 12
        } else if scalar >= 0xDC00 && scalar <= 0xDFFF {
          throw JSONGrammar.syntax(j, "lone surrogate escape at byte \(j)")
        }
        appendUTF8(scalar)
        j += length
        continue
      default:
        throw JSONGrammar.syntax(j, "invalid escape sequence at byte \(j)")
      }
      j += 2
    }
    throw JSONGrammar.syntax(i, "unterminated string starting at byte \(i)")
  }

  /// Four hex digits at `k` (the `XXXX` of `\uXXXX` that starts at `escape`).
  func hex4(at k: Int, escape: Int) throws(JSONParseError) -> UInt32 {
    guard n - k >= 4 else {
      throw JSONGrammar.syntax(escape, "incomplete \\u escape at byte \(escape)")
    }
    var v: UInt32 = 0
    for m in k..<(k + 4) {
      let c = p[m]
      let d: UInt8
      switch c {
      case UInt8(ascii: "0")...UInt8(ascii: "9"): d = c &- UInt8(ascii: "0")
      case UInt8(ascii: "a")...UInt8(ascii: "f"): d = c &- UInt8(ascii: "a") &+ 10
      case UInt8(ascii: "A")...UInt8(ascii: "F"): d = c &- UInt8(ascii: "A") &+ 10
      default: throw JSONGrammar.syntax(escape, "invalid \\u escape at byte \(escape)")
      }
      v = v << 4 | UInt32(d)
    }
    return v
  }

  mutating func appendUTF8(_ s: UInt32) {
    switch s {
    case 0..<0x80:
      scratch.append(UInt8(truncatingIfNeeded: s))
    case 0x80..<0x800:
      scratch.append(UInt8(truncatingIfNeeded: 0xC0 | s >> 6))
      scratch.append(UInt8(truncatingIfNeeded: 0x80 | s & 0x3F))
    case 0x800..<0x10000:
      scratch.append(UInt8(truncatingIfNeeded: 0xE0 | s >> 12))
      scratch.append(UInt8(truncatingIfNeeded: 0x80 | s >> 6 & 0x3F))
      scratch.append(UInt8(truncatingIfNeeded: 0x80 | s & 0x3F))
    default:
      scratch.append(UInt8(truncatingIfNeeded: 0xF0 | s >> 18))
      scratch.append(UInt8(truncatingIfNeeded: 0x80 | s >> 12 & 0x3F))
      scratch.append(UInt8(truncatingIfNeeded: 0x80 | s >> 6 & 0x3F))
      scratch.append(UInt8(truncatingIfNeeded: 0x80 | s & 0x3F))
    }
  }
}
