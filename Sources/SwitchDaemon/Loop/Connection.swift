import CShim
import Glibc
import SwitchCore
import SwitchProtocol
import SwitchSystem

/// One client connection, owned by the event loop thread.
///
/// Input is framed into lines; each line that needs an answer gets a
/// response slot, and slots are written out strictly in order, so pipelined
/// requests are answered in order however long a write takes. Requests run
/// in order too: a read that follows a write still in flight waits for it,
/// so a client always reads its own writes, and every request waits for a
/// log read (`history`) still in flight.
final class Connection {
  let id: UInt64
  let fd: Int32
  let peer: Peer
  /// The socket it came in on: JSON-RPC lines or varlink messages.
  let wire: WireFormat
  /// The byte after each message out (a newline, or varlink's NUL).
  let terminator: UInt8
  /// The peer's rights, as of the configuration in force (a reload
  /// recomputes them).
  var caller: Caller
  /// The peer process's start time (`ProcessStartTime`), read when it
  /// connected under `Authorization=polkit`: with its pid, the polkit
  /// subject that a process reusing the pid cannot pass for.
  var processStartTime: UInt64?
  var framer: LineFramer

  /// Requests of lines already framed, not yet run, in order.
  var pending: [PendingRequest] = []
  var pendingHead = 0
  /// Writes handed to the writer and not yet answered.
  var writesInFlight = 0
  /// Calls not yet answered that every later call of this connection
  /// waits for: `history` reads handed to the log reader, backups to
  /// their thread, calls waiting for polkit, and reloads (a call after a
  /// `reload` is judged by the configuration it loaded).
  var barriersInFlight = 0
  /// Response slots, oldest first.
  var slots: [Slot] = []
  var nextSlot: UInt64 = 1

  /// Bytes queued for the socket, from `outStart` (those before it went
  /// out: a drained queue keeps up to `keptSentBytes` of them).
  var out: [UInt8] = []
  var outStart = 0
  /// Response bytes queued since all was last sent: responses are
  /// flow-controlled (we stop reading), so only events count towards the
  /// disconnect bound.
  var responseBytesQueued = 0
  /// Descriptors to pass to the peer (a backup's file), each with the index
  /// in `out` of the first byte of the line it goes with, in order. Owned
  /// until passed; closed with the connection (`Connection+Descriptors`).
  var descriptorsToSend: [(at: Int, fd: Int32)] = []
  /// Bytes queued ahead of `out`, each sent from its own buffer
  /// (`Connection+SharedParts`): a large answer's part that other
  /// connections' queues share, as they are, with what was unsent before it.
  var ahead: [(bytes: [UInt8], start: Int)] = []
  /// The bytes of `ahead` not yet sent.
  var aheadUnsent = 0
  /// Its unsent bytes as last counted against its uid (`BacklogPerUser`).
  var backlog = 0
  /// Its last pump left requests unframed for its uid's backlog.
  var heldForBacklog = false

  var watchIDs: [String] = []
  /// Watches started with `since` that have not yet caught up with the
  /// loop's revision, at most: an unwatch may leave it high, never low. At
  /// zero, a pump after every published event skips looking each watch up.
  var replaysUnfinished = 0
  /// The first revision of the last `publish` that queued events here.
  var publishMark: Int64 = 0
  /// Its unsent event bytes when that publish began: the disconnect bound
  /// is judged on what it had not read of earlier batches (a watcher
  /// reading at full speed was cut off when one group commit's events
  /// alone passed the bound, an audit).
  var eventBytesBeforeBatch = 0
  /// The last `Server.drainMark` that listed it to be resumed.
  var resumeMark: UInt64 = 0
  /// The epoll events this connection is registered for.
  var interest: UInt32 = 0
  /// The peer closed its sending side: answer what it sent, then close.
  var inputClosed = false
  /// The peer is gone (EPOLLHUP or EPOLLERR): nothing sent reaches it any
  /// more. What it sent before going is still read, and the calls that want
  /// no answer are carried out — a oneway call or a notification and then a
  /// close, as `varlinkctl call --oneway` does; calls that want one are not
  /// started, and the answers of those in flight are dropped. Then the
  /// connection closes. Out of epoll, which cannot mask a hang-up: the loop
  /// reads the rest itself and resumes the connection as its calls in
  /// flight are answered.
  var hungUp = false
  /// The loop closed this connection; it is no longer served.
  var isClosed = false
  /// It sent a tried change with `revertOnDisconnect` (rule 20): the writer
  /// hears when it closes.
  var madeTriedChange = false
  /// A varlink `Watch` streams on it: its replies never end, so no later
  /// call is taken (replies strictly in call order, PROTOCOL.md; a varlink
  /// client makes one call at a time, and sd-varlink reads no further call
  /// while a `more` call's replies go on). What comes after is discarded.
  var varlinkWatchStreams = false

