import SwitchProtocol
import Testing

/// A batch holds at most `RequestDecoder.maxBatchRequests` requests: at the
/// limit each is its own item; one more and the batch is one InvalidRequest.
@Suite struct BatchLimitTests {
  static func batch(_ count: Int) -> Incoming {
    let one = #"{"jsonrpc":"2.0","id":1,"method":"get","params":{"key":"wifi"}}"#
    let line = "[" + Array(repeating: one, count: count).joined(separator: ",") + "]"
    return Array(line.utf8).withUnsafeBufferPointer { RequestDecoder.decode($0, maxDepth: 32) }
  }

  @Test func aBatchAtTheLimitIsEveryRequestOnItsOwn() {
    guard case .batch(let items) = Self.batch(RequestDecoder.maxBatchRequests) else {
      Issue.record("not a batch")
      return
    }
    #expect(items.count == RequestDecoder.maxBatchRequests)
    #expect(items.allSatisfy { (try? $0.get())?.method == "get" })
  }

  @Test func aBatchOverTheLimitIsOneInvalidRequest() {
    let limit = RequestDecoder.maxBatchRequests
    guard case .single(.failure(let refused)) = Self.batch(limit + 1) else {
      Issue.record("not refused whole")
      return
    }
    #expect(refused.id == .null)
    #expect(refused.error.code == .invalidRequest)
    #expect(
      refused.error.message.contains(
        "a batch holds at most \(limit) requests; this one has \(limit + 1)"),
      "\(refused.error.message)")
  }
}
