// JSONWriter: appends compact JSON to a byte buffer, one message per line.

/// Appends JSON text to a byte buffer. Never emits a raw newline (so one message = one line),
/// except through `raw`, whose bytes are the caller's.
///
/// Its buffer is its own, not an Array: `Array.append(contentsOf:)` took
/// ~90 instructions a piece besides the bytes (its generic path: the
/// uniqueness check, the sequence's count, the copy's bounds), and a
/// Switch object is written in 8 pieces, a `get`'s whole answer in ~12
/// (callgrind, issue 26). Noncopyable, so the buffer has one owner and an
/// append checks nothing but room.
public struct JSONWriter: ~Copyable {
  @usableFromInline var base: UnsafeMutablePointer<UInt8>
  @usableFromInline var capacity: Int
  @usableFromInline var used = 0
  /// The date of the last timestamp written (`Timestamp`): a writer kept
  /// for many answers writes the same day's date again and again.
  var lastDate = Timestamp.DateText()
  /// How many bytes are written.
  public var count: Int { used }

  public init(capacity: Int = 256) {
    self.capacity = max(capacity, 64)
    base = .allocate(capacity: self.capacity)
  }

  deinit { base.deallocate() }

  /// The bytes written, as an array of their own.
  public var bytes: [UInt8] { Array(UnsafeBufferPointer(start: base, count: count)) }