  init(
    id: UInt64, fd: Int32, peer: Peer, caller: Caller, maxFrameBytes: Int,
    wire: WireFormat = .jsonRPC
  ) {
    self.id = id
    self.fd = fd
    self.peer = peer
    self.caller = caller
    self.wire = wire
    self.terminator = wire.terminator
    self.framer = LineFramer(maxFrameBytes: maxFrameBytes, delimiter: wire.terminator)
  }

  var unsentCount: Int { aheadUnsent + out.count - outStart }
  /// Unsent bytes that are events (responses are flow-controlled).
  var unsentEventBytes: Int { unsentCount - min(responseBytesQueued, unsentCount) }
  var hasPending: Bool { pendingHead < pending.count }

  // MARK: Slots

  /// Opens a slot for a line with `parts` answers (1 for a single request).
  func openSlot(parts: Int, isBatch: Bool) -> UInt64 {
    let seq = nextSlot
    nextSlot += 1
    slots.append(Slot(seq: seq, isBatch: isBatch, parts: parts))
    return seq
  }

  /// Fills one answer of a slot; completed slots at the head go out.
  /// `lineEnded`: `bytes` end with the line end already (a single
  /// request's whole line, kept as it is).
  func fill(slot seq: UInt64, part: Int, with bytes: [UInt8], lineEnded: Bool = false) {
    guard let first = slots.first, seq >= first.seq else { return }
    let index = Int(seq - first.seq)
    guard index < slots.count else { return }
    if slots[index].isBatch {
      guard part < slots[index].parts.count else { return }
      slots[index].parts[part] = lineEnded ? Array(bytes.dropLast()) : bytes
    } else {
      guard part == 0, slots[index].single == nil else { return }
      slots[index].single = bytes
      slots[index].singleIsLine = lineEnded
    }
    slots[index].remaining -= 1
    slots[index].bytes += bytes.count
    flushCompletedSlots()
  }

  /// Bytes of the answers gathered so far for a batch's slot (0 when gone).
  func answeredBytes(slot seq: UInt64) -> Int {
    guard let first = slots.first, seq >= first.seq, Int(seq - first.seq) < slots.count else {
      return 0
    }
    return slots[Int(seq - first.seq)].bytes
  }

  /// Writes a single answer straight into the output queue when its slot is
  /// the next to go out (the common case); false when it must wait its turn.
  /// `scratch`: the loop's one writer, emptied first, its buffer kept
  /// from answer to answer (the answer is one copy into the queue).
  func writeDirectly(
    slot seq: UInt64, through scratch: inout JSONWriter, _ body: (inout JSONWriter) -> Void
  ) -> Bool {
    guard let first = slots.first, first.seq == seq, !first.isBatch else { return false }
    let before = out.count
    scratch.removeAll(keepingAtMost: 1 << 20)
    body(&scratch)
    scratch.append(terminator)
    scratch.copy(to: &out)
    responseBytesQueued += out.count - before
    dropSlots(1)
    flushCompletedSlots()
    return true
  }

