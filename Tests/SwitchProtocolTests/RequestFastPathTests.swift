import SeededRandom
import Testing

@testable import SwitchProtocol

/// RequestFastPath against the general path (JSONParser, then the envelope):
/// on every line the fast path either declines or gives exactly what the
/// general path gives, and it does take the common shapes.
@Suite struct RequestFastPathTests {
  static let depth = 32

  static func fast(_ line: [UInt8], maxDepth: Int = depth) -> Request? {
    line.withUnsafeBufferPointer { RequestFastPath.request($0, maxDepth: maxDepth) }
  }

  static func general(_ line: [UInt8], maxDepth: Int = depth) -> Incoming {
    line.withUnsafeBufferPointer { RequestDecoder.decodeGeneral($0, maxDepth: maxDepth) }
  }

  static func decoded(_ line: [UInt8], maxDepth: Int = depth) -> Incoming {
    line.withUnsafeBufferPointer { RequestDecoder.decode($0, maxDepth: maxDepth) }
  }

  /// The request as bytes, so that strings are compared byte for byte
  /// (String's == is Unicode canonical equivalence).
  static func wire(_ r: Request) -> [UInt8] {
    var members = [JSONMember("method", .string(r.method))]
    if let id = r.id { members.append(JSONMember("id", id.jsonValue)) }
    if let params = r.params { members.append(JSONMember("params", params)) }
    return JSONValue.object(members).jsonBytes
  }

  /// nil when the fast path declines or agrees with the general path; else
  /// what differs.
  static func disagreement(_ line: [UInt8], maxDepth: Int = depth) -> String? {
    let general = general(line, maxDepth: maxDepth)
    if decoded(line, maxDepth: maxDepth) != general {
      return "decode differs from decodeGeneral"
    }
    guard let fast = fast(line, maxDepth: maxDepth) else { return nil }
    guard case .single(.success(let expected)) = general else {
      return "the fast path accepted a line the general path gives \(general)"
    }
    if fast != expected { return "fast \(fast) != general \(expected)" }
    if wire(fast) != wire(expected) { return "the bytes of a string or number differ" }
    return nil
  }

  static func show(_ line: [UInt8]) -> String {
    line.map { $0 >= 0x20 && $0 < 0x7F ? String(UnicodeScalar($0)) : "<\($0)>" }.joined()
  }

  // MARK: Accepted

  static let common =
    [
      #"{"jsonrpc":"2.0","id":17,"method":"get","params":{"key":"wifi"}}"#,
      #"{"jsonrpc":"2.0","id":"a-1","method":"toggle","params":{"key":"toggle.c3"}}"#,
      #"{"jsonrpc":"2.0","id":3,"method":"list"}"#,
      #"{"jsonrpc":"2.0","id":3,"method":"list","params":{}}"#,
      #"{"jsonrpc":"2.0","id":3,"method":"list","params":{"prefix":"x."}}"#,
      #"{"jsonrpc":"2.0","id":0,"method":"get","params":{"key":"wifi"}}"#,
      #"{"jsonrpc":"2.0","id":"","method":"get","params":{"key":"wifi"}}"#,
      #"{"jsonrpc":"2.0","method":"toggle","params":{"key":"wifi"}}"#,
      #"{"id":5,"jsonrpc":"2.0","method":"get","params":{"key":"wifi"}}"#,
      #"{"params":{"key":"wifi"},"method":"get","id":5,"jsonrpc":"2.0"}"#,
      #"{"method":"status","jsonrpc":"2.0"}"#,
      #"{"jsonrpc":"2.0","id":1,"method":"set","params":{"key":"wifi","checked":true,"ifRevision":4}}"#,
      #"{"jsonrpc":"2.0","id":1,"method":"set","params":{"key":"wifi","checked":false}}"#,
      #"{"jsonrpc":"2.0","id":1,"method":"history","params":{"key":"wifi","limit":0,"before":9}}"#,
      #"{"jsonrpc":"2.0","id":1,"method":"lock","params":{"key":"wifi","reason":"r ~ DEL\#u{7F}"}}"#,
      #"{"jsonrpc":"2.0","id":1,"method":"lock","params":{"key":"wifi","reason":"café ☕ 😀"}}"#,
      #"{"jsonrpc":"2.0","id":"é","method":"é","params":{"é":"é"}}"#,
      #"{"jsonrpc":"2.0","id":123456789012345678901234567890,"method":"get"}"#,
      #"{"jsonrpc":"2.0","id":1,"method":"nosuchmethod","params":{"x":1}}"#,
      // `1` stays a number (never true): Call.decode refuses it as a bool later.
      #"{"jsonrpc":"2.0","id":1,"method":"set","params":{"key":"k","checked":1}}"#,
      // A repeated params name: the parser keeps both, Call.decode refuses it.
      #"{"jsonrpc":"2.0","id":1,"method":"get","params":{"key":"a","key":"b"}}"#,
    ] + spacedTexts

