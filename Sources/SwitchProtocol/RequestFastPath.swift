import Glibc
import SwitchCore

// RequestFastPath: reads the common request line straight from its bytes.
//
// Why it exists: nearly every line a client sends is one small request like
//   {"jsonrpc":"2.0","id":17,"method":"get","params":{"key":"wifi"}}
// and the general path (JSONParser's tree, then RequestDecoder.envelope) was
// the largest single cost of a request in the event loop: ~8.8k of the ~17k
// instructions a `get` costs it, measured with callgrind; this path takes
// ~1.8k. It makes no tree, no parser stacks and no name comparisons on Strings.
//
// What it accepts (anything else returns nil and takes the general path,
// which therefore still gives every error and its message):
// - JSON's whitespace (space, tab, CR) between tokens and around the object,
//   as Python's json.dumps and most clients put it; nothing else after '}';
// - one object whose members, in any order and each at most once, are
//   "jsonrpc":"2.0" and "method":STRING (both required), "id":(INTEGER|STRING)
//   and "params":{} or {"NAME":VALUE,...} with VALUE a STRING, an INTEGER,
//   true or false (no null, no nesting);
// - STRING: no backslash and no byte below 0x20; bytes above 0x7F only when
//   the whole line is valid UTF-8 (else it is a ParseError, which is the
//   general path's to give);
// - INTEGER: `0` or `[1-9][0-9]*`, kept as its text like the parser does
//   (a sign, fraction, exponent or leading zero is declined).
// Its result is exactly the general path's: the same Request, params members
// in source order (a repeated params name is kept, as the parser keeps it;
// Call.decode refuses it later). Tests/SwitchProtocolTests/RequestFastPathTests
// and Fuzz/fuzz-protocol hold it to that.

enum RequestFastPath {
  /// The request on `line` when it has one of the shapes above; else nil.
  static func request(_ line: UnsafeBufferPointer<UInt8>, maxDepth: Int) -> Request? {
    // The general path refuses a params object nested deeper than maxDepth.
    guard maxDepth >= 2, let base = line.baseAddress else { return nil }
    var scanner = Scanner(p: base, n: line.count)
    guard let request = scanner.request() else { return nil }
    if scanner.sawNonASCII {
      do { try JSONParser.validateUTF8(base, count: line.count) } catch { return nil }
    }
    return request
  }
}

extension RequestFastPath {
  /// The request on `line` read straight into its Call, when it has one of
  /// the shapes above with params of `key` and at most `checked` (a `get`,
  /// `toggle` or `set`: nearly every request) and its method takes them
  /// (`Call.keyCall`); else nil, and `request` or the general path reads it.
  /// No params object is made and none is decoded: ~2k instructions of a
  /// `get` (callgrind). `RequestDecoder.decodeCall` is its public face.
  static func keyCall(
    _ line: UnsafeBufferPointer<UInt8>, maxDepth: Int, keys: KeyInterner
  ) -> DecodedCall? {
    guard maxDepth >= 2, let base = line.baseAddress else { return nil }
    var scanner = Scanner(p: base, n: line.count)
    guard let (id, method, params) = scanner.keyRequest(),
      let call = Call.keyCall(
        method, key: scanner.key(params.key, sharing: keys), checked: params.checked)
    else { return nil }
    // A key is ASCII; a non-ASCII id or method name is the general path's.
    if scanner.sawNonASCII { return nil }
    return DecodedCall(id: id, method: method, call: call)
  }
}

extension RequestFastPath {
  /// The varlink call on `line` read straight into its Call, when it is a
  /// method of io.switchd.Switches with parameters of `key` and at most
  /// `checked` that the method takes (`Call.keyCall`, as `keyCall`); else
  /// nil, and `varlinkCall` or the general path reads it.
  static func varlinkKeyCall(
    _ line: UnsafeBufferPointer<UInt8>, maxDepth: Int, keys: KeyInterner = KeyInterner()
  ) -> (method: Method, call: Call)? {
    guard maxDepth >= 2, let base = line.baseAddress else { return nil }
    var scanner = Scanner(p: base, n: line.count)
    // No non-ASCII byte can be in it: the method's name is one of ours and
    // the key a valid key.
    guard let (method, parameters) = scanner.varlinkKeyRequest(),
      let call = Call.keyCall(
        method, key: scanner.key(parameters.key, sharing: keys), checked: parameters.checked)
    else { return nil }
    return (method, call)
  }
}

