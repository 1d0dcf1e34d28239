import Testing

@testable import SwitchProtocol

// MARK: - Helpers

private func parse(_ text: String, maxDepth: Int = 64) throws(JSONParseError) -> JSONValue {
  try JSONParser.parse(text, maxDepth: maxDepth)
}

/// The error for `bytes`, or nil when they parse.
private func parseError(_ bytes: [UInt8], maxDepth: Int = 64) -> JSONParseError? {
  do {
    _ = try JSONParser.parse(bytes, maxDepth: maxDepth)
    return nil
  } catch {
    return error
  }
}

private func parseError(_ text: String, maxDepth: Int = 64) -> JSONParseError? {
  parseError(Array(text.utf8), maxDepth: maxDepth)
}

// MARK: - Valid documents

/// (input, canonical compact form).
private let roundTrips: [(String, String)] = [
  ("null", "null"),
  ("true", "true"),
  ("false", "false"),
  ("0", "0"),
  ("-0", "-0"),
  ("-12", "-12"),
  ("1.5e3", "1.5e3"),
  ("1E+2", "1E+2"),
  ("0.000001e-7", "0.000001e-7"),
  ("\"\"", "\"\""),
  ("\"wifi\"", "\"wifi\""),
  ("  \t\r\n 42 \n", "42"),
  ("[]", "[]"),
  ("{}", "{}"),
  ("[ ]", "[]"),
  ("{ }", "{}"),
  ("[1, 2 ,3]", "[1,2,3]"),
  ("[[],[[]],{}]", "[[],[[]],{}]"),
  ("{\"a\" : 1 , \"b\":[true,false,null]}", "{\"a\":1,\"b\":[true,false,null]}"),
  ("{\"b\":1,\"a\":2}", "{\"b\":1,\"a\":2}"),
  ("{\"a\":1,\"a\":2}", "{\"a\":1,\"a\":2}"),
  (
    "{\"jsonrpc\": \"2.0\", \"id\": 7, \"method\": \"set\", \"params\": {\"key\": \"wifi\", \"checked\": true}}",
    "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"set\",\"params\":{\"key\":\"wifi\",\"checked\":true}}"
  ),
  ("\"a\\\"b\\\\c\\/d\"", "\"a\\\"b\\\\c/d\""),
  ("\"\\b\\f\\n\\r\\t\"", "\"\\b\\f\\n\\r\\t\""),
  ("\"\\u0041\\u00e9\\u20AC\"", "\"A\u{e9}\u{20ac}\""),
  ("\"\\u0000\"", "\"\\u0000\""),
  ("\"\\ud83d\\ude00\"", "\"\u{1F600}\""),
  ("\"caf\u{e9} \u{1F600} \u{10FFFF}\"", "\"caf\u{e9} \u{1F600} \u{10FFFF}\""),
  ("\"\\u2028\"", "\"\\u2028\""),
  ("[\"x\\ny\", {\"k\\u0020\": -1.25E-3}]", "[\"x\\ny\",{\"k \":-1.25E-3}]"),
]

@Test(arguments: roundTrips)
func validDocumentsRoundTrip(input: String, canonical: String) throws {
  let value = try parse(input)
  #expect(value.jsonText == canonical)
  // The canonical form parses to the same value.
  #expect(try parse(canonical) == value)
}

@Test func allThreeEntryPointsAgree() throws {
  let text = "{\"id\":1,\"params\":[\"\u{e9}\",null]}"
  let bytes = Array(text.utf8)
  let fromString = try JSONParser.parse(text, maxDepth: 8)
  let fromArray = try JSONParser.parse(bytes, maxDepth: 8)
  let fromPointer = try bytes.withUnsafeBufferPointer { buf in
    try JSONParser.parse(buf, maxDepth: 8)
  }
  #expect(fromString == fromArray)
  #expect(fromArray == fromPointer)
  #expect(
    fromString
      == .object([
        JSONMember("id", .int(1)),
        JSONMember("params", .array([.string("\u{e9}"), .null])),
      ]))
}

@Test func structureIsBuiltInSourceOrder() throws {
  let value = try parse("{\"z\":[1,[2,{\"y\":3}]],\"x\":\"s\",\"z\":false}")
  let members = try #require(value.objectMembers)
  #expect(members.map(\.name) == ["z", "x", "z"])
  #expect(value["z"] == .array([.int(1), .array([.int(2), .object([JSONMember("y", .int(3))])])]))
  #expect(value["x"]?.stringValue == "s")
  #expect(value["missing"] == nil)
}

