import SwitchCore
import Testing

@testable import SwitchProtocol

/// `allowInteractiveAuthentication` (PROTOCOL.md "Authorization
/// parameter"): taken by every method, a bool, read where a right is needed.
@Suite struct InteractiveAuthenticationParamTests {
  @Test(arguments: Method.allCases)
  func everyMethodTakesIt(method: Method) {
    let params = JSONValue.object(
      [JSONMember("allowInteractiveAuthentication", .bool(true))] + Self.required(method))
    if case .failure(let error) = Call.decode(method, params: params) {
      Issue.record("\(method.rawValue) refused it: \(error.message)")
    }
    #expect(Call.allowsInteractiveAuthentication(params))
  }

  @Test func itIsABoolAndAbsentIsFalse() {
    let one = JSONValue.object([
      JSONMember("key", .string("wifi")), JSONMember("allowInteractiveAuthentication", .int(1)),
    ])
    guard case .failure(let error) = Call.decode(.toggle, params: one) else {
      Issue.record("1 is not a bool")
      return
    }
    #expect(error.code == .invalidParams)
    #expect(!Call.allowsInteractiveAuthentication(.object([JSONMember("key", .string("wifi"))])))
    #expect(!Call.allowsInteractiveAuthentication(nil))
  }

  @Test func varlinkCarriesIt() {
    let frame = Array(
      #"{"method":"io.switchd.Switches.Toggle","parameters":{"key":"wifi","allowInteractiveAuthentication":true}}"#
        .utf8)
    let message = frame.withUnsafeBufferPointer { VarlinkDecoder.decode($0, maxDepth: 32) }
    #expect(message.allowsInteraction)
    guard case .call(.toggle, .success) = message.body else {
      Issue.record("the call was not decoded: \(message.body)")
      return
    }
  }

  /// The interface declares it where a right may be needed, so not on
  /// Status: varlink refuses it there, as any parameter not declared.
  @Test func varlinkStatusDoesNotTakeIt() {
    let frame = Array(
      #"{"method":"io.switchd.Switches.Status","parameters":{"allowInteractiveAuthentication":true}}"#
        .utf8)
    let message = frame.withUnsafeBufferPointer { VarlinkDecoder.decode($0, maxDepth: 32) }
    guard case .call(.status, .failure(let error)) = message.body else {
      Issue.record("it was taken: \(message.body)")
      return
    }
    #expect(error.code == .invalidParams)
    #expect(
      error.data.first { $0.name == "param" }?.value == .string("allowInteractiveAuthentication"))
  }

  /// The params a method cannot do without.
  static func required(_ method: Method) -> [JSONMember] {
    switch method {
    case .get, .toggle, .reset, .lock, .unlock, .disable, .enable, .apply, .confirm, .revert:
      return [JSONMember("key", .string("wifi"))]
    case .set: return [JSONMember("key", .string("wifi")), JSONMember("checked", .bool(true))]
    case .unwatch: return [JSONMember("watch", .string("w1"))]
    default: return []
    }
  }
}