/// The params `RequestFastPath.keyCall` reads.
struct KeyParams {
  /// Where the key's bytes are, checked (`Scanner.key` makes its String).
  var key: Range<Int>
  var checked: Bool?
}

extension RequestFastPath {
  /// The varlink call on `line` when it is `{"method":STRING}` or
  /// `{"method":STRING,"parameters":{...}}` (either order) with the same
  /// rules as above; anything else (`more`, `oneway`, a null) returns nil and takes the general path. What varlink's `Get` and
  /// `Toggle` send, read without a JSON tree: the parser was what made a
  /// varlink `get` cost more than a JSON-RPC one.
  static func varlinkCall(
    _ line: UnsafeBufferPointer<UInt8>, maxDepth: Int
  ) -> (method: String, parameters: JSONValue?)? {
    guard maxDepth >= 2, let base = line.baseAddress else { return nil }
    var scanner = Scanner(p: base, n: line.count)
    guard let call = scanner.varlinkCall() else { return nil }
    if scanner.sawNonASCII {
      do { try JSONParser.validateUTF8(base, count: line.count) } catch { return nil }
    }
    return call
  }
}

private struct Scanner {
  let p: UnsafePointer<UInt8>
  let n: Int
  var i = 0
  var sawNonASCII = false

  mutating func request() -> Request? {
    guard let (id, method, params) = envelope({ $0.paramsObject() }) else { return nil }
    return Request(id: id, method: text(method), params: params)
  }

  /// A request whose params are `key`, and `checked` at most, of a method
  /// that exists (found from its bytes: no String is made for its name).
  mutating func keyRequest() -> (id: RequestID?, method: Method, params: KeyParams)? {
    guard let (id, name, params) = envelope({ $0.keyParams() }), let params,
      let method = Method.named(
        bytes: UnsafeBufferPointer(start: p + name.lowerBound, count: name.count))
    else { return nil }
    return (id, method, params)
  }