// MARK: - Rejections

/// (input, expected kind, expected offset).
private let syntaxErrors: [(String, Int)] = [
  ("", 0),
  ("   \n\t", 5),
  ("[1,]", 2),
  ("[1 , ]", 3),
  ("{\"a\":1,}", 6),
  ("{\"a\":1 ,\n}", 7),
  ("[,1]", 1),
  ("{,}", 1),
  ("// c\n1", 0),
  ("/* c */ 1", 0),
  ("[1] // c", 4),
  ("'a'", 0),
  ("{'a':1}", 1),
  ("01", 0),
  ("-01", 0),
  ("[00]", 1),
  ("+1", 0),
  (".5", 0),
  ("1.", 2),
  ("1.e3", 2),
  ("1e", 2),
  ("1e+", 3),
  ("-", 1),
  ("- 1", 1),
  ("NaN", 0),
  ("Infinity", 0),
  ("-Infinity", 1),
  ("0x10", 1),
  ("tru", 0),
  ("True", 0),
  ("nul", 0),
  ("nulll", 4),
  ("1 2", 2),
  ("{} {}", 3),
  ("[1]x", 3),
  ("\"a\"\"b\"", 3),
  ("[1 2]", 3),
  ("{\"a\" 1}", 5),
  ("{\"a\":1 \"b\":2}", 7),
  ("{a:1}", 1),
  ("{1:1}", 1),
  ("{\"a\"}", 4),
  ("{\"a\":}", 5),
  ("[", 1),
  ("[1", 2),
  ("{", 1),
  ("{\"a\"", 4),
  ("{\"a\":", 5),
  ("{\"a\":1", 6),
  ("]", 0),
  ("}", 0),
  ("\"abc", 0),
  ("\"abc\\", 0),
  ("\"a\nb\"", 2),
  ("\"a\tb\"", 2),
  ("\"\u{1F}\"", 1),
  ("\"\\x41\"", 1),
  ("\"\\u12\"", 1),
  ("\"\\u12G4\"", 1),
  ("\"\\U0041\"", 1),
  ("\"\\'\"", 1),
  ("\"\\ud83d\"", 1),
  ("\"\\ud83dx\"", 1),
  ("\"\\ud83d\\u0041\"", 1),
  ("\"\\ud83d\\ud83d\"", 1),
  ("\"\\ude00\"", 1),
  ("\"\\ude00\\ud83d\"", 1),
  ("\u{a0}1", 0),
  ("\u{c}1", 0),
  ("\u{b}1", 0),
]

@Test(arguments: syntaxErrors)
func grammarErrorsAreSyntax(input: String, offset: Int) {
  let error = parseError(input)
  #expect(error?.kind == .syntax)
  #expect(error?.offset == offset, "\(error?.message ?? "parsed")")
  #expect(error?.message.isEmpty == false)
}

@Test func emptyMessageIsNamed() {
  #expect(parseError("")?.message == "empty message")
  #expect(parseError(" \r\n")?.message == "empty message")
  #expect(parseError([])?.message == "empty message")
}

@Test func messagesNameTheProblemAndTheByte() {
  #expect(parseError("[1, x]")?.message == "unexpected character 'x' at byte 4")
  #expect(parseError("[1,]")?.message == "trailing comma at byte 2")
  #expect(parseError("01")?.message == "leading zeros are not allowed at byte 0")
  #expect(parseError("[1")?.message == "unexpected end of input at byte 2")
}

@Test func byteOrderMarkIsRejected() {
  let error = parseError([0xEF, 0xBB, 0xBF] + Array("{}".utf8))
  #expect(error?.kind == .syntax)
  #expect(error?.offset == 0)
  #expect(error?.message == "a byte order mark is not allowed")
}

@Test(arguments: [
  ([0x00] as [UInt8], 0),
  (Array("[1,\u{0}2]".utf8), 3),
  (Array("\"a\u{0}\"".utf8), 2),
  (Array("1\u{0}".utf8), 1),
  (Array("{\"a\":1}\u{0}".utf8), 7),
])
func rawNULIsRejectedAnywhere(bytes: [UInt8], offset: Int) {
  let error = parseError(bytes)
  #expect(error?.kind == .syntax)
  #expect(error?.offset == offset)
  #expect(error?.message.contains("NUL") == true)
}

