import CShim
import Glibc
import SwitchCore
import SwitchProtocol
import SwitchStore
import SwitchSystem

// A connection's input and output: reading, pumping, sending, epoll interest, closing.
extension Server {
  // MARK: Connections

  func connectionEvent(_ token: UInt64, _ events: UInt32) {
    guard let connection = connections[token] else { return }
    if events & UInt32(SHIM_EPOLLERR | SHIM_EPOLLHUP) != 0 {
      // Gone, but what it sent before is in the socket still: carried out.
      connection.hungUp = true
      connection.interest = 0
      _ = shim_epoll_ctl(epoll, Int32(SHIM_EPOLL_DEL), connection.fd, 0, 0)
    }
    if events & UInt32(SHIM_EPOLLIN | SHIM_EPOLLRDHUP) != 0 || connection.hungUp {
      if backlogPerUser.over.isEmpty { readInput(connection) } else { readMaybeHeld(connection) }
    }
    if !connection.isClosed { pump(connection) }
  }

  static let readChunk = 65_536
  /// Writes one connection may have at the writer at once.
  static let maxWritesInFlight = 64
  /// Writes one non-administrator uid may have at the writer at once, over
  /// all its connections: what one group commit carries of it at most.
  static let maxWritesInFlightPerUser = 256
  /// A batch stops being served once its answer has this many bytes; the
  /// rest of its requests are answered `Overloaded`.
  static let maxBatchAnswerBytes = 4 << 20

  /// `readInput` while some uid is over its backlog: a connection held
  /// reads as `mayReadWhileHeld` lets it. Apart, so that the common path
  /// stays as small as it was (inlined into the loop's turn).
  @inline(never)
  private func readMaybeHeld(_ connection: Connection) {
    if mayTakeRequests(connection) {
      readInput(connection)
    } else if connection.framer.bufferedCount == 0 {
      readInput(connection, chunks: 1)
    }
  }

  /// Reads what the socket holds, a few chunks at most; true when it read
  /// something or the end.
  @discardableResult
  func readInput(_ connection: Connection, chunks: Int = 4) -> Bool {
    guard !stopping, !connection.inputClosed else { return false }
    var progressed = false
    // A few reads per wake-up, so one busy client cannot starve the rest.
    for _ in 0..<chunks {
      if connection.framer.bufferedCount > limits.maxFrameBytes + Self.readChunk {
        return progressed
      }
      let n = readBuffer.withUnsafeMutableBytes { raw in
        retryingEINTR { recv(connection.fd, raw.baseAddress, raw.count, Int32(MSG_DONTWAIT)) }
      }
      if n > 0 {
        // After a varlink Watch nothing more is taken (`varlinkWatchStreams`):
        // what comes is read only to see the end, so it cannot fill the framer.
        if !connection.varlinkWatchStreams {
          readBuffer.withUnsafeBytes {
            connection.framer.append(UnsafeRawBufferPointer(rebasing: $0[0..<n]))
          }
        }
        progressed = true
        if n < Self.readChunk && !connection.hungUp { return true }
      } else if n == 0 {
        connection.inputClosed = true
        return true
      } else if errno == EAGAIN || errno == EWOULDBLOCK {
        // A peer that is gone sends nothing more: this is its end.
        if connection.hungUp { connection.inputClosed = true }
        return progressed || connection.hungUp
      } else {
        // A reset peer (after what it sent was read): its end.
        if connection.hungUp {
          connection.inputClosed = true
          return true
        }
        closeConnection(connection, why: nil)
        return false
      }
    }
    return progressed
  }

  /// Serves a connection until nothing more can happen now: runs what can
  /// run, takes frames while the unsent output is under the high-water
  /// mark, continues replays, and sends. A send that drains the output goes
  /// round again, because what it held back (frames already read, a paused
  /// replay) has no event of its own to resume it: the peer may only be
  /// reading. Then sets what to wait for.
  func pump(_ connection: Connection) {
    while !connection.isClosed {
      // Out of epoll once gone: the rest of its input is read from here.
      var progressed = connection.hungUp && readInput(connection)
      progressed = runRequests(connection) || progressed
      progressed = continueReplays(connection) || progressed
      let wasFull = connection.unsentCount > limits.highWater
      guard !connection.isClosed else { return }
      let sent = sendQueued(connection)
      if sent == .failed { return }
      // Above the mark, or with the send budget spent, EPOLLOUT brings us
      // back (once the peer reads, or next turn). Under it, go round again
      // if this round did something or the send made room.
      if sent == .budgetSpent || connection.unsentCount > limits.highWater { break }
      if !(progressed || wasFull) { break }
    }
    guard !connection.isClosed else { return }
    settle(connection)
  }