  /// Queues a whole response line (an answer object and its line end) for
  /// a single request's slot. When nothing is waiting to be sent and the
  /// slot is next, the line's buffer becomes the output queue instead of
  /// being copied into it (a history page is ~500 KB), untouched: it may
  /// still be shared. `bytes` is left empty, holding a buffer the caller
  /// may reuse.
  func queue(line bytes: inout [UInt8], slot seq: UInt64, part: Int) {
    if unsentCount == 0, let first = slots.first, first.seq == seq, !first.isBatch {
      // What the queue held was sent (emptied below, to be given back).
      swap(&out, &bytes)
      outStart = 0
      responseBytesQueued += out.count
      dropSlots(1)
      flushCompletedSlots()
    } else {
      fill(slot: seq, part: part, with: bytes, lineEnded: true)
    }
    bytes.removeAll(keepingCapacity: true)
  }

  func flushCompletedSlots() {
    var done = 0
    for slot in slots {
      guard slot.remaining == 0 else { break }
      let before = out.count
      for descriptor in slot.descriptors { descriptorsToSend.append((before, descriptor)) }
      if slot.isBatch {
        out.append(UInt8(ascii: "["))
        for (i, part) in slot.parts.enumerated() {
          if i > 0 { out.append(UInt8(ascii: ",")) }
          out.append(contentsOf: part ?? [])
        }
        out.append(UInt8(ascii: "]"))
      } else {
        out.append(contentsOf: slot.single ?? [])
      }
      if !slot.singleIsLine { out.append(terminator) }
      responseBytesQueued += out.count - before
      done += 1
    }
    if done > 0 { dropSlots(done) }
  }

  /// Removes the first `count` slots; all of them (the common case) without shifting.
  func dropSlots(_ count: Int) {
    if count == 1 && slots.count == 1 {
      // The common case, one answer: removeAll goes through the generic
      // replaceSubrange (~190 instructions a call, callgrind).
      slots.removeLast()
    } else if count == slots.count {
      slots.removeAll(keepingCapacity: true)
    } else {
      slots.removeFirst(count)
    }
  }

  // MARK: Pending requests

  func enqueue(_ request: consuming PendingRequest) {
    if pendingHead > 0 && pendingHead == pending.count {
      pending.removeAll(keepingCapacity: true)
      pendingHead = 0
    }
    pending.append(request)
  }

  func popPending() -> PendingRequest? {
    guard hasPending else { return nil }
    let request = pending[pendingHead]
    pendingHead += 1
    return request
  }

  var nextPending: PendingRequest? { hasPending ? pending[pendingHead] : nil }

  // MARK: Socket

  enum SendResult {
    case drained
    case wouldBlock
    /// `budget` bytes went out and more are queued.
    case budgetSpent
    case failed
  }

