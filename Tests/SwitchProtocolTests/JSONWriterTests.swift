import Testing

@testable import SwitchProtocol

private func written(_ body: (inout JSONWriter) -> Void) -> String {
  var writer = JSONWriter()
  body(&writer)
  return String(decoding: writer.bytes, as: UTF8.self)
}

/// (string, its JSON encoding).
private let escapes: [(String, String)] = [
  ("", "\"\""),
  ("plain", "\"plain\""),
  ("say \"hi\"", "\"say \\\"hi\\\"\""),
  ("back\\slash", "\"back\\\\slash\""),
  ("a/b", "\"a/b\""),
  ("line1\nline2", "\"line1\\nline2\""),
  ("\r\t\u{8}\u{c}", "\"\\r\\t\\b\\f\""),
  ("\u{0}", "\"\\u0000\""),
  ("\u{1}\u{1f}", "\"\\u0001\\u001f\""),
  ("\u{b}", "\"\\u000b\""),
  ("\u{7f}", "\"\u{7f}\""),
  ("caf\u{e9}", "\"caf\u{e9}\""),
  ("\u{20ac}\u{1F600}", "\"\u{20ac}\u{1F600}\""),
  ("a\u{2028}b\u{2029}c", "\"a\\u2028b\\u2029c\""),
  ("\u{2027}\u{202A}\u{2020}", "\"\u{2027}\u{202A}\u{2020}\""),  // neighbours stay verbatim
  ("\u{2028}", "\"\\u2028\""),
  ("end\"", "\"end\\\"\""),
  ("\"\\\n", "\"\\\"\\\\\\n\""),
]

@Test(arguments: escapes)
func stringsAreEscaped(input: String, expected: String) throws {
  let text = written { $0.string(input) }
  #expect(text == expected)
  // Never a raw control character, so one message stays one line.
  #expect(!text.utf8.contains { $0 < 0x20 })
  // And our parser reads back the original.
  #expect(try JSONParser.parse(text, maxDepth: 1) == .string(input))
}

/// (characters the writer looks at, how they are written).
private let looks: [(String, String)] = [
  ("\"", "\\\""), ("\\", "\\\\"), ("\n", "\\n"), ("\t", "\\t"), ("\u{0}", "\\u0000"),
  ("\u{1f}", "\\u001f"), ("\u{2028}", "\\u2028"), ("\u{2029}", "\\u2029"),
  ("\u{2020}", "\u{2020}"), ("\u{7f}", "\u{7f}"), (" ", " "),
  // Two in one word, and one right after the three bytes of U+2028.
  ("\"\\", "\\\"\\\\"), ("\u{2028}\"", "\\u2028\\\""), ("\u{2029}\u{1}", "\\u2029\\u0001"),
]

/// What the writer looks at, at every place in strings of 1 to
/// 24 bytes (it looks at eight at a time): written as it must be where it
/// is, the rest verbatim.
@Test(arguments: looks)
func anEscapeIsFoundWhereverItIs(special: String, written inner: String) throws {
  for length in 1...24 {
    for place in 0..<length {
      let before = String(repeating: "a", count: place)
      let after =
        String(repeating: "\u{e9}", count: (length - place - 1) / 2)
        + String(repeating: "b", count: (length - place - 1) % 2)
      let text = written { $0.string(before + special + after) }
      #expect(text == "\"" + before + inner + after + "\"", "length \(length), place \(place)")
    }
  }
}

@Test func everyControlCharacterIsEscaped() throws {
  let all = String(decoding: (0..<0x20).map { UInt8($0) }, as: UTF8.self)
  let text = written { $0.string(all) }
  #expect(!text.utf8.contains { $0 < 0x20 })
  #expect(try JSONParser.parse(text, maxDepth: 1).stringValue == all)
}