  /// Sends the events a publish queued, or the answers a commit filled. A
  /// connection with nothing else to do — no request waiting, no frame
  /// read, no replay, input open, still in epoll — needs just the send,
  /// which is all a pump would do for it (fan-out to a thousand watchers is
  /// a thousand of these; a toggle's answer one, ~200 instructions less
  /// than a pump, callgrind); and when the send drains the queue of a
  /// connection that reads as usual, its epoll interest stands. Anything
  /// else gets the whole pump (a peer that hung up is read to its end there).
  func sendOrPump(_ connection: Connection) {
    guard !connection.hasPending, connection.framer.bufferedCount == 0,
      connection.replaysUnfinished == 0, !connection.inputClosed, !connection.hungUp, !stopping
    else { return pump(connection) }
    switch sendQueued(connection) {
    case .failed: return
    case .drained where connection.interest == Self.readingInterest && connection.backlog == 0:
      return
    default: settle(connection)
    }
  }

  static let readingInterest = UInt32(SHIM_EPOLLIN | SHIM_EPOLLRDHUP)

  /// Runs pending requests in order and frames new ones while the output
  /// has room; true when it ran or framed anything.
  func runRequests(_ connection: Connection) -> Bool {
    var progressed = false
    connection.heldForBacklog = false
    while !connection.isClosed {
      if let next = connection.nextPending {
        let turn = turn(of: next, on: connection)
        if turn == .wait { break }
        _ = connection.popPending()
        if turn == .start { execute(next, on: connection) }
        progressed = true
        continue
      }
      // Once the threads are told to stop, no new frame is taken; nor after
      // a varlink Watch, whose replies never end.
      if connection.unsentCount > limits.highWater || stopSentToReader
        || connection.varlinkWatchStreams
      {
        break
      }
      if !backlogPerUser.over.isEmpty && connection.framer.bufferedCount > 0
        && !mayTakeRequests(connection)
      {
        connection.heldForBacklog = true
        break
      }
      guard let frame = connection.framer.next() else { break }
      accept(frame, on: connection)
      progressed = true
    }
    return progressed
  }

  /// What a request at the head of its connection's queue does now.
  enum Turn {
    case start
    case wait
    /// Its peer is gone and it wants an answer: it is dropped, not started.
    case drop
  }

  func turn(of request: PendingRequest, on connection: Connection) -> Turn {
    // Once the peer is gone, a call that wants an answer is not started
    // (no one can read it); one that wants none was complete when sent.
    if connection.hungUp && request.answer != nil { return .drop }
    // Reads wait for the writes before them (read your writes); writes
    // wait once a connection has many in flight, so a client that
    // never reads cannot queue answers without bound. Everything waits
    // for a barrier in flight (`Connection.barriersInFlight`): a log read,
    // for the same reason; a reload, so that what follows it sees what it
    // loaded; a call polkit is asked about, to keep the order.
    let isWrite = request.method?.isWrite == true
    if connection.writesInFlight > 0 && !isWrite { return .wait }
    if connection.barriersInFlight > 0 { return .wait }
    if connection.writesInFlight >= Self.maxWritesInFlight { return .wait }
    // Administrators are exempt, as from MaxConnectionsPerUser.
    if isWrite && !connection.caller.isAdmin
      && !writesPerUser.mayHandOver(uid: connection.peer.uid, connection: connection.id)
    {
      return .wait
    }
    return .start
  }

  /// Runs a request just framed at once when nothing waits before it and
  /// its turn has come (nearly always): it is never queued, copied into the
  /// queue and out again. Else it is queued, as `runRequests` would.
  func startOrQueue(_ request: consuming PendingRequest, on connection: Connection) {
    guard !connection.hasPending else { return connection.enqueue(request) }
    switch turn(of: request, on: connection) {
    case .start: execute(request, on: connection)
    case .drop: break
    case .wait: connection.enqueue(request)
    }
  }

  /// Bytes one pump sends at most: a client reading a big answer (a
  /// history page, a replay) does not hold the loop for all of it while
  /// other clients wait; the rest goes next turn.
  static let sendBudget = 64 << 10

  /// Sends what is queued, up to the budget; closes the connection when the
  /// peer is gone (`.failed`).
  func sendQueued(_ connection: Connection) -> Connection.SendResult {
    guard connection.unsentCount > 0 else { return .drained }
    if connection.hungUp {
      connection.discardQueued()
      return .drained
    }
    let result = connection.sendQueued(budget: Self.sendBudget)
    if result == .failed {
      closeConnection(connection, why: nil)
      return .failed
    }
    connection.compactOut()
    return result
  }