  /// Sends as much of the queue as the socket takes now, up to `budget` bytes.
  func sendQueued(budget: Int = .max) -> SendResult {
    var sent = 0
    if !ahead.isEmpty {
      let result = sendAhead(budget: budget, sent: &sent)
      if result != .drained { return result }
    }
    while outStart < out.count {
      if sent >= budget { return .budgetSpent }
      // A line that passes descriptors starts a send of its own, which carries them.
      if descriptorsToSend.first?.at == outStart {
        let n = sendPassingDescriptors(budget: budget - sent)
        if n < 0 {
          if errno == EAGAIN || errno == EWOULDBLOCK { return .wouldBlock }
          return .failed
        }
        outStart += n
        sent += n
        continue
      }
      let end = descriptorsToSend.first?.at ?? out.count
      let n = out.withUnsafeBytes { raw in
        retryingEINTR {
          Glibc.send(
            fd, raw.baseAddress! + outStart, min(end - outStart, budget - sent),
            Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT))
        }
      }
      if n < 0 {
        if errno == EAGAIN || errno == EWOULDBLOCK { return .wouldBlock }
        return .failed
      }
      outStart += n
      sent += n
    }
    // All of it went out. Up to `keptSentBytes` stay, to be emptied with
    // the next answers': emptying the array after each answer cost ~80
    // instructions (callgrind). A queue grown past 1 MiB is let go, also
    // when a compaction left few bytes in it (review). So is a watcher's:
    // its events go out from the buffers every watcher shares (`sendEvent`)
    // while its queue is empty, so the buffer its `watch` answer left would
    // be held for nothing (~0.7 MB with 1,000 watchers, massif). Not while
    // it replays from `since`: its pages come one after another through
    // this buffer (`queue(events:)`).
    let watcherAtRest = !watchIDs.isEmpty && replaysUnfinished == 0
    if out.count > Self.keptSentBytes || out.capacity > 1 << 20 || watcherAtRest {
      out.removeAll(keepingCapacity: out.capacity <= 1 << 20 && !watcherAtRest)
      outStart = 0
    } else {
      outStart = out.count
    }
    responseBytesQueued = 0
    return .drained
  }

  /// Sent bytes a drained queue keeps before it is emptied: a few answers
  /// (~700 bytes each). Its buffer stays within the 1 MiB a drained queue
  /// kept before.
  static let keptSentBytes = 2048

  /// Queues event lines the log reader wrote (a replay page), copied: the
  /// queue's buffer, grown once, serves page after page, and the page's
  /// goes back to the reader. Taking the page's buffer as the queue left
  /// one buffer of the two new on every page (mmap'd at ~115 KB; perf).
  func queue(events bytes: [UInt8]) {
    out.append(contentsOf: bytes)
  }

  /// Queues an event line: the watch's `head`, then the `rest` every
  /// watcher of the change shares.
  func queueEvent(head: [UInt8], rest: [UInt8]) {
    out.append(contentsOf: head)
    out.append(contentsOf: rest)
  }

  /// Sends an event line straight from its two shared parts when nothing is
  /// queued before it (no copy into the queue), and queues what the socket
  /// does not take. True when all of it went out; false when something is
  /// queued, for a pump to send (or to find the peer gone).
  func sendEvent(head: [UInt8], rest: [UInt8]) -> Bool {
    guard unsentCount == 0 else {
      queueEvent(head: head, rest: rest)
      return false
    }
    let sent = head.withUnsafeBytes { h in
      rest.withUnsafeBytes { r in
        // A tuple, not an array: nothing to allocate per event.
        var parts = (
          iovec(iov_base: UnsafeMutableRawPointer(mutating: h.baseAddress), iov_len: h.count),
          iovec(iov_base: UnsafeMutableRawPointer(mutating: r.baseAddress), iov_len: r.count)
        )
        return withUnsafeMutablePointer(to: &parts) { pair in
          pair.withMemoryRebound(to: iovec.self, capacity: 2) { iov in
            var message = msghdr()
            message.msg_iov = iov
            message.msg_iovlen = 2
            return retryingEINTR {
              sendmsg(fd, &message, Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT))
            }
          }
        }
      }
    }
    if sent == head.count + rest.count { return true }
    let taken = max(sent, 0)
    if taken < head.count {
      out.append(contentsOf: head[taken...])
      out.append(contentsOf: rest)
    } else {
      out.append(contentsOf: rest[(taken - head.count)...])
    }
    return false
  }

  /// Drops what is queued, for a peer that is gone (`hungUp`).
  func discardQueued() {
    for descriptor in descriptorsToSend { close(descriptor.fd) }
    descriptorsToSend.removeAll()
    ahead.removeAll()
    aheadUnsent = 0
    out.removeAll(keepingCapacity: out.capacity <= 1 << 20)
    outStart = 0
    responseBytesQueued = 0
  }

  /// Keeps the queue compact when most of it has been sent.
  func compactOut() {
    if outStart > 65_536 && outStart * 2 > out.count {
      out.removeSubrange(0..<outStart)
      for i in descriptorsToSend.indices { descriptorsToSend[i].at -= outStart }
      responseBytesQueued = min(responseBytesQueued, out.count)
      outStart = 0
    }
  }
}

