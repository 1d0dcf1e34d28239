import Testing

@testable import SwitchProtocol

/// Parameters that are not an object, in a call of one of switchd's
/// methods: decoded as that method's InvalidParams, so the method's
/// PermissionDenied comes first, as on the JSON-RPC socket.
@Suite struct VarlinkParametersShapeTests {
  @Test func parametersNotAnObjectAreTheMethodsInvalidParams() {
    let frame = Array(#"{"method":"io.switchd.Switches.Lock","parameters":[1]}"#.utf8)
    let message = frame.withUnsafeBufferPointer { VarlinkDecoder.decode($0, maxDepth: 32) }
    guard case .call(.lock, .failure(let error)) = message.body else {
      Issue.record("not the method's failure: \(message.body)")
      return
    }
    #expect(error.code == .invalidParams)
    let unknown = Array(#"{"method":"io.switchd.Switches.Frob","parameters":[1]}"#.utf8)
    let other = unknown.withUnsafeBufferPointer { VarlinkDecoder.decode($0, maxDepth: 32) }
    guard case .invalid = other.body else {
      Issue.record("an unknown method was called: \(other.body)")
      return
    }
  }
}
