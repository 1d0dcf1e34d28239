import Testing

@testable import SwitchProtocol

/// A request id of up to 18 digits is kept as its value (no String made
/// per request), longer ones as text; either way the answer echoes the id
/// exactly as sent, and the fast path's id equals the general path's.
@Suite struct IntegerIDTests {
  static let ids = [
    "0", "7", "42", "999999999999999999", "123456789012345678", "1234567890123456789",
    "99999999999999999999999",
  ]

  @Test(arguments: ids)
  func anIntegerIDIsEchoedExactlyAsSent(_ id: String) throws {
    let line = Array(#"{"jsonrpc":"2.0","id":\#(id),"method":"get","params":{"key":"wifi"}}"#.utf8)
    let fast = try #require(KeyCallTests.keyCall(line))
    let general = RequestFastPathTests.general(line, maxDepth: KeyCallTests.depth)
    guard case .single(.success(let request)) = general else {
      Issue.record("the general path refused \(id): \(general)")
      return
    }
    #expect(fast.id == request.id)
    for decoded in [fast.id, request.id] {
      var w = JSONWriter()
      ResponseEncoding.beginResult(&w, id: try #require(decoded))
      #expect(
        String(decoding: w.bytes, as: UTF8.self) == #"{"jsonrpc":"2.0","id":\#(id),"result":"#)
    }
  }

  @Test func aNumberKeptAsItsValueEqualsTheSameTextAndNoOther() throws {
    #expect(JSONNumber(7) == JSONNumber(text: "7"))
    #expect(JSONNumber(7) != JSONNumber(text: "7.0"))
    #expect(JSONNumber(7) != JSONNumber(8))
    #expect(JSONNumber(-12).text == "-12")
    #expect(JSONNumber(text: "1.5e3")?.int64 == nil)
    #expect(JSONNumber(123).int64 == 123)
  }
}