  /// After a pump: closes a half-closed connection that has nothing left to
  /// answer or replay, otherwise updates the epoll interest.
  func settle(_ connection: Connection) {
    countBacklog(connection)
    // A peer that is gone leaves the slots of the calls not started open.
    let idle =
      !connection.hasPending && connection.writesInFlight == 0 && connection.barriersInFlight == 0
      && (connection.slots.isEmpty || connection.hungUp) && connection.unsentCount == 0
      && !isReplaying(connection)
    // A pump ends with an empty framer unless something else holds it back,
    // which `idle` rules out (or the daemon is stopping, and drops it), or
    // its uid's backlog (it is handed back, and closes after its requests).
    if connection.inputClosed && idle && !connection.heldForBacklog {
      closeConnection(connection, why: nil)
      return
    }
    // Out of epoll: the answers of its calls in flight resume it.
    if connection.hungUp { return }
    var want = UInt32(0)
    let mayRead =
      !stopping && !connection.inputClosed && connection.unsentCount <= limits.highWater
      && connection.framer.bufferedCount <= limits.maxFrameBytes + Self.readChunk
      && (backlogPerUser.over.isEmpty || mayReadWhileHeld(connection))
    if mayRead { want |= Self.readingInterest }
    if connection.unsentCount > 0 { want |= UInt32(SHIM_EPOLLOUT) }
    if want != connection.interest {
      connection.interest = want
      _ = shim_epoll_ctl(epoll, Int32(SHIM_EPOLL_MOD), connection.fd, want, connection.id)
    }
  }

  /// Counts `connection`'s unsent bytes against its uid when they are past
  /// the high-water mark, and none when they are not or it closed
  /// (`BacklogPerUser`); what that hands back is resumed at the end of the turn.
  @inline(__always)
  func countBacklog(_ connection: Connection) {
    // Nearly always: nothing counted and nothing past the mark (inlined:
    // every pump ends here).
    if connection.backlog == 0 && connection.unsentCount <= limits.highWater { return }
    recountBacklog(connection)
  }

  private func recountBacklog(_ connection: Connection) {
    let unsent = connection.unsentCount
    let counts = !connection.isClosed && !connection.caller.isAdmin
    let now = counts && unsent > limits.highWater ? unsent : 0
    guard now != connection.backlog else { return }
    let delta = now - connection.backlog
    connection.backlog = now
    backlogResumes.append(contentsOf: backlogPerUser.changed(uid: connection.peer.uid, by: delta))
  }

  /// False while `connection`'s uid is over its backlog (`BacklogPerUser`):
  /// it then frames no request, and reads only as `mayReadWhileHeld` lets
  /// it, until `backlogPerUser` hands it back. A peer that is gone is not
  /// held: it is answered nothing, and what it sent that wants no answer
  /// is carried out. Once the daemon is stopping, what was read is taken
  /// as before.
  @inline(__always)
  func mayTakeRequests(_ connection: Connection) -> Bool {
    backlogPerUser.over.isEmpty || connection.caller.isAdmin || connection.hungUp || stopping
      || backlogPerUser.mayTake(uid: connection.peer.uid, connection: connection.id)
  }

  /// Whether `connection` may read: a held one (`mayTakeRequests`) reads
  /// only while it holds no input, one chunk (`readChunk`) at a time, so
  /// that it sees its peer's end (a one-shot client waits for it) and
  /// holds at most one chunk unframed.
  @inline(__always)
  func mayReadWhileHeld(_ connection: Connection) -> Bool {
    connection.framer.bufferedCount == 0 || mayTakeRequests(connection)
  }

  /// Pumps the connections held for their uid's backlog that may go on;
  /// until none is handed back, since a pump here may send and hand back more.
  func resumeHeldForBacklog() {
    while !backlogResumes.isEmpty {
      let ids = backlogResumes
      backlogResumes.removeAll()
      for id in ids {
        if let connection = connections[id], !connection.isClosed { pump(connection) }
      }
    }
  }

  func closeConnection(_ connection: Connection, why: String?) {
    guard connections.removeValue(forKey: connection.id) != nil else { return }
    connection.isClosed = true
    countBacklog(connection)
    if !backlogPerUser.over.isEmpty {
      backlogPerUser.forget(uid: connection.peer.uid, connection: connection.id)
    }
    let uid = connection.peer.uid
    if let held = connectionsPerUID[uid], held > 1 {
      connectionsPerUID[uid] = held - 1
    } else {
      connectionsPerUID[uid] = nil
    }
    if let why {
      log.rateLimited(
        .notice, cause: why, "closed a connection (pid \(connection.peer.pid)): \(why)")
    }
    for id in connection.watchIDs { hub.remove(id) }
    forgetPolkitChecks(of: connection.id)
    // Behind its writes, in the same queue: the revert follows the change.
    if connection.madeTriedChange { writesThisTurn.append(.connectionClosed(connection.id)) }
    connection.closeUnsentDescriptors()
    _ = shim_epoll_ctl(epoll, Int32(SHIM_EPOLL_DEL), connection.fd, 0, 0)
    close(connection.fd)
  }
}
