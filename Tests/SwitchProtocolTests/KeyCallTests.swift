import SeededRandom
import SwitchCore
import Testing

@testable import SwitchProtocol

/// The key-call fast path (`RequestDecoder.decodeCall`) against the general
/// path (`decodeGeneral`, then `Call.decode`): on every line it either
/// declines or gives exactly the id, method and Call the general path gives.
@Suite struct KeyCallTests {
  static let depth = 32

  static func keyCall(_ line: [UInt8], maxDepth: Int = depth) -> DecodedCall? {
    line.withUnsafeBufferPointer { RequestDecoder.decodeCall($0, maxDepth: maxDepth) }
  }

  /// nil when the key-call path declines or agrees with the general path; else what differs.
  static func disagreement(_ line: [UInt8], maxDepth: Int = depth) -> String? {
    guard let fast = keyCall(line, maxDepth: maxDepth) else { return nil }
    let general = RequestFastPathTests.general(line, maxDepth: maxDepth)
    guard case .single(.success(let request)) = general else {
      return "it took a line the general path gives \(general)"
    }
    guard let method = Method.named(request.method) else { return "no method \(request.method)" }
    if fast.method != method { return "method \(fast.method) != \(method)" }
    if fast.id != request.id {
      return "id \(String(describing: fast.id)) != \(String(describing: request.id))"
    }
    let call = Call.decode(method, params: request.params)
    if call != .success(fast.call) { return "call \(fast.call) != \(call)" }
    if Call.allowsInteractiveAuthentication(request.params) {
      return "the general path lets polkit ask; the key call does not"
    }
    return nil
  }

  static let taken = [
    #"{"jsonrpc":"2.0","id":17,"method":"get","params":{"key":"wifi"}}"#,
    #"{"jsonrpc":"2.0","id":"a-1","method":"toggle","params":{"key":"toggle.c3"}}"#,
    #"{"jsonrpc":"2.0","method":"toggle","params":{"key":"wifi"}}"#,
    #"{"params":{"key":"wifi"},"method":"get","id":5,"jsonrpc":"2.0"}"#,
    #"{"jsonrpc":"2.0","id":1,"method":"set","params":{"key":"wifi","checked":true}}"#,
    #"{"jsonrpc":"2.0","id":1,"method":"set","params":{"checked":false,"key":"wifi"}}"#,
    #"{"jsonrpc":"2.0","id":1,"method":"lock","params":{"key":"wifi","checked":false}}"#,
    #"{"jsonrpc":"2.0","id":1,"method":"lock","params":{"key":"a.b-c"}}"#,
    #"{"jsonrpc":"2.0","id":1,"method":"reset","params":{"key":"wifi"}}"#,
    #"{"jsonrpc":"2.0","id":1,"method":"unlock","params":{"key":"wifi"}}"#,
    #"{"jsonrpc": "2.0", "id": 7, "method": "toggle", "params": {"key": "wifi"}}"#,
    #" { "params" : { "checked" : false , "key" : "wifi" } , "method" : "set" , "jsonrpc" : "2.0" } "#,
  ]

  @Test(arguments: taken)
  func takesTheCommonCalls(_ line: String) {
    let bytes = Array(line.utf8)
    #expect(Self.keyCall(bytes) != nil, "it declined \(line)")
    #expect(Self.disagreement(bytes) == nil, "\(line): \(Self.disagreement(bytes) ?? "")")
  }