/// What SO_PEERCRED and SO_PEERGROUPS say of a peer.
struct Peer: Sendable {
  var uid: UInt32
  var gid: UInt32
  var pid: Int32
  var groups: [UInt32]

  /// Reads the credentials of a connected socket.
  static func of(fd: Int32) -> Peer? {
    var cred = shim_peer_cred()
    guard shim_peer_cred_get(fd, &cred) == 0 else { return nil }
    return Peer(uid: cred.uid, gid: cred.gid, pid: cred.pid, groups: groupsOf(fd: fd))
  }

  /// The peer's supplementary groups (SO_PEERGROUPS), in an array of their
  /// own size: read into the 64-entry array it kept, each connection held
  /// 288 bytes for a peer of no groups (massif, 1,000 watchers).
  private static func groupsOf(fd: Int32) -> [UInt32] {
    var capacity = 64
    while true {
      var needed: Int32 = 0
      var failure: Int32 = 0
      let groups = withUnsafeTemporaryAllocation(of: UInt32.self, capacity: capacity) {
        buffer -> [UInt32]? in
        let found = shim_peer_groups_get(fd, buffer.baseAddress!, Int32(capacity), &needed)
        failure = errno
        return found < 0 ? nil : Array(buffer[..<Int(found)])
      }
      if let groups { return groups }
      guard failure == ERANGE && needed > capacity && needed <= 65_536 else { return [] }
      capacity = Int(needed)
    }
  }

  func caller(_ access: AccessRules) -> Caller {
    Caller.peer(uid: uid, gid: gid, pid: pid, groups: groups, access: access)
  }
}

/// A response line being assembled: one answer, or one per batch element.
struct Slot {
  var seq: UInt64
  var isBatch: Bool
  /// A batch's answers, by position; a single request's is `single` (no
  /// array to allocate for the common case).
  var parts: [[UInt8]?]
  var single: [UInt8]?
  /// Whether `single` ends with its line end already (`queue(line:)`).
  var singleIsLine = false
  /// Descriptors the line passes (a backup's file), owned until then.
  var descriptors: [Int32] = []
  var remaining: Int
  /// Bytes of the answers filled in so far.
  var bytes = 0

  init(seq: UInt64, isBatch: Bool, parts: Int) {
    self.seq = seq
    self.isBatch = isBatch
    self.parts = isBatch ? Array(repeating: nil, count: parts) : []
    self.remaining = parts
  }
}

/// A request framed and decoded, waiting its turn on its connection: its
/// method and params are decoded once, when its line is framed.
struct PendingRequest {
  /// `.null` for a notification too (carried out, never answered: its
  /// `answer` is nil). Not optional: the answer's ticket copied an
  /// optional id through a generic value witness (~120 instructions a
  /// request, callgrind).
  var id: RequestID
  /// nil when no method has the request's name (`call` then says so).
  var method: Method?
  /// The params decoded for `method`, or why they are not right.
  var call: Result<Call, RPCError>
  var answer: (slot: UInt64, part: Int)?
  /// How the reply is wrapped, for a varlink call (`init(varlink:…)`).
  var varlink: VarlinkReply?
  /// `allowInteractiveAuthentication`: polkit may ask the person.
  var allowsInteraction = false

  init(_ request: Request, answer: (slot: UInt64, part: Int)?, limits: ParamLimits) {
    id = request.id ?? .null
    self.answer = answer
    allowsInteraction = Call.allowsInteractiveAuthentication(request.params)
    method = Method.named(request.method)
    call =
      method.map { Call.decode($0, params: request.params, limits: limits) }
      ?? .failure(.methodNotFound(request.method))
  }

  /// A request the fast path decoded whole (`RequestDecoder.decodeCall`).
  init(_ decoded: consuming DecodedCall, answer: (slot: UInt64, part: Int)?) {
    id = decoded.id ?? .null
    self.answer = answer
    method = decoded.method
    call = .success(decoded.call)
  }
}