/// Malformed UTF-8, and the offset of the first bad sequence.
private let badUTF8: [([UInt8], Int)] = [
  ([0x22, 0x80, 0x22], 1),  // lone continuation byte
  ([0x22, 0xBF, 0x22], 1),
  ([0x22, 0xC0, 0x80, 0x22], 1),  // overlong NUL
  ([0x22, 0xC1, 0xBF, 0x22], 1),  // overlong
  ([0x22, 0xE0, 0x80, 0x80, 0x22], 1),  // overlong 3-byte
  ([0x22, 0xE0, 0x9F, 0xBF, 0x22], 1),  // overlong 3-byte (U+07FF)
  ([0x22, 0xF0, 0x80, 0x80, 0x80, 0x22], 1),  // overlong 4-byte
  ([0x22, 0xF0, 0x8F, 0xBF, 0xBF, 0x22], 1),  // overlong 4-byte (U+FFFF)
  ([0x22, 0xED, 0xA0, 0x80, 0x22], 1),  // U+D800
  ([0x22, 0xED, 0xBF, 0xBF, 0x22], 1),  // U+DFFF
  ([0x22, 0xF4, 0x90, 0x80, 0x80, 0x22], 1),  // U+110000
  ([0x22, 0xF5, 0x80, 0x80, 0x80, 0x22], 1),
  ([0x22, 0xFF, 0x22], 1),
  ([0x22, 0xFE, 0x22], 1),
  ([0x22, 0xC3, 0x22], 1),  // truncated 2-byte
  ([0x22, 0xE2, 0x82, 0x22], 1),  // truncated 3-byte
  ([0x22, 0xF0, 0x9F, 0x98, 0x22], 1),  // truncated 4-byte
  ([0x22, 0xC3], 1),  // truncated at the end of input
  ([0x22, 0xF0, 0x9F, 0x98], 1),
  (Array("[\"abcdefgh\", \"ok\u{e9}\", ".utf8) + [0xC3, 0x28], 21),  // after the fast path
]

@Test(arguments: badUTF8)
func malformedUTF8IsInvalidUTF8(bytes: [UInt8], offset: Int) {
  let error = parseError(bytes)
  #expect(error?.kind == .invalidUTF8)
  #expect(error?.offset == offset, "\(error?.message ?? "parsed")")
}

@Test func wellFormedNonASCIIOutsideAStringIsSyntax() {
  let error = parseError([0x5B, 0xC3, 0xA9, 0x5D])  // [é]
  #expect(error?.kind == .syntax)
  #expect(error?.offset == 1)
}

@Test func utf8IsCheckedBeforeGrammar() {
  // A grammar error comes first in the text, but the bad byte decides the kind.
  let error = parseError(Array("[1,,\"".utf8) + [0xFF, 0x22, 0x5D])
  #expect(error?.kind == .invalidUTF8)
  #expect(error?.offset == 5)
}

@Test func validMultibyteScalarsAtEveryLengthAreKept() throws {
  let text = "\"\u{7F}\u{80}\u{7FF}\u{800}\u{D7FF}\u{E000}\u{FFFD}\u{FFFF}\u{10000}\u{10FFFF}\""
  let value = try parse(text)
  #expect(
    value.stringValue
      == "\u{7F}\u{80}\u{7FF}\u{800}\u{D7FF}\u{E000}\u{FFFD}\u{FFFF}\u{10000}\u{10FFFF}"
  )
}

// MARK: - Strings

@Test func surrogatePairEscapeDecodesToOneScalar() throws {
  let value = try parse("\"\\uD83D\\uDE00\"")
  let s = try #require(value.stringValue)
  #expect(s.unicodeScalars.count == 1)
  #expect(s.unicodeScalars.first?.value == 0x1F600)
  #expect(Array(s.utf8) == [0xF0, 0x9F, 0x98, 0x80])
}

@Test func escapesDecodeToTheirCharacters() throws {
  let value = try parse("\"pre \\\"\\\\\\/\\b\\f\\n\\r\\t\\u0001\\u00FF\\uFFFF post\"")
  #expect(value.stringValue == "pre \"\\/\u{8}\u{c}\n\r\t\u{1}\u{ff}\u{ffff} post")
}

@Test func stringsWithAndWithoutEscapesAreEqual() throws {
  #expect(try parse("\"key\"") == parse("\"\\u006bey\""))
  #expect(try parse("{\"a\\u0062\":1}")["ab"] == .int(1))
}

