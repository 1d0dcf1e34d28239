import CShim
import Glibc
import SwitchCore
import SwitchProtocol
import SwitchStore
import SwitchSystem

// Lines into requests: framing, decoding, and the slots their answers go into.
extension Server {
  // MARK: Framing and envelopes

  func accept(_ frame: LineFramer.Frame, on connection: Connection) {
    if connection.wire == .varlink { return acceptVarlink(frame, on: connection) }
    switch frame {
    case .oversized:
      log.rateLimited(.notice, cause: "oversized", "a line longer than MaxFrameBytes was discarded")
      let slot = connection.openSlot(parts: 1, isBatch: false)
      let error = RPCError.invalidRequest("the line is longer than \(limits.maxFrameBytes) bytes")
      fail(Ticket(connection: connection.id, slot: slot, part: 0, id: .null), on: connection, error)
    case .line(let bytes):
      let maxDepth = limits.maxNestingDepth
      // Nearly every line: a get, toggle or set of a key, decoded in one step.
      // Consumed, not copied (an outlined copy and two destroys of the
      // whole request, ~400 instructions, callgrind), and not left behind
      // as a nil to destroy (through a generic value witness, ~150).
      let fast = bytes.withUnsafeBufferPointer {
        RequestDecoder.decodeCall($0, maxDepth: maxDepth, keys: catalog.sharedKeys)
      }
      if let decoded = consume fast {
        let answer = decoded.id == nil ? nil : (connection.openSlot(parts: 1, isBatch: false), 0)
        return startOrQueue(PendingRequest(decoded, answer: answer), on: connection)
      }
      let incoming = bytes.withUnsafeBufferPointer {
        RequestDecoder.decode($0, maxDepth: maxDepth)
      }
      switch incoming {
      case .single(let item):
        enqueue(item, on: connection)
      case .batch(let items):
        enqueue(items, isBatch: true, on: connection)
      }
    }
  }

  /// A line of one request (nearly every line): `enqueue(_:isBatch:on:)`
  /// without an array made and destroyed for it.
  func enqueue(_ item: Incoming.Item, on connection: Connection) {
    switch item {
    case .failure(let invalid):
      log.rateLimited(.info, cause: "invalid-request", "invalid request: \(invalid.error.message)")
      let slot = connection.openSlot(parts: 1, isBatch: false)
      fail(
        Ticket(connection: connection.id, slot: slot, part: 0, id: invalid.id), on: connection,
        invalid.error)
    case .success(let request):
      let answer = request.id == nil ? nil : (connection.openSlot(parts: 1, isBatch: false), 0)
      startOrQueue(PendingRequest(request, answer: answer, limits: limits.params), on: connection)
    }
  }

  /// Opens one slot for the line and queues its requests; invalid ones are
  /// answered at once (their answers do not depend on any state).
  func enqueue(_ items: [Incoming.Item], isBatch: Bool, on connection: Connection) {
    var answered = 0
    for item in items {
      if case .success(let request) = item, request.id == nil { continue }
      answered += 1
    }
    let slot = answered > 0 ? connection.openSlot(parts: answered, isBatch: isBatch) : 0
    var part = 0
    for item in items {
      switch item {
      case .failure(let invalid):
        log.rateLimited(
          .info, cause: "invalid-request", "invalid request: \(invalid.error.message)")
        fail(
          Ticket(connection: connection.id, slot: slot, part: part, id: invalid.id),
          on: connection, invalid.error)
        part += 1
      case .success(let request):
        if request.id == nil {
          connection.enqueue(PendingRequest(request, answer: nil, limits: limits.params))
        } else {
          connection.enqueue(
            PendingRequest(request, answer: (slot, part), limits: limits.params))
          part += 1
        }
      }
    }
  }
}