  /// JSON's whitespace between tokens and around the object (Python's
  /// json.dumps writes `{"jsonrpc": "2.0", "id": 1, …}`).
  static let spacedTexts = [
    #" {"jsonrpc":"2.0","id":1,"method":"get"}"#,
    #"{"jsonrpc":"2.0","id":1,"method":"get"} "#,
    "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"get\"}\r",
    "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"get\"}\t",
    #"{ "jsonrpc":"2.0","id":1,"method":"get"}"#,
    #"{"jsonrpc" :"2.0","id":1,"method":"get"}"#,
    #"{"jsonrpc": "2.0","id":1,"method":"get"}"#,
    #"{"jsonrpc":"2.0", "id":1,"method":"get"}"#,
    #"{"jsonrpc":"2.0","id":1,"method":"get","params":{ "key":"wifi"}}"#,
    #"{"jsonrpc":"2.0","id":1,"method":"get","params":{"key":"wifi" }}"#,
    #"{"jsonrpc": "2.0", "id": 7, "method": "toggle", "params": {"key": "wifi"}}"#,
    #"{"jsonrpc": "2.0", "method": "set", "params": {"key": "wifi", "checked": true}, "id": "a"}"#,
    " {\t\"jsonrpc\" : \"2.0\" ,\r\"id\" : 0 , \"method\" : \"list\" , \"params\" : { } }\t\r",
  ]

  @Test(arguments: common)
  func takesTheCommonShapes(_ line: String) {
    let bytes = Array(line.utf8)
    #expect(Self.fast(bytes) != nil, "the fast path declined \(line)")
    #expect(Self.disagreement(bytes) == nil, "\(line): \(Self.disagreement(bytes) ?? "")")
  }