// MARK: - Depth

@Test(arguments: [1, 2, 5, 64, 512])
func depthLimitIsExact(maxDepth: Int) throws {
  let arrays = String(repeating: "[", count: maxDepth) + String(repeating: "]", count: maxDepth)
  #expect(throws: Never.self) { try parse(arrays, maxDepth: maxDepth) }
  let deeper = "[" + arrays + "]"
  #expect(parseError(deeper, maxDepth: maxDepth)?.kind == .tooDeep)

  let objects =
    String(repeating: "{\"a\":", count: maxDepth) + "1" + String(repeating: "}", count: maxDepth)
  #expect(throws: Never.self) { try parse(objects, maxDepth: maxDepth) }
  let deeperObjects = "[" + objects + "]"
  let error = parseError(deeperObjects, maxDepth: maxDepth)
  #expect(error?.kind == .tooDeep)
  #expect(error?.offset == 5 * (maxDepth - 1) + 1)
}

@Test func depthCountsNestingNotSiblings() throws {
  let siblings = "[" + Array(repeating: "[[]]", count: 1000).joined(separator: ",") + "]"
  #expect(throws: Never.self) { try parse(siblings, maxDepth: 3) }
  #expect(parseError(siblings, maxDepth: 2)?.kind == .tooDeep)
}

@Test func zeroDepthAllowsOnlyScalars() throws {
  #expect(try parse("\"s\"", maxDepth: 0) == .string("s"))
  #expect(parseError("[]", maxDepth: 0)?.kind == .tooDeep)
  #expect(parseError("{}", maxDepth: -1)?.kind == .tooDeep)
}

@Test func veryDeepNestingFailsWithoutCrashing() {
  let deep = [UInt8](repeating: UInt8(ascii: "["), count: 100_000)
  let error = parseError(deep, maxDepth: 512)
  #expect(error?.kind == .tooDeep)
  #expect(error?.offset == 512)
  let mixed = Array(String(repeating: "{\"k\":[", count: 50_000).utf8)
  #expect(parseError(mixed, maxDepth: 512)?.kind == .tooDeep)
}

@Test func largeDepthLimitStillNeverUsesTheCallStack() throws {
  // The parser is iterative, so a limit beyond 512 is safe too. (Not far beyond: releasing
  // a deep JSONValue is recursive, which is why callers keep maxDepth at 512 or less.)
  let n = 5_000
  let text = String(repeating: "[", count: n) + String(repeating: "]", count: n)
  var value = try parse(text, maxDepth: n)
  var depth = 0
  while case .array(let elements) = value, let first = elements.first {
    value = first
    depth += 1
  }
  #expect(depth == n - 1)
}

// MARK: - Numbers

@Test func hugeNumbersKeepTheirText() throws {
  let digits = "9" + String(repeating: "8", count: 398) + "7"
  #expect(digits.count == 400)
  for text in [digits, "-" + digits, digits + ".5e-" + digits, "0." + digits] {
    let value = try parse("[\(text)]")
    guard case .array(let elements) = value, case .number(let n)? = elements.first else {
      Issue.record("not a number array: \(value)")
      continue
    }
    #expect(n.text == text)
    #expect(n.int64 == nil)
    #expect(value.jsonText == "[\(text)]")
  }
}

@Test(
  arguments: [
    ("0", 0),
    ("-0", 0),
    ("7", 7),
    ("-12", -12),
    ("9223372036854775807", Int64.max),
    ("-9223372036854775808", Int64.min),
  ] as [(String, Int64)])
func int64ReadsExactIntegers(text: String, expected: Int64) throws {
  let value = try parse(text)
  #expect(value.int64Value == expected)
  #expect(JSONNumber(text: text)?.int64 == expected)
}

@Test(arguments: [
  "9223372036854775808",
  "-9223372036854775809",
  "18446744073709551616",
  "99999999999999999999999999999",
  "1.0",
  "1e2",
  "1E2",
  "0.5",
  "-0.0",
  "1e0",
])
func int64IsNilForNonIntegersAndOverflow(text: String) throws {
  let value = try parse(text)
  guard case .number(let n) = value else {
    Issue.record("not a number: \(value)")
    return
  }
  #expect(n.text == text)
  #expect(n.int64 == nil)
  #expect(value.int64Value == nil)
}