  /// The bytes written, for the duration of `body`.
  public func withBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
    try body(UnsafeRawBufferPointer(start: base, count: count))
  }

  /// Appends the bytes written to `out`, one copy.
  public func copy(to out: inout [UInt8]) {
    out.append(contentsOf: UnsafeBufferPointer(start: base, count: count))
  }

  /// Forgets what was written; the buffer stays for the next.
  public mutating func removeAll() { used = 0 }

  /// Forgets what was written, and gives its buffer back when it grew past
  /// `limit` bytes: a writer kept from message to message does not hold
  /// one large message's memory for good.
  public mutating func removeAll(keepingAtMost limit: Int) {
    used = 0
    guard capacity > limit else { return }
    base.deallocate()
    capacity = 64
    base = .allocate(capacity: capacity)
  }

  /// Forgets the last byte written (a closing brace a member goes before).
  public mutating func removeLast() {
    precondition(used > 0, "removeLast of an empty JSONWriter")
    used -= 1
  }

  @inlinable @inline(__always)
  public mutating func append(_ byte: UInt8) {
    if used == capacity { grow(toAtLeast: used + 1) }
    base[used] = byte
    used += 1
  }

  @inlinable @inline(__always)
  public mutating func append(_ bytes: UnsafeRawBufferPointer) {
    guard let source = bytes.baseAddress, !bytes.isEmpty else { return }
    if capacity - used < bytes.count { grow(toAtLeast: used + bytes.count) }
    UnsafeMutableRawPointer(base + used).copyMemory(from: source, byteCount: bytes.count)
    used += bytes.count
  }

  @inlinable
  public mutating func append(contentsOf bytes: [UInt8]) {
    bytes.withUnsafeBytes { append($0) }
  }

  /// Appends `text`'s UTF-8 verbatim (no quotes, no escapes).
  public mutating func append(utf8 text: String) {
    var text = text
    text.withUTF8 { append(UnsafeRawBufferPointer($0)) }
  }

  @usableFromInline @inline(never)
  mutating func grow(toAtLeast needed: Int) {
    // A power of two: a writer kept up to `removeAll(keepingAtMost:)`'s
    // limit (one) keeps a buffer that a large answer filled to just under
    // it, rather than growing past it by a last byte and being given back
    // (a fresh ~1 MiB buffer each time: page faults and munmaps on the loop).
    let powerOfTwo =
      needed > 1 << 62 ? needed : 1 << (Int.bitWidth - (needed - 1).leadingZeroBitCount)
    let grown = max(powerOfTwo, capacity * 2)
    let larger = UnsafeMutablePointer<UInt8>.allocate(capacity: grown)
    larger.initialize(from: base, count: used)
    base.deallocate()
    base = larger
    capacity = grown
  }

  /// Appends verbatim ASCII, e.g. `"{\"jsonrpc\":\"2.0\","`.
  public mutating func raw(_ s: StaticString) {
    // One byte (a closing brace, a comma) is one append: the sequence path
    // cost ~110 instructions for it (callgrind). The count is known where
    // this is inlined, so the branch folds away.
    if s.utf8CodeUnitCount == 1 && s.hasPointerRepresentation {
      append(s.utf8Start.pointee)
      return
    }
    s.withUTF8Buffer { append(UnsafeRawBufferPointer($0)) }
  }

  /// Appends verbatim bytes.
  public mutating func raw(_ bytes: [UInt8]) {
    append(contentsOf: bytes)
  }

  /// Appends all of `bytes` but the last `count`.
  public mutating func raw(_ bytes: [UInt8], droppingLast count: Int) {
    bytes.withUnsafeBytes { append(UnsafeRawBufferPointer(rebasing: $0.dropLast(count))) }
  }

  /// Appends `s` quoted and escaped.
  public mutating func string(_ s: String) {
    append(UInt8(ascii: "\""))
    escaped(s)
    append(UInt8(ascii: "\""))
  }

  /// Appends `s` escaped, without its quotes (a caller's fixed bytes hold them).
  @inline(__always)
  public mutating func escaped(_ s: String) {
    // Most of a schema's icons, groups and descriptions are empty: no call.
    if !s.isEmpty { appendEscaped(s) }
  }

  /// `escaped` of a string that is not empty.
  @inline(never)
  private mutating func appendEscaped(_ s: String) {
    // Read in place: `withUTF8` wants a copy it may change (a retain and a
    // release of a string on the heap); a native string's bytes are there.
    let done: Void? = s.utf8.withContiguousStorageIfAvailable { appendEscaped($0) }
    if done == nil {
      var copy = s
      copy.withUTF8 { appendEscaped($0) }
    }
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
      append(UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: text[start...])))
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
      append(UInt8(ascii: "["))
      for (k, element) in elements.enumerated() {
        if k > 0 { append(UInt8(ascii: ",")) }
        value(element)
      }
      append(UInt8(ascii: "]"))
    case .object(let members):
      append(UInt8(ascii: "{"))
      for (k, member) in members.enumerated() {
        if k > 0 { append(UInt8(ascii: ",")) }
        string(member.name)
        append(UInt8(ascii: ":"))
        value(member.value)
      }
      append(UInt8(ascii: "}"))
    }
  }

  /// Escapes `"`, `\`, control characters, U+2028 and U+2029; copies everything else.
  private mutating func appendEscaped(_ s: UnsafeBufferPointer<UInt8>) {
    guard let base = s.baseAddress else { return }
    var runStart = 0
    var k = 0
    let n = s.count
    // Eight bytes at a time while none needs a look: byte by byte cost ~12
    // instructions a byte of a Switch object's label (callgrind). Bytes
    // before `lookedAt` are taken one by one (a word that needs a look, or
    // the last few).
    var lookedAt = 0
    while k < n {
      if k >= lookedAt {
        if n - k >= 8 {
          if !Self.anyNeedsALook(base + k) {
            k += 8
            continue
          }
          lookedAt = k + 8
        } else {
          lookedAt = n
        }
      }
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
        append(UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: s[runStart..<k])))
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
        append(digits.utf8Start[Int(c >> 4)])
        append(digits.utf8Start[Int(c & 0x0F)])
      }
      k += length
      runStart = k
    }
    if n > runStart {
      append(UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: s[runStart..<n])))
    }
  }

  /// Whether any of the eight bytes at `p` is one `appendEscaped` looks at:
  /// below 0x20, `"`, `\` or 0xE2 (the first byte of U+2028 and U+2029).
  @inline(__always)
  private static func anyNeedsALook(_ p: UnsafePointer<UInt8>) -> Bool {
    let word = UnsafeRawPointer(p).loadUnaligned(as: UInt64.self)
    let ones: UInt64 = 0x0101_0101_0101_0101
    let highs = ones &* 0x80
    // A byte below 0x20 sets its high bit in (word - 0x20 each) & ~word; a
    // byte equal to b is a zero byte of word ^ b, found the same way below 1.
    func anyBelow(_ x: UInt64, _ n: UInt64) -> Bool { (x &- ones &* n) & ~x & highs != 0 }
    return anyBelow(word, 0x20) || anyBelow(word ^ (ones &* 0x22), 1)
      || anyBelow(word ^ (ones &* 0x5C), 1) || anyBelow(word ^ (ones &* 0xE2), 1)
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
