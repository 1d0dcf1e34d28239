import CShim
import Glibc
import SwitchCore
import SwitchProtocol
import SwitchStore
import SwitchSystem

// `history`: checked on the loop, read by the log reader, answered when its page comes back.
extension Server {
  /// `history`: checked here, read by the log reader thread, answered
  /// when its page comes back (`drainReaderOutputs`).
  func history(
    _ pending: PendingRequest, on connection: Connection, key: String?, limit: Int, before: Int64?,
    user: Viewpoint?, caller: Caller
  ) {
    if let key, catalog.switches[key] == nil, records[key] == nil {
      fail(pending, on: connection, RPCError(Refusal.unknownSwitch(key: key)))
      return
    }
    guard let viewpoint = viewpointOrAsk(user, pending, on: connection, caller: caller, key: key)
    else { return }
    guard pending.answer != nil else { return }  // a notification: nothing to read
    if stopSentToReader {
      fail(pending, on: connection, .overloaded("switchd is stopping"))
      return
    }
    // Capped at the loop's revision, as `watch since` is: the log may
    // already hold changes the writer committed that are not yet published,
    // and history never shows a change before its event went out.
    // The key's newest change is its record's revision: no lookup in the log.
    var view = readerView(viewpoint)
    view.keyIsUserScope = key.flatMap { catalog.switches[$0]?.scope } == .user
    connection.barriersInFlight += 1
    readerJobs.push(
      .history(
        ticket(pending, connection), key: key, before: min(before ?? .max, revision &+ 1),
        limit: limit, newest: key.map { records[$0]?.revision ?? 0 },
        // The actors as the connection's own rights show them (polkit's
        // grant was to read as another user), as a watch's events do.
        viewer: connection.caller,
        view: view))
  }

  /// Takes what the log reader thread read: answers `history`, sends
  /// replay pages, and resumes the connections that waited. Each output
  /// is popped, not iterated over: the drained list would otherwise share
  /// each page's buffer until the last output is handled, so a history
  /// page's queue that emptied in the meantime could not be emptied in
  /// place (it gets a new buffer), and a replay page's buffer would reach
  /// the reader still shared, and be freed here (a munmap on the loop;
  /// perf). `consume` ends each binding there, so the buffer is normally
  /// unshared by then; if the optimizer keeps a copy, it costs a buffer.
  func drainReaderOutputs() {
    var outputs = readerOutputs.drain()
    outputs.reverse()
    while let output = outputs.popLast() { take(output) }
  }

  private func take(_ output: consuming ReaderOutput) {
    switch consume output {
    case .history(let ticket, let result):
      guard let connection = connections[ticket.connection] else { return }
      connection.barriersInFlight -= 1
      switch consume result {
      case .success(var response):
        respond(ticket, on: connection, builtLine: &response)
        // What is left (the connection's emptied output buffer, or an
        // empty one of the page's size when the page waits its turn) goes
        // back to the reader for its next page.
        giveBack(response)
      case .failure(let error):
        fail(ticket, on: connection, .storageFailure("reading the change log failed: \(error)"))
      }
      pump(connection)
    case .replay(let id, let watch, let after, let result):
      guard let connection = connections[id] else { return }
      continueReplay(watch, on: connection, after: after, result)
      // The page's buffer back to the reader, to write the next page into
      // (fresh memory of this size is mmap'd, and faulted in page by page).
      if case .success(let page) = consume result { giveBack(page.events) }
      if !connection.isClosed { pump(connection) }
    case .stopped:
      readerStopped = true
    }
  }

  /// A buffer back to the log reader for its next page, unless it is
  /// empty or too big to keep.
  private func giveBack(_ spare: consuming [UInt8]) {
    if spare.capacity > 0 && spare.capacity <= 1 << 20 { readerSpares.push(spare) }
  }
}
