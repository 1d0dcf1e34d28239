// JSONWriter: appends compact JSON to a byte buffer, one message per line.

/// Appends JSON text to a byte buffer. Never emits a raw newline (so one message = one line),
/// except through `raw`, whose bytes are the caller's.
public struct JSONWriter {
  public var bytes: [UInt8]

  public init(capacity: Int = 256) {
    bytes = []
    // Zero is the writer that borrows a buffer by `swap`: nothing to reserve.
    if capacity > 0 { bytes.reserveCapacity(capacity) }
  }

  /// Appends verbatim ASCII, e.g. `"{\"jsonrpc\":\"2.0\","`.
  public mutating func raw(_ s: StaticString) {
    // One byte (a closing brace, a comma) is one append: the sequence path
    // cost ~110 instructions for it (callgrind). The count is known where
    // this is inlined, so the branch folds away.
    if s.utf8CodeUnitCount == 1 && s.hasPointerRepresentation {
      bytes.append(s.utf8Start.pointee)
      return
    }
    s.withUTF8Buffer { bytes.append(contentsOf: $0) }
  }

  /// Appends verbatim bytes.
  public mutating func raw(_ bytes: [UInt8]) {
    self.bytes.append(contentsOf: bytes)
  }

  /// Appends `s` quoted and escaped.
  public mutating func string(_ s: String) {
    bytes.append(UInt8(ascii: "\""))
    var copy = s
    copy.withUTF8 { appendEscaped($0) }
    bytes.append(UInt8(ascii: "\""))
  }

  /// Appends a JSON array of strings.
  public mutating func strings(_ items: [String]) {
    raw("[")
    for (i, item) in items.enumerated() {
      if i > 0 { raw(",") }
      string(item)
    }
    raw("]")
  }

  /// Appends `s` quoted and escaped, or `null`.
  public mutating func stringOrNull(_ s: String?) {
    if let s {
      string(s)
    } else {
      null()
    }
  }

  /// Appends `v` in decimal: digits fill a stack buffer from its end, then one append.
  public mutating func int(_ v: Int64) {
    var magnitude = v.magnitude
    withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20) { text in
      var start = 20
      repeat {
        start -= 1
        text[start] = UInt8(truncatingIfNeeded: magnitude % 10) &+ UInt8(ascii: "0")
        magnitude /= 10
      } while magnitude != 0
      if v < 0 {
        start -= 1
        text[start] = UInt8(ascii: "-")
      }
      bytes.append(contentsOf: UnsafeBufferPointer(rebasing: text[start...]))
    }
  }

  public mutating func bool(_ v: Bool) {
    if v {
      raw("true")
    } else {
      raw("false")
    }
  }

  public mutating func null() {
    raw("null")
  }

  /// Appends `v` as compact JSON: no spaces, object members in order, number text verbatim.
  public mutating func value(_ v: JSONValue) {
    switch v {
    case .null:
      null()
    case .bool(let b):
      bool(b)
    case .number(let n):
      n.write(to: &self)
    case .string(let s):
      string(s)
    case .array(let elements):
      bytes.append(UInt8(ascii: "["))
      for (k, element) in elements.enumerated() {
        if k > 0 { bytes.append(UInt8(ascii: ",")) }
        value(element)
      }
      bytes.append(UInt8(ascii: "]"))
    case .object(let members):
      bytes.append(UInt8(ascii: "{"))
      for (k, member) in members.enumerated() {
        if k > 0 { bytes.append(UInt8(ascii: ",")) }
        string(member.name)
        bytes.append(UInt8(ascii: ":"))
        value(member.value)
      }
      bytes.append(UInt8(ascii: "}"))
    }
  }

  /// Escapes `"`, `\`, control characters, U+2028 and U+2029; copies everything else.
  private mutating func appendEscaped(_ s: UnsafeBufferPointer<UInt8>) {
    var runStart = 0
    var k = 0
    let n = s.count
    while k < n {
      let c = s[k]
      if c >= 0x20 && c != UInt8(ascii: "\"") && c != UInt8(ascii: "\\") && c != 0xE2 {
        k += 1
        continue
      }
      var length = 1
      if c == 0xE2 {
        // U+2028 is E2 80 A8 and U+2029 is E2 80 A9.
        guard n - k >= 3 && s[k + 1] == 0x80 && (s[k + 2] == 0xA8 || s[k + 2] == 0xA9) else {
          k += 1
          continue
        }
        length = 3
      }
      if k > runStart {
        bytes.append(contentsOf: UnsafeBufferPointer(rebasing: s[runStart..<k]))
      }
      switch c {
      case UInt8(ascii: "\""): raw("\\\"")
      case UInt8(ascii: "\\"): raw("\\\\")
      case 0x08: raw("\\b")
      case 0x09: raw("\\t")
      case 0x0A: raw("\\n")
      case 0x0C: raw("\\f")
      case 0x0D: raw("\\r")
      case 0xE2:
        if s[k + 2] == 0xA8 {
          raw("\\u2028")
        } else {
          raw("\\u2029")
        }
      default:
        raw("\\u00")
        let digits: StaticString = "0123456789abcdef"
        bytes.append(digits.utf8Start[Int(c >> 4)])
        bytes.append(digits.utf8Start[Int(c & 0x0F)])
      }
      k += length
      runStart = k
    }
    if n > runStart {
      bytes.append(contentsOf: UnsafeBufferPointer(rebasing: s[runStart..<n]))
    }
  }
}

extension JSONValue {
  /// Compact JSON bytes.
  public var jsonBytes: [UInt8] {
    var writer = JSONWriter()
    writer.value(self)
    return writer.bytes
  }

  /// Compact JSON text.
  public var jsonText: String {
    String(decoding: jsonBytes, as: UTF8.self)
  }
}