@Test(arguments: [
  (Int64(0), "0"),
  (7, "7"),
  (-7, "-7"),
  (10, "10"),
  (1_234_567_890, "1234567890"),
  (-100, "-100"),
  (Int64.max, "9223372036854775807"),
  (Int64.min, "-9223372036854775808"),
])
func integersAreDecimal(value: Int64, expected: String) {
  #expect(written { $0.int(value) } == expected)
  #expect(JSONNumber(value).text == expected)
}

@Test func scalarsAndRawPieces() {
  let text = written { w in
    w.raw("{\"jsonrpc\":\"2.0\",\"id\":")
    w.int(3)
    w.raw(Array(",\"a\":".utf8))
    w.bool(true)
    w.raw(",\"b\":")
    w.bool(false)
    w.raw(",\"c\":")
    w.null()
    w.raw(",\"d\":")
    w.stringOrNull(nil)
    w.raw(",\"e\":")
    w.stringOrNull("x\ny")
    w.raw("}")
  }
  #expect(
    text
      == "{\"jsonrpc\":\"2.0\",\"id\":3,\"a\":true,\"b\":false,\"c\":null,\"d\":null,\"e\":\"x\\ny\"}"
  )
}

@Test func writerAppendsToExistingBytes() {
  var writer = JSONWriter(capacity: 4)
  writer.int(12)
  writer.raw(",")
  writer.int(-3)
  #expect(writer.bytes == Array("12,-3".utf8))
}

@Test func valueIsCompactAndOrdered() {
  let value = JSONValue.object([
    JSONMember("z", .array([.int(1), .null, .bool(false), .string("\u{2028}")])),
    JSONMember("a", .object([])),
    JSONMember("a", .array([])),
    JSONMember("n\"", .number(JSONNumber(text: "-1.50E+07")!)),
  ])
  let expected = "{\"z\":[1,null,false,\"\\u2028\"],\"a\":{},\"a\":[],\"n\\\"\":-1.50E+07}"
  #expect(value.jsonText == expected)
  #expect(value.jsonBytes == Array(expected.utf8))
  var writer = JSONWriter()
  writer.value(value)
  #expect(writer.bytes == Array(expected.utf8))
}

@Test func valueNeverWritesARawNewline() throws {
  let value = JSONValue.array([
    .string("a\nb"), .object([JSONMember("k\r\n", .string("\u{2029}\t"))]),
  ])
  let bytes = value.jsonBytes
  #expect(!bytes.contains(0x0A))
  #expect(!bytes.contains(0x0D))
  #expect(try JSONParser.parse(bytes, maxDepth: 4) == value)
}

/// The writer's own buffer (issue 26): grown as pieces of every size come,
/// a byte, a piece and an array at a time, from the smallest capacity; the
/// bytes read back whole, copied out after what `out` held, and emptied for
/// the next message with the buffer kept.
@Test func theBufferGrowsKeepsEveryByteAndIsReusedEmpty() {
  var w = JSONWriter(capacity: 1)
  var expected: [UInt8] = []
  for n in 0..<300 {
    let piece = [UInt8](repeating: UInt8(ascii: "a") + UInt8(n % 26), count: n % 97)
    w.raw(piece)
    expected += piece
    w.append(UInt8(ascii: ","))
    expected.append(UInt8(ascii: ","))
    w.int(Int64(n) - 150)
    expected += Array(String(n - 150).utf8)
  }
  #expect(w.count == expected.count)
  #expect(w.bytes == expected)
  w.removeLast()
  expected.removeLast()
  var out: [UInt8] = Array("queued ".utf8)
  w.copy(to: &out)
  #expect(out == Array("queued ".utf8) + expected)
  w.removeAll()
  #expect(w.count == 0 && w.bytes.isEmpty)
  w.raw("{\"again\":true}")
  #expect(String(decoding: w.bytes, as: UTF8.self) == "{\"again\":true}")
  // Past the limit its buffer is given back, and it goes on from a small one.
  w.removeAll(keepingAtMost: 16)
  #expect(w.count == 0)
  w.raw(Array(expected.prefix(1000)))
  #expect(w.bytes == Array(expected.prefix(1000)))
}