@Test(arguments: [
  "0", "-0", "1", "-1", "10", "1.5", "-0.25", "1e5", "1E5", "1e+5", "1e-5", "2.5E-10",
  "9223372036854775808", "123456789012345678901234567890.123456789e-123456789",
])
func numberTextValidationAccepts(text: String) {
  #expect(JSONNumber(text: text)?.text == text)
}

@Test(arguments: [
  "", "-", "+1", "01", "-01", ".5", "1.", "1.e5", "1e", "1e+", "e5", "0x1", "1 ", " 1", "1,",
  "NaN", "Infinity", "-Infinity", "1_000", "١", "1\u{0}", "--1", "1-", "1e5.5",
])
func numberTextValidationRejects(text: String) {
  #expect(JSONNumber(text: text) == nil)
}

@Test func integerInitializerMakesDecimalText() {
  #expect(JSONNumber(0).text == "0")
  #expect(JSONNumber(-42).text == "-42")
  #expect(JSONNumber(Int64.max).text == "9223372036854775807")
  #expect(JSONNumber(Int64.min).text == "-9223372036854775808")
  #expect(JSONNumber(Int64.min).int64 == Int64.min)
  #expect(JSONValue.int(5) == .number(JSONNumber(5)))
}

// MARK: - Accessors

@Test func boolValueIsOnlyForBooleans() throws {
  #expect(try parse("true").boolValue == true)
  #expect(try parse("false").boolValue == false)
  #expect(try parse("1").boolValue == nil)
  #expect(try parse("0").boolValue == nil)
  #expect(try parse("\"true\"").boolValue == nil)
  #expect(try parse("null").boolValue == nil)
}

@Test func accessorsMatchOnlyTheirCase() throws {
  let value = try parse("{\"s\":\"x\",\"n\":3,\"a\":[1],\"o\":{},\"z\":null,\"b\":true}")
  #expect(value["s"]?.stringValue == "x")
  #expect(value["n"]?.stringValue == nil)
  #expect(value["n"]?.int64Value == 3)
  #expect(value["s"]?.int64Value == nil)
  #expect(value["a"]?.arrayValue == [.int(1)])
  #expect(value["o"]?.arrayValue == nil)
  #expect(value["o"]?.objectMembers == [])
  #expect(value["a"]?.objectMembers == nil)
  #expect(value["z"]?.isNull == true)
  #expect(value["b"]?.isNull == false)
  #expect(value["a"]?["s"] == nil)  // subscript on a non-object
  #expect(value.isNull == false)
}

@Test func subscriptReturnsTheFirstDuplicate() throws {
  let value = try parse("{\"id\":1,\"id\":2}")
  #expect(value["id"] == .int(1))
  #expect(value.objectMembers?.count == 2)
}

// MARK: - Robustness

@Test func truncatedPrefixesOfAValidDocumentNeverTrap() throws {
  let text = "{\"a\":[1,-2.5e+3,\"\\ud83d\\ude00\\n\",true,false,null,{\"b\":{}}],\"c\":\"\u{e9}\"}"
  let bytes = Array(text.utf8)
  #expect(throws: Never.self) { try JSONParser.parse(bytes, maxDepth: 8) }
  for length in 0..<bytes.count {
    #expect(parseError(Array(bytes[0..<length])) != nil, "prefix \(length) parsed")
  }
}

@Test func pseudoRandomInputsNeverTrap() throws {
  // A deterministic xorshift generator over a JSON-ish alphabet plus arbitrary bytes.
  var state: UInt64 = 0x9E37_79B9_7F4A_7C15
  let alphabet =
    Array("{}[],:\"\\u0123456789abcdefE+-.truefalsenull \n\t".utf8) + [0xC3, 0xA9, 0xED, 0xFF]
  var parsed = 0
  for _ in 0..<20_000 {
    state ^= state << 13
    state ^= state >> 7
    state ^= state << 17
    let length = Int(state % 24)
    var bytes: [UInt8] = []
    for _ in 0..<length {
      state ^= state << 13
      state ^= state >> 7
      state ^= state << 17
      bytes.append(alphabet[Int(state % UInt64(alphabet.count))])
    }
    if let value = try? JSONParser.parse(bytes, maxDepth: 4) {
      parsed += 1
      // Whatever parses must serialize and parse back to the same value.
      #expect(try JSONParser.parse(value.jsonBytes, maxDepth: 4) == value)
    }
  }
  #expect(parsed > 0)
}