  @Test func givesTheExpectedCall() {
    let toggle = #"{"jsonrpc":"2.0","id":"x","method":"toggle","params":{"key":"wifi"}}"#
    #expect(
      Self.keyCall(Array(toggle.utf8))
        == DecodedCall(
          id: .string("x"), method: .toggle,
          call: .write(key: "wifi", .toggle(ifRevision: nil), user: nil)))
  }

  /// Valid requests it leaves to the other paths (they say what is wrong,
  /// or read what it does not), and invalid ones.
  static let declined = [
    // Other params, or none.
    #"{"jsonrpc":"2.0","id":1,"method":"get"}"#,
    #"{"jsonrpc":"2.0","id":1,"method":"get","params":{}}"#,
    #"{"jsonrpc":"2.0","id":1,"method":"get","params":{"key":"wifi","user":1000}}"#,
    #"{"jsonrpc":"2.0","id":1,"method":"toggle","params":{"key":"wifi","ifRevision":3}}"#,
    #"{"jsonrpc":"2.0","id":1,"method":"toggle","params":{"key":"wifi","for":60}}"#,
    #"{"jsonrpc":"2.0","id":1,"method":"toggle","params":{"key":"w","allowInteractiveAuthentication":true}}"#,
    // A method that does not take them, or needs more.
    #"{"jsonrpc":"2.0","id":1,"method":"set","params":{"key":"wifi"}}"#,
    #"{"jsonrpc":"2.0","id":1,"method":"get","params":{"key":"wifi","checked":true}}"#,
    #"{"jsonrpc":"2.0","id":1,"method":"list","params":{"key":"wifi"}}"#,
    #"{"jsonrpc":"2.0","id":1,"method":"history","params":{"key":"wifi"}}"#,
    #"{"jsonrpc":"2.0","id":1,"method":"nosuch","params":{"key":"wifi"}}"#,
    // A key that is not one, given twice, or of the wrong type.
    #"{"jsonrpc":"2.0","id":1,"method":"get","params":{"key":"Wifi"}}"#,
    #"{"jsonrpc":"2.0","id":1,"method":"get","params":{"key":""}}"#,
    #"{"jsonrpc":"2.0","id":1,"method":"get","params":{"key":"a..b"}}"#,
    #"{"jsonrpc":"2.0","id":1,"method":"get","params":{"key":"é"}}"#,
    #"{"jsonrpc":"2.0","id":1,"method":"get","params":{"key":"a","key":"a"}}"#,
    #"{"jsonrpc":"2.0","id":1,"method":"set","params":{"key":"a","checked":true,"checked":true}}"#,
    #"{"jsonrpc":"2.0","id":1,"method":"get","params":{"key":1}}"#,
    #"{"jsonrpc":"2.0","id":1,"method":"set","params":{"key":"a","checked":1}}"#,
    // Not ASCII outside the key.
    #"{"jsonrpc":"2.0","id":"é","method":"get","params":{"key":"wifi"}}"#,
    // What the request fast path declines.
    #"{"jsonrpc":"2.0","id":1,"method":"get","params":{"key":"wifi"} }x"#,
    #"{"jsonrpc":"2.0","id":1,"method":"get","params":{"key" "checked":true,"key":"a"}}"#,
    #"{"jsonrpc":"2.0","id":1,"method":"get","params":{"key":"wifi"},"id":2}"#,
    #"{"jsonrpc":"2.1","id":1,"method":"get","params":{"key":"wifi"}}"#,
  ]

  @Test func declinesTheRest() {
    for line in Self.declined.map({ Array($0.utf8) }) + RequestFastPathTests.nearMisses {
      #expect(Self.keyCall(line) == nil, "it took \(RequestFastPathTests.show(line))")
    }
  }

  /// The general path refuses a params object deeper than maxDepth.
  @Test(arguments: [-1, 0, 1, 2])
  func leavesSmallDepthsToTheGeneralPath(_ maxDepth: Int) {
    for line in Self.taken.map({ Array($0.utf8) }) {
      #expect(Self.disagreement(line, maxDepth: maxDepth) == nil, "\(line)")
      if maxDepth < 2 { #expect(Self.keyCall(line, maxDepth: maxDepth) == nil) }
    }
  }

  /// `Call.keyCall` gives what `Call.decode` gives for the same params, or nil.
  @Test func keyCallIsDecodeForEveryMethod() {
    for method in Method.allCases {
      for checked in [nil, true, false] as [Bool?] {
        var members = [JSONMember("key", .string("wifi"))]
        if let checked { members.append(JSONMember("checked", .bool(checked))) }
        guard let call = Call.keyCall(method, key: "wifi", checked: checked) else { continue }
        #expect(
          Call.decode(method, params: .object(members)) == .success(call),
          "\(method) checked \(String(describing: checked))")
      }
    }
    #expect(Call.keyCall(.get, key: "k", checked: nil) != nil)
    #expect(Call.keyCall(.toggle, key: "k", checked: nil) != nil)
    #expect(Call.keyCall(.set, key: "k", checked: true) != nil)
  }

  @Test func agreesOnRandomMutations() {
    var rng = SplitMix64(seed: 0x0BAD_5EED)
    var failures: [String] = []
    var taken = 0
    var tried = 0
    for base in Self.taken.map({ Array($0.utf8) }) {
      for _ in 0..<2_000 {
        let line = RequestFastPathTests.mutate(base, &rng)
        tried += 1
        if Self.keyCall(line) != nil { taken += 1 }
        if let why = Self.disagreement(line) {
          failures.append("\(RequestFastPathTests.show(line)): \(why)")
        }
      }
    }
    #expect(failures.isEmpty, "\(failures.count) of \(tried), first: \(failures.prefix(5))")
    #expect(taken > tried / 200, "it took only \(taken) of \(tried) mutated lines")
  }

  @Test func aDeclaredLongKeyIsDecodedAsTheCatalogsString() {
    // `KeyInterner`: the String the tables hold, so that they find it by
    // its first word; no String of its own is made for it.
    let declared = String(decoding: Array("notifications.chat".utf8), as: UTF8.self)
    let keys = KeyInterner([declared])
    func storage(_ text: String) -> UnsafeRawPointer? {
      text.utf8.withContiguousStorageIfAvailable { UnsafeRawPointer($0.baseAddress) } ?? nil
    }
    func key(_ line: String, _ keys: KeyInterner) -> String? {
      let decoded = Array(line.utf8).withUnsafeBufferPointer {
        RequestDecoder.decodeCall($0, maxDepth: Self.depth, keys: keys)
      }
      guard case .write(let key, _, _, _)? = decoded?.call else { return nil }
      return key
    }
    let chat = #"{"jsonrpc":"2.0","id":1,"method":"toggle","params":{"key":"notifications.chat"}}"#
    #expect(storage(key(chat, keys) ?? "") == storage(declared))
    // Without the catalog's keys, or for a key it does not declare: the same
    // Call with a String of its own.
    #expect(key(chat, KeyInterner()) == declared)
    #expect(storage(key(chat, KeyInterner()) ?? "") != storage(declared))
    let mail = #"{"jsonrpc":"2.0","id":1,"method":"toggle","params":{"key":"notifications.mail"}}"#
    #expect(key(mail, keys) == "notifications.mail")
    // And through varlink's fast path.
    let varlink =
      #"{"method":"io.switchd.Switches.Toggle","parameters":{"key":"notifications.chat"}}"#
    let message = Array(varlink.utf8).withUnsafeBufferPointer {
      VarlinkDecoder.decode($0, maxDepth: Self.depth, keys: keys)
    }
    guard case .call(_, .success(.write(let varlinkKey, _, _, _))) = message.body else {
      Issue.record("varlink's Toggle was not decoded: \(message.body)")
      return
    }
    #expect(storage(varlinkKey) == storage(declared))
  }
}
