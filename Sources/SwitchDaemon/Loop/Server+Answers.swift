import SwitchCore
import SwitchProtocol

// The one answer path. Every response, of every method and thread, is
// built by `writeResponse` (the envelope around a result or an error: the
// JSON-RPC one, or a varlink reply on the varlink socket, as the ticket
// says) and delivered by `respond`: straight into the socket's output when
// it is the connection's next answer, else into its slot, so answers leave
// in request order whoever produced them.
extension Server {
  /// The envelope around a result that `body` writes. Static: the log
  /// reader builds history pages with it on its own thread.
  static func writeResponse(
    _ w: inout JSONWriter, to ticket: Ticket, result body: (inout JSONWriter) -> Void
  ) {
    if let reply = ticket.varlink {
      VarlinkEncoding.beginReply(&w, reply)
      body(&w)
      VarlinkEncoding.endReply(&w, reply)
    } else {
      ResponseEncoding.beginResult(&w, id: ticket.id)
      body(&w)
      ResponseEncoding.endResult(&w)
    }
  }

  /// The envelope around an error. `switchObject`: a Conflict's current
  /// switch, already encoded (`data.switch`).
  static func writeResponse(
    _ w: inout JSONWriter, to ticket: Ticket, error: RPCError, switchObject: [UInt8]? = nil
  ) {
    if ticket.varlink != nil {
      VarlinkEncoding.writeError(&w, error, switchObject: switchObject)
    } else {
      ResponseEncoding.writeError(&w, id: ticket.id, error, switchObject: switchObject)
    }
  }

  /// Delivers the response `write` writes (envelope included) for `ticket`.
  func respond(_ ticket: Ticket, on connection: Connection, _ write: (inout JSONWriter) -> Void) {
    guard ticket.slot != 0 else { return }  // a notification: never answered
    if connection.writeDirectly(slot: ticket.slot, through: &scratch, write) { return }
    var w = JSONWriter(capacity: 512)
    write(&w)
    connection.fill(slot: ticket.slot, part: ticket.part, with: w.bytes)
  }

  /// Delivers a response line built whole elsewhere (a history page, its
  /// line end included), without a copy when it is the connection's next answer.
  func respond(_ ticket: Ticket, on connection: Connection, builtLine bytes: inout [UInt8]) {
    connection.queue(line: &bytes, slot: ticket.slot, part: ticket.part)
  }

  /// Delivers a response with a descriptor passed alongside (`backup`).
  func respond(
    _ ticket: Ticket, on connection: Connection, passing descriptor: Int32,
    _ write: (inout JSONWriter) -> Void
  ) {
    var w = JSONWriter(capacity: 128)
    write(&w)
    connection.fill(slot: ticket.slot, part: ticket.part, with: w.bytes, passing: descriptor)
  }

  /// Answers `ticket` with the result `body` writes.
  func answer(_ ticket: Ticket, on connection: Connection, _ body: (inout JSONWriter) -> Void) {
    respond(ticket, on: connection) { Self.writeResponse(&$0, to: ticket, result: body) }
  }

  /// Answers `pending` with the result `body` writes, an array of `bytes`
  /// (a kept list's objects, ~540 KB for 1,000 switches, 5.3 MB for
  /// 10,000) where it calls `here`. The objects are queued as they are,
  /// shared with the cache and with every other connection they answer
  /// (`Connection.queue(head:shared:…)`): not written through the loop's
  /// writer nor copied into a line.
  func answer(
    _ pending: PendingRequest, on connection: Connection, around bytes: [UInt8],
    _ body: (inout JSONWriter, _ here: (inout JSONWriter) -> Void) -> Void
  ) {
    let ticket = ticket(pending, connection)
    guard ticket.slot != 0 else { return }  // a notification: never answered
    var rest = JSONWriter(capacity: 256)
    var mark: Int?
    Self.writeResponse(&rest, to: ticket) { w in
      body(&w) { w in
        w.raw("[")
        mark = w.count
        w.raw("]")
      }
    }
    guard let mark else { preconditionFailure("the answer's body did not say where the list goes") }
    rest.append(connection.terminator)
    rest.withBytes { raw in
      connection.queue(
        head: Array(raw[..<mark]), shared: bytes, tail: Array(raw[mark...]), slot: ticket.slot,
        part: ticket.part)
    }
  }

  /// Answers `ticket` with `error`.
  func fail(_ ticket: Ticket, on connection: Connection, _ error: RPCError) {
    respond(ticket, on: connection) { Self.writeResponse(&$0, to: ticket, error: error) }
  }

  func answer(
    _ pending: PendingRequest, on connection: Connection, _ body: (inout JSONWriter) -> Void
  ) {
    answer(ticket(pending, connection), on: connection, body)
  }

  func fail(_ pending: PendingRequest, on connection: Connection, _ error: RPCError) {
    fail(ticket(pending, connection), on: connection, error)
  }

  /// Where the answer to `pending` goes (slot 0: a notification).
  func ticket(_ pending: PendingRequest, _ connection: Connection) -> Ticket {
    Ticket(
      connection: connection.id, slot: pending.answer?.slot ?? 0, part: pending.answer?.part ?? 0,
      id: pending.id, varlink: pending.varlink)
  }
}