  /// The envelope, in any order, its params read by `readParams`; the
  /// method name as where its bytes are.
  mutating func envelope<Params>(
    _ readParams: (inout Scanner) -> Params?
  ) -> (id: RequestID?, method: Range<Int>, params: Params?)? {
    guard skip(UInt8(ascii: "{")) else { return nil }
    var id: RequestID?
    var method: Range<Int>?
    var params: Params?
    var seen: UInt8 = 0  // a bit per envelope member, as RequestDecoder.envelope
    repeat {
      skipSpace()
      guard n - i >= 2 else { return nil }
      let bit: UInt8
      switch p[i + 1] {  // the first letter of the member's name
      case UInt8(ascii: "j"):
        guard member(#""jsonrpc""#), skip(#""2.0""#) else { return nil }
        bit = 1
      case UInt8(ascii: "m"):
        guard member(#""method""#), let name = stringBytes() else { return nil }
        method = name
        bit = 2
      case UInt8(ascii: "p"):
        guard member(#""params""#), let object = readParams(&self) else { return nil }
        params = object
        bit = 4
      case UInt8(ascii: "i"):
        guard member(#""id""#) else { return nil }
        skipSpace()
        guard i < n else { return nil }
        if p[i] == UInt8(ascii: "\"") {
          guard let text = string() else { return nil }
          id = .string(text)
        } else {
          guard let number = integer() else { return nil }
          id = .number(number)
        }
        bit = 8
      default:
        return nil
      }
      guard seen & bit == 0 else { return nil }
      seen |= bit
    } while skip(UInt8(ascii: ","))
    guard skip(UInt8(ascii: "}")), atEnd(), seen & 3 == 3, let method else { return nil }
    return (id, method, params)
  }

  mutating func varlinkCall() -> (method: String, parameters: JSONValue?)? {
    guard let (method, parameters) = varlinkEnvelope({ $0.paramsObject() }) else { return nil }
    return (text(method), parameters)
  }

  /// A varlink call of one of io.switchd.Switches' methods whose parameters
  /// are `key`, and `checked` at most (the method found from its bytes).
  mutating func varlinkKeyRequest() -> (method: Method, parameters: KeyParams)? {
    guard let (name, parameters) = varlinkEnvelope({ $0.keyParams() }), let parameters,
      let method = VarlinkInterface.method(
        fullName: UnsafeBufferPointer(start: p + name.lowerBound, count: name.count))
    else { return nil }
    return (method, parameters)
  }

  /// A varlink call's object, in either order, its parameters read by
  /// `readParameters`; `more`, `oneway` and anything else are declined.
  mutating func varlinkEnvelope<Parameters>(
    _ readParameters: (inout Scanner) -> Parameters?
  ) -> (method: Range<Int>, parameters: Parameters?)? {
    guard skip(UInt8(ascii: "{")) else { return nil }
    var method: Range<Int>?
    var parameters: Parameters?
    var seen: UInt8 = 0
    repeat {
      skipSpace()
      guard n - i >= 2 else { return nil }
      let bit: UInt8
      switch p[i + 1] {
      case UInt8(ascii: "m"):  // "more" is declined here: not "method"
        guard member(#""method""#), let name = stringBytes() else { return nil }
        method = name
        bit = 1
      case UInt8(ascii: "p"):
        guard member(#""parameters""#), let object = readParameters(&self) else { return nil }
        parameters = object
        bit = 2
      default:
        return nil
      }
      guard seen & bit == 0 else { return nil }
      seen |= bit
    } while skip(UInt8(ascii: ","))
    guard skip(UInt8(ascii: "}")), atEnd(), let method else { return nil }
    return (method, parameters)
  }

  /// `{}` or `{"NAME":VALUE,...}`, VALUE a string, an integer, true or false.
  mutating func paramsObject() -> JSONValue? {
    guard skip(UInt8(ascii: "{")) else { return nil }
    if skip(UInt8(ascii: "}")) { return .object([]) }
    var members: [JSONMember] = []
    repeat {
      guard let name = string(), skip(UInt8(ascii: ":")) else { return nil }
      skipSpace()
      guard i < n else { return nil }
      let value: JSONValue
      switch p[i] {
      case UInt8(ascii: "\""):
        guard let text = string() else { return nil }
        value = .string(text)
      case UInt8(ascii: "t"):
        guard skip("true") else { return nil }
        value = .bool(true)
      case UInt8(ascii: "f"):
        guard skip("false") else { return nil }
        value = .bool(false)
      default:
        guard let number = integer() else { return nil }
        value = .number(number)
      }
      members.append(JSONMember(name, value))
    } while skip(UInt8(ascii: ","))
    guard skip(UInt8(ascii: "}")) else { return nil }
    return .object(members)
  }

  /// `{"key":KEY}` or `{"key":KEY,"checked":BOOL}`, either order, KEY a
  /// valid switch key (else the general path says what is wrong with it).
  mutating func keyParams() -> KeyParams? {
    guard skip(UInt8(ascii: "{")) else { return nil }
    var key: Range<Int>?
    var checked: Bool?
    repeat {
      skipSpace()
      guard n - i >= 2 else { return nil }
      switch p[i + 1] {  // the first letter of the name: no partial match is tried again
      case UInt8(ascii: "k"):
        // Checked on the bytes (`key(_:sharing:)` makes the String, not
        // checked again through it).
        guard key == nil, member(#""key""#), let range = keyBytes() else { return nil }
        key = range
      case UInt8(ascii: "c"):
        guard checked == nil, member(#""checked""#) else { return nil }
        if skip("true") {
          checked = true
        } else if skip("false") {
          checked = false
        } else {
          return nil
        }
      default:
        return nil
      }
    } while skip(UInt8(ascii: ","))
    guard skip(UInt8(ascii: "}")), let key else { return nil }
    return KeyParams(key: key, checked: checked)
  }

  /// A string with no escape and no control byte; nil for anything else.
  mutating func string() -> String? {
    stringBytes().map(text)
  }

  /// Where the bytes of a string with no escape and no control byte are
  /// (between its quotes); nil for anything else.
  mutating func stringBytes() -> Range<Int>? {
    skipSpace()
    guard i < n, p[i] == UInt8(ascii: "\"") else { return nil }
    let start = i + 1
    var j = start
    while j < n {
      let c = p[j]
      if c == UInt8(ascii: "\"") {
        i = j + 1
        return start..<j
      }
      if c == UInt8(ascii: "\\") || c < 0x20 { return nil }
      if c >= 0x80 { sawNonASCII = true }
      j += 1
    }
    return nil
  }

  /// Where the bytes of a string that is a valid switch key are (between
  /// its quotes), found and checked in one pass (`SwitchKey.validLength`);
  /// nil for anything else, which the general path explains.
  mutating func keyBytes() -> Range<Int>? {
    skipSpace()
    guard i < n, p[i] == UInt8(ascii: "\"") else { return nil }
    let start = i + 1
    guard
      let length = SwitchKey.validLength(
        UnsafeBufferPointer(start: p + start, count: n - start), endingAt: UInt8(ascii: "\""))
    else { return nil }
    i = start + length + 1
    return start..<(start + length)
  }

  /// The key at `range`: a declared long key's shared String
  /// (`KeyInterner`), else a String of its own.
  func key(_ range: Range<Int>, sharing keys: borrowing KeyInterner) -> String {
    if range.count > KeyInterner.smallKeyBytes,
      let shared = keys.key(UnsafeBufferPointer(start: p + range.lowerBound, count: range.count))
    {
      return shared
    }
    return text(range)
  }

  /// The String of the bytes at `range`.
  func text(_ range: Range<Int>) -> String {
    String(
      decoding: UnsafeBufferPointer(start: p + range.lowerBound, count: range.count), as: UTF8.self)
  }

  /// `0` or `[1-9][0-9]*`. What follows is checked by the caller: a '.',
  /// 'e' or digit after it is not a ',' or '}', so the line is declined.
  mutating func integer() -> JSONNumber? {
    skipSpace()
    guard i < n, JSONGrammar.isDigit(p[i]) else { return nil }
    let start = i
    i += 1
    if p[start] != UInt8(ascii: "0") {
      while i < n && JSONGrammar.isDigit(p[i]) { i += 1 }
    }
    // Up to 18 digits fit an Int64 whatever they are: kept as the value.
    if i - start <= 18 {
      var value: Int64 = 0
      for k in start..<i { value = value * 10 + Int64(p[k] &- UInt8(ascii: "0")) }
      return JSONNumber(value)
    }
    let text = String(
      decoding: UnsafeBufferPointer(start: p + start, count: i - start), as: UTF8.self)
    return JSONNumber(validatedText: text)
  }

  /// Steps over JSON's insignificant whitespace. Compact lines (nearly
  /// all) pay one comparison per token for it.
  @inline(__always)
  mutating func skipSpace() {
    guard i < n && p[i] <= 0x20 else { return }
    while i < n && JSONGrammar.isSpace(p[i]) { i += 1 }
  }

  /// Steps over the rest of the line, true when it is only whitespace.
  mutating func atEnd() -> Bool {
    skipSpace()
    return i == n
  }

  /// Steps over `name` (quoted) and its colon.
  mutating func member(_ name: StaticString) -> Bool {
    skip(name) && skip(UInt8(ascii: ":"))
  }

  /// Steps over `byte` if it is next, after any whitespace.
  mutating func skip(_ byte: UInt8) -> Bool {
    if i < n && p[i] == byte {
      i += 1
      return true
    }
    skipSpace()
    guard i < n && p[i] == byte else { return false }
    i += 1
    return true
  }

  /// Steps over `word` if it is next (memcmp: a byte loop cost ~8
  /// instructions a byte of the envelope's names).
  mutating func skip(_ word: StaticString) -> Bool {
    skipSpace()
    let length = word.utf8CodeUnitCount
    guard n - i >= length, memcmp(p + i, word.utf8Start, length) == 0 else { return false }
    i += length
    return true
  }
}