  @Test func givesTheExpectedRequest() {
    let get = #"{"jsonrpc":"2.0","id":17,"method":"get","params":{"key":"wifi"}}"#
    #expect(
      Self.fast(Array(get.utf8))
        == Request(
          id: .number(JSONNumber(17)), method: "get",
          params: .object([JSONMember("key", .string("wifi"))])))
    let set =
      #"{"id":"x","method":"set","params":{"key":"k","checked":true,"ifRevision":10},"jsonrpc":"2.0"}"#
    #expect(
      Self.fast(Array(set.utf8))
        == Request(
          id: .string("x"), method: "set",
          params: .object([
            JSONMember("key", .string("k")), JSONMember("checked", .bool(true)),
            JSONMember("ifRevision", .int(10)),
          ])))
    let notification = #"{"jsonrpc":"2.0","method":"list","params":{}}"#
    #expect(
      Self.fast(Array(notification.utf8))
        == Request(id: nil, method: "list", params: .object([])))
  }

  // MARK: Declined

  /// Lines the fast path must leave to the general path: valid requests it
  /// does not read, and every kind of invalid line.
  static let nearMisses = nearMissTexts.map { Array($0.utf8) } + nearMissBytes

  static let nearMissTexts = [
    // Escapes.
    #"{"jsonrpc":"2.0","id":1,"method":"get","params":{"key":"wi\u0066i"}}"#,
    #"{"jsonrpc":"2.0","id":1,"method":"g\"et"}"#,
    #"{"jsonrpc":"2\u002e0","id":1,"method":"get"}"#,
    #"{"jsonrpc":"2.0","id":"a\\b","method":"get"}"#,
    #"{"jsonrpc":"2.0","id":1,"method":"get","params":{"k\ey":"wifi"}}"#,
    #"{"json\u0072pc":"2.0","id":1,"method":"get"}"#,
    // Duplicates and unknown members.
    #"{"jsonrpc":"2.0","id":1,"id":2,"method":"get"}"#,
    #"{"jsonrpc":"2.0","jsonrpc":"2.0","id":1,"method":"get"}"#,
    #"{"jsonrpc":"2.0","id":1,"method":"get","method":"list"}"#,
    #"{"jsonrpc":"2.0","id":1,"method":"get","params":{},"params":{}}"#,
    #"{"jsonrpc":"2.0","id":1,"method":"get","extra":1}"#,
    #"{"jsonrpc":"2.0","idx":1,"method":"get"}"#,
    #"{"jsonrpc":"2.0","i":1,"method":"get"}"#,
    #"{"jsonrpc":"2.0","id":1,"methods":"get"}"#,
    #"{"jsonrpc":"2.0","id":1,"method":"get","param":{}}"#,
    #"{"jsonrpcx":"2.0","id":1,"method":"get"}"#,
    #"{"":"2.0","id":1,"method":"get"}"#,
    // Missing members, the wrong version or types.
    #"{"jsonrpc":"2.0","id":1}"#,
    #"{"id":1,"method":"get"}"#,
    #"{}"#,
    #"{"jsonrpc":"2.1","id":1,"method":"get"}"#,
    #"{"jsonrpc":"2.00","id":1,"method":"get"}"#,
    #"{"jsonrpc":2.0,"id":1,"method":"get"}"#,
    #"{"jsonrpc":"2.0","id":1,"method":7}"#,
    #"{"jsonrpc":"2.0","id":1,"method":null}"#,
    #"{"jsonrpc":"2.0","id":null,"method":"get"}"#,
    #"{"jsonrpc":"2.0","id":true,"method":"get"}"#,
    #"{"jsonrpc":"2.0","id":[1],"method":"get"}"#,
    #"{"jsonrpc":"2.0","id":{},"method":"get"}"#,
    #"{"jsonrpc":"2.0","id":1,"method":"get","params":[]}"#,
    #"{"jsonrpc":"2.0","id":1,"method":"get","params":["wifi"]}"#,
    #"{"jsonrpc":"2.0","id":1,"method":"get","params":"wifi"}"#,
    #"{"jsonrpc":"2.0","id":1,"method":"get","params":null}"#,
    #"{"jsonrpc":"2.0","id":1,"method":"get","params":1}"#,
    // Numbers: signs, fractions, exponents, leading zeros.
    #"{"jsonrpc":"2.0","id":-1,"method":"get"}"#,
    #"{"jsonrpc":"2.0","id":-0,"method":"get"}"#,
    #"{"jsonrpc":"2.0","id":+1,"method":"get"}"#,
    #"{"jsonrpc":"2.0","id":01,"method":"get"}"#,
    #"{"jsonrpc":"2.0","id":00,"method":"get"}"#,
    #"{"jsonrpc":"2.0","id":1.0,"method":"get"}"#,
    #"{"jsonrpc":"2.0","id":1.,"method":"get"}"#,
    #"{"jsonrpc":"2.0","id":1e3,"method":"get"}"#,
    #"{"jsonrpc":"2.0","id":1E3,"method":"get"}"#,
    #"{"jsonrpc":"2.0","id":0x10,"method":"get"}"#,
    #"{"jsonrpc":"2.0","id":1,"method":"history","params":{"limit":-5}}"#,
    #"{"jsonrpc":"2.0","id":1,"method":"history","params":{"limit":05}}"#,
    #"{"jsonrpc":"2.0","id":1,"method":"history","params":{"limit":5.0}}"#,
    #"{"jsonrpc":"2.0","id":1,"method":"history","params":{"limit":1e999999}}"#,
    // Booleans are only true and false; null and nesting go the long way.
    #"{"jsonrpc":"2.0","id":1,"method":"set","params":{"key":"k","checked":True}}"#,
    #"{"jsonrpc":"2.0","id":1,"method":"set","params":{"key":"k","checked":tru}}"#,
    #"{"jsonrpc":"2.0","id":1,"method":"set","params":{"key":"k","checked":falsey}}"#,
    #"{"jsonrpc":"2.0","id":1,"method":"lock","params":{"key":"k","reason":null}}"#,
    #"{"jsonrpc":"2.0","id":1,"method":"watch","params":{"keys":["wifi"]}}"#,
    #"{"jsonrpc":"2.0","id":1,"method":"watch","params":{"keys":{}}}"#,
    // Batches and other values.
    #"[{"jsonrpc":"2.0","id":1,"method":"get"}]"#,
    #"[]"#,
    #"null"#,
    #""{}""#,
    // Trailing and broken syntax.
    #"{"jsonrpc":"2.0","id":1,"method":"get"}x"#,
    #"{"jsonrpc":"2.0","id":1,"method":"get"}}"#,
    #"{"jsonrpc":"2.0","id":1,"method":"get"}{}"#,
    #"{"jsonrpc":"2.0","id":1,"method":"get",}"#,
    #"{"jsonrpc":"2.0","id":1,"method":"get","params":{"key":"wifi",}}"#,
    #"{"jsonrpc":"2.0","id":1,"method":"get","params":{"key":"wifi""#,
    #"{"jsonrpc":"2.0","id":1,"method":"get","params":{"key""#,
    #"{"jsonrpc":"2.0","id":1,"method":"get""#,
    #"{"jsonrpc":"2.0","id":1,"method":"get"#,
    #"{"jsonrpc":"2.0","id":1"#,
    #"{"jsonrpc":"2.0","id":"#,
    #"{"jsonrpc"#,
    #"{""#,
    #"{"#,
    #"{"jsonrpc":"2.0";"id":1,"method":"get"}"#,
    #"{"jsonrpc":"2.0","id":1,"method":'get'}"#,
    #"{'jsonrpc':"2.0","id":1,"method":"get"}"#,
    #"{"jsonrpc":"2.0","id":1 "method":"get"}"#,
    #"{"jsonrpc":"2.0","id":1,"method":"get","params":{"key"="wifi"}}"#,
    #"{"jsonrpc":"2.0","id":1,"method":"get","params":{key:"wifi"}}"#,
  ]

  static let nearMissBytes: [[UInt8]] = [
    [],
    // A byte order mark.
    [0xEF, 0xBB, 0xBF] + Array(#"{"jsonrpc":"2.0","id":1,"method":"get"}"#.utf8),
    // Control bytes and NUL inside strings, and after the value.
    Array(#"{"jsonrpc":"2.0","id":1,"method":"g"#.utf8) + [0x01] + Array(#"et"}"#.utf8),
    Array(#"{"jsonrpc":"2.0","id":1,"method":"g"#.utf8) + [0x00] + Array(#"et"}"#.utf8),
    Array(#"{"jsonrpc":"2.0","id":1,"method":"g"#.utf8) + [0x0A] + Array(#"et"}"#.utf8),
    Array(#"{"jsonrpc":"2.0","id":1,"method":"get"}"#.utf8) + [0x00],
    // Invalid UTF-8 inside a string: a ParseError.
    Array(#"{"jsonrpc":"2.0","id":1,"method":"g"#.utf8) + [0xFF] + Array(#"et"}"#.utf8),
    Array(#"{"jsonrpc":"2.0","id":1,"method":"g"#.utf8) + [0xC3] + Array(#"et"}"#.utf8),
    Array(#"{"jsonrpc":"2.0","id":1,"method":"g"#.utf8) + [0xC0, 0xAF] + Array(#"et"}"#.utf8),
    Array(#"{"jsonrpc":"2.0","id":1,"method":"g"#.utf8) + [0xED, 0xA0, 0x80]
      + Array(#"et"}"#.utf8),
    Array(#"{"jsonrpc":"2.0","id":"\#u{10FFFF}"#.utf8) + [0xF4, 0x90, 0x80, 0x80]
      + Array(#"","method":"get"}"#.utf8),
    Array(#"{"jsonrpc":"2.0","id":1,"method":"get","params":{"r":"a"#.utf8) + [0x80]
      + Array(#""}}"#.utf8),
    // Non-ASCII outside strings.
    Array(#"{"jsonrpc":"2.0","id":1,"method":"get"}"#.utf8) + Array("é".utf8),
  ]

  @Test func declinesEveryNearMiss() {
    for line in Self.nearMisses {
      #expect(Self.fast(line) == nil, "the fast path took \(Self.show(line))")
      #expect(Self.disagreement(line) == nil, "\(Self.show(line))")
    }
  }

  /// The general path refuses a params object deeper than maxDepth; the
  /// fast path leaves every small maxDepth to it.
  @Test(arguments: [-1, 0, 1, 2, 3])
  func agreesAtEveryDepth(_ maxDepth: Int) {
    for line in Self.common.map({ Array($0.utf8) }) {
      #expect(Self.disagreement(line, maxDepth: maxDepth) == nil, "\(Self.show(line))")
    }
    #expect(Self.fast(Array(Self.common[0].utf8), maxDepth: maxDepth) == nil || maxDepth >= 2)
  }

  // MARK: Random mutations

  /// Bytes that matter to the grammar, so that mutations reach its edges.
  static let interesting: [UInt8] =
    Array(#"{}[]:,"\\-+.eE0123456789tfnulr aijdmpsk"#.utf8) + [0x00, 0x09, 0x0A, 0x0D, 0x1F, 0x7F]
    + [0x80, 0xBF, 0xC0, 0xC3, 0xA9, 0xE2, 0x98, 0x95, 0xED, 0xA0, 0xF0, 0x9F, 0xF4, 0x90, 0xFF]

  static func mutate(_ line: [UInt8], _ rng: inout SplitMix64) -> [UInt8] {
    var m = line
    for _ in 0..<Int.random(in: 1...3, using: &rng) {
      let at = m.isEmpty ? 0 : Int.random(in: 0..<m.count, using: &rng)
      let byte =
        Bool.random(using: &rng)
        ? interesting.randomElement(using: &rng)! : UInt8.random(in: 0...255, using: &rng)
      switch Int.random(in: 0..<7, using: &rng) {
      case 0 where !m.isEmpty: m[at] ^= UInt8(1) << UInt8.random(in: 0..<8, using: &rng)
      case 1 where !m.isEmpty: m[at] = byte
      case 2 where !m.isEmpty: m.remove(at: at)
      case 3: m.insert(byte, at: at)
      case 4: m.removeSubrange(at...)
      case 5 where !m.isEmpty:
        // Repeat a slice: duplicated members, doubled digits and quotes.
        let end = min(m.count, at + Int.random(in: 1...24, using: &rng))
        m.insert(contentsOf: m[at..<end], at: end)
      default:
        let word = ["true", "false", "null", "-0", "1.5", "\\u00e9", "é", ",", "{}"]
        m.insert(contentsOf: word.randomElement(using: &rng)!.utf8, at: at)
      }
    }
    return m
  }

  @Test func agreesOnRandomMutations() {
    var rng = SplitMix64(seed: 0x5EED_F00D)
    let bases = Self.common.map { Array($0.utf8) }
    var failures: [String] = []
    var taken = 0
    var tried = 0
    for base in bases {
      for _ in 0..<1_000 {
        let line = Self.mutate(base, &rng)
        tried += 1
        if Self.fast(line) != nil { taken += 1 }
        if let why = Self.disagreement(line) { failures.append("\(Self.show(line)): \(why)") }
      }
    }
    #expect(failures.isEmpty, "\(failures.count) of \(tried), first: \(failures.prefix(5))")
    // Some mutations stay in the accepted shapes (a changed digit or letter):
    // the comparison above must have covered accepted lines, not only declines.
    #expect(taken > tried / 50, "the fast path took only \(taken) of \(tried) mutated lines")
  }
}

/// `Method.named` (the hash look-up every request makes) names what
/// `init(rawValue:)` names, and nothing else.
@Suite struct MethodNameTests {
  @Test func everyMethodByItsNameAndNothingElse() {
    func named(bytes name: String) -> Method? {
      Array(name.utf8).withUnsafeBufferPointer { Method.named(bytes: $0) }
    }
    for method in Method.allCases {
      #expect(Method.named(method.rawValue) == method)
      #expect(named(bytes: method.rawValue) == method)
    }
    for name in ["", "Get", "get ", "gets", "ge", "g", "io.switchd.Switches.Get", "toggle\u{0}"] {
      #expect(Method.named(name) == nil, "\(name)")
      #expect(named(bytes: name) == nil, "\(name)")
      #expect(Method(rawValue: name) == nil)
    }
  }
}
