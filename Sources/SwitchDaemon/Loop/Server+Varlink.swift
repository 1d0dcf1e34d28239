import SwitchCore
import SwitchProtocol

// varlink messages into the same requests as JSON-RPC lines: a call of
// io.switchd.Switches is queued as a PendingRequest with its decoded Call
// and runs through the same checks, rules and writer; the service
// interface's calls and invalid messages are answered here, in order
// through their slots (their answers depend on no state).
extension Server {
  func acceptVarlink(_ frame: LineFramer.Frame, on connection: Connection) {
    let message: VarlinkMessage
    switch frame {
    case .oversized:
      log.rateLimited(
        .notice, cause: "oversized", "a varlink message longer than MaxFrameBytes was discarded")
      message = VarlinkMessage(
        .invalid(.varlinkInvalidRequest("it is longer than \(limits.maxFrameBytes) bytes")))
    case .line(let bytes):
      message = bytes.withUnsafeBufferPointer {
        VarlinkDecoder.decode(
          $0, maxDepth: limits.maxNestingDepth, limits: limits.params, keys: catalog.sharedKeys)
      }
    }
    // A oneway Watch would stream replies nobody asked for: nothing is set up.
    if message.oneway, case .call(.watch, _) = message.body { return }
    let slot = message.oneway ? 0 : connection.openSlot(parts: 1, isBatch: false)
    var ticket = Ticket(connection: connection.id, slot: slot, part: 0, id: .null)
    ticket.varlink = VarlinkReply()
    switch message.body {
    case .call(let method, let call):
      var pending = PendingRequest(varlink: method, call, answer: message.oneway ? nil : (slot, 0))
      pending.allowsInteraction = message.allowsInteraction
      startOrQueue(pending, on: connection)
    case .getInfo:
      answer(ticket, on: connection) {
        VarlinkEncoding.writeInfo(&$0, version: SwitchdVersion.current)
      }
    case .describe(.success(let text)):
      answer(ticket, on: connection) { VarlinkEncoding.writeDescription(&$0, text) }
    case .describe(.failure(let error)), .invalid(let error):
      log.rateLimited(.info, cause: "invalid-request", "invalid varlink call: \(error.message)")
      fail(ticket, on: connection, error)
    }
  }
}

extension PendingRequest {
  /// A varlink call of `method`, its parameters decoded; `answer` nil for
  /// `oneway` (carried out, never answered).
  init(varlink method: Method, _ call: Result<Call, RPCError>, answer: (slot: UInt64, part: Int)?) {
    self.id = .null
    self.method = method
    self.call = call
    self.answer = answer
    self.varlink = VarlinkReply(for: method)
  }
}
