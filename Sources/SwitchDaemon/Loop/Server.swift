import CShim
import Glibc
import SwitchCore
import SwitchProtocol
import SwitchStore
import SwitchSystem

/// The event loop: one thread, epoll, non-blocking sockets. It owns the
/// connections, the watches and the loop's copy of every switch, answers
/// reads from memory, hands writes to the writer thread and reads of the
/// change log (`history`, `watch since`) to the log reader thread, and
/// publishes committed changes. It never touches SQLite, so it never waits
/// for the disk.
final class Server {
  struct Limits {
    var maxFrameBytes: Int
    var maxConnections: Int
    var maxConnectionsPerUser: Int
    var maxQueuedBytes: Int
    var maxWatchesPerConnection: Int
    var maxNestingDepth: Int
    var params: ParamLimits

    init(_ settings: DaemonSettings) {
      maxFrameBytes = settings.maxFrameBytes
      maxConnections = settings.maxConnections
      maxConnectionsPerUser = settings.maxConnectionsPerUser
      maxQueuedBytes = settings.maxQueuedBytes
      maxWatchesPerConnection = settings.maxWatchesPerConnection
      maxNestingDepth = settings.maxNestingDepth
      params = ParamLimits(maxHistoryPage: settings.maxHistoryPage)
    }

    /// Above this many unsent bytes a connection's input is paused.
    var highWater: Int { min(256 << 10, max(4096, maxQueuedBytes / 2)) }
  }

  // epoll data words below this are the loop's own descriptors.
  private static let listenerToken: UInt64 = 0
  private static let wakeToken: UInt64 = 1
  private static let signalToken: UInt64 = 2
  private var nextConnectionID: UInt64 = 16

  let log: Log
  private let epoll: Int32
  let wakeFD: Int32
  private let signalFD: Int32
  private var listener: Listener?
  let databasePath: String
  let readerJobs = BlockingQueue<ReaderJob>()
  let readerOutputs = BlockingQueue<ReaderOutput>()
  /// Emptied buffers going back to the reader for its next history page.
  let readerSpares = BlockingQueue<[UInt8]>()
  let backups = Backups()
  let jobs: BlockingQueue<WriterJob>
  let outputs: BlockingQueue<WriterOutput>
  let notifier: Notifier
  private let startedAt = monotonicSeconds()

  var connections: [UInt64: Connection] = [:]
  /// Open connections by peer uid, for `MaxConnectionsPerUser`.
  private var connectionsPerUID: [UInt32: Int] = [:]
  /// Writes at the writer by peer uid: one user cannot fill every group.
  var writesPerUser = WritesPerUser(limit: Server.maxWritesInFlightPerUser)
  /// Writes submitted during this turn of the loop, not yet handed over.
  private var writesThisTurn: [WriterJob] = []
  var hub = WatchHub()
  /// The declared switches' Switch objects, encoded once until they change.
  var encodings: SwitchEncodings
  var limits: Limits

  // The loop's copy of the switches: what committed, as of `revision`.
  var catalog: Catalog
  /// Who administers and who writes: every connection's `caller` follows from it.
  var access: AccessRules
  var records: [String: SwitchRecord]
  /// Every user's own values of user-scope switches, as of `revision`.
  var userValues: UserValues
  var revision: Int64
  var oldestRetained: Int64?

  var stopping = false
  var writerStopped = false
  var readerStopped = false
  /// Once the reader is told to stop, no new frame is taken and no replay
  /// page or history read is asked for; requests already framed still run
  /// (a write is refused `Overloaded` once the writer is told to stop).
  private(set) var stopSentToReader = false
  private var stopSentToWriter = false
  private var stopDeadline = 0.0
  private var acceptPausedUntil = 0.0
  private var nextWatchdog = 0.0

  init(
    listener: Listener, databasePath: String, configDirectory: String, catalog: Catalog,
    access: AccessRules,
    writerSnapshot: (records: [String: SwitchRecord], revision: Int64, oldest: Int64?),
    userValues: UserValues = [:], reconciling: Int = 0, jobs: BlockingQueue<WriterJob>,
    outputs: BlockingQueue<WriterOutput>, wakeFD: Int32,
    signalFD: Int32, notifier: Notifier, log: Log
  ) throws {
    self.listener = listener
    self.databasePath = databasePath
    self.configDirectory = configDirectory
    self.configReader = ConfigReader(directory: configDirectory, log: log, writerJobs: jobs)
    self.catalog = catalog
    self.access = access
    self.records = writerSnapshot.records
    self.userValues = userValues
    self.reconciling = reconciling
    self.revision = writerSnapshot.revision
    self.oldestRetained = writerSnapshot.oldest
    self.jobs = jobs
    self.outputs = outputs
    self.wakeFD = wakeFD
    self.signalFD = signalFD
    self.notifier = notifier
    self.log = log
    self.limits = Limits(catalog.settings)
    self.encodings = SwitchEncodings(
      sortedKeys: catalog.sortedKeys, isUserScoped: { catalog.switches[$0]?.scope == .user })
    epoll = shim_epoll_create()
    guard epoll >= 0 else { throw SystemError.last("epoll_create1") }
    register(listener.fd, token: Self.listenerToken, events: UInt32(SHIM_EPOLLIN))
    register(wakeFD, token: Self.wakeToken, events: UInt32(SHIM_EPOLLIN))
    if signalFD >= 0 { register(signalFD, token: Self.signalToken, events: UInt32(SHIM_EPOLLIN)) }
    // The reader wakes the loop through the writer's eventfd: one wake-up
    // drains both threads' outputs.
    let readerOutputs = self.readerOutputs
    try LogReader.start(databasePath: databasePath, jobs: readerJobs, spares: readerSpares) {
      output in
      readerOutputs.push(output)
      var one: UInt64 = 1
      _ = write(wakeFD, &one, 8)
    }
  }

  private func register(_ fd: Int32, token: UInt64, events: UInt32) {
    _ = shim_epoll_ctl(epoll, Int32(SHIM_EPOLL_ADD), fd, events, token)
  }

  // MARK: The loop

  /// Serves until SIGTERM or SIGINT, then finishes the writes received,
  /// answers them, and returns.
  func run() {
    if let interval = notifier.watchdogInterval { nextWatchdog = monotonicSeconds() + interval }
    while !finished { turn(timeoutMilliseconds: loopTimeoutMilliseconds()) }
    finishShutdown()
  }

  /// Whether the loop is done: stopping and the writer has ended, or epoll failed.
  var finished: Bool { (writerStopped && stopping) || epollFailed }
  private var epollFailed = false

  private var events = [UInt32](repeating: 0, count: 256)
  private var tokens = [UInt64](repeating: 0, count: 256)

  /// One turn of the loop: waits for events (at most `timeoutMilliseconds`)
  /// and serves them. Tests drive the loop with it from their own thread.
  func turn(timeoutMilliseconds: Int32) {
    let n = shim_epoll_wait(epoll, &events, &tokens, 256, timeoutMilliseconds)
    if n < 0 && errno != EINTR {
      log.error("epoll_wait failed: \(SystemError.last("epoll_wait"))")
      epollFailed = true
      return
    }
    for i in 0..<max(0, Int(n)) {
      switch tokens[i] {
      case Self.listenerToken: acceptConnections()
      case Self.wakeToken:
        drainWriterOutputs()
        drainReaderOutputs()
        drainBackups()
      case Self.signalToken: handleSignals()
      default: connectionEvent(tokens[i], events[i])
      }
    }
    handOverWrites()
    tick()
  }

  private func loopTimeoutMilliseconds() -> Int32 {
    var timeout = 1000.0
    let now = monotonicSeconds()
    if notifier.watchdogInterval != nil { timeout = min(timeout, max(0, nextWatchdog - now)) }
    if acceptPausedUntil > now { timeout = min(timeout, acceptPausedUntil - now) }
    if stopping { timeout = min(timeout, 0.05) }
    return Int32(timeout * 1000) + 1
  }

  /// Timers: the watchdog ping (only a loop that turns pings), resuming
  /// accept after EMFILE, and the shutdown sequence.
  private func tick() {
    let now = monotonicSeconds()
    if let interval = notifier.watchdogInterval, now >= nextWatchdog {
      notifier.send("WATCHDOG=1")
      nextWatchdog = now + interval
    }
    if acceptPausedUntil != 0, now >= acceptPausedUntil, let listener, !stopping {
      acceptPausedUntil = 0
      _ = shim_epoll_ctl(
        epoll, Int32(SHIM_EPOLL_MOD), listener.fd, UInt32(SHIM_EPOLLIN), Self.listenerToken)
    }
    if stopping && !stopSentToReader {
      let busy = connections.values.contains {
        $0.writesInFlight > 0 || $0.readsInFlight > 0 || $0.hasPending
      }
      if !busy || now >= stopDeadline {
        readerJobs.push(.stop)
        stopSentToReader = true
      }
    }
    // The read-only connection closes first, so that the writer's close is
    // the last one and SQLite checkpoints and removes the WAL.
    if stopSentToReader && readerStopped && !stopSentToWriter {
      jobs.push(.stop)
      stopSentToWriter = true
      configReader.stop()
    }
  }

  // MARK: Signals and shutdown

  private func handleSignals() {
    while true {
      let signal = shim_signalfd_read(signalFD)
      if signal < 0 { return }
      if signal == SIGHUP {
        notifier.send("RELOADING=1")
        log.info("SIGHUP: reloading the configuration")
        configReader.reload(nil)
      } else if signal == SIGTERM || signal == SIGINT {
        beginShutdown(signal == SIGTERM ? "SIGTERM" : "SIGINT")
      }
    }
  }

  /// Stops accepting and reading; what was received still runs and is answered.
  func beginShutdown(_ why: String) {
    guard !stopping else { return }
    stopping = true
    stopDeadline = monotonicSeconds() + 10
    notifier.send("STOPPING=1")
    log.notice("\(why): stopping; finishing the writes received")
    if let listener {
      _ = shim_epoll_ctl(epoll, Int32(SHIM_EPOLL_DEL), listener.fd, 0, 0)
      listener.close()
      self.listener = nil
    }
    for connection in Array(connections.values) { pump(connection) }
  }

  /// After the writer has stopped: flush what is queued (bounded), close all.
  private func finishShutdown() {
    let deadline = monotonicSeconds() + 2
    var waiting = connections.values.filter { $0.unsentCount > 0 }
    while !waiting.isEmpty && monotonicSeconds() < deadline {
      waiting = waiting.filter { $0.sendQueued() == .wouldBlock }
      if !waiting.isEmpty { usleep(1000) }
    }
    for connection in Array(connections.values) { closeConnection(connection, why: nil) }
    close(epoll)
    log.notice("stopped at revision \(revision)")
  }

  // MARK: Accepting

  private func acceptConnections() {
    guard let listener else { return }
    for _ in 0..<64 {
      let fd = shim_accept_nonblocking(listener.fd)
      if fd < 0 {
        if errno == EINTR || errno == ECONNABORTED { continue }
        if errno == EMFILE || errno == ENFILE {
          log.rateLimited(.warning, cause: "accept", "out of file descriptors; pausing accept")
          acceptPausedUntil = monotonicSeconds() + 0.1
          _ = shim_epoll_ctl(epoll, Int32(SHIM_EPOLL_MOD), listener.fd, 0, Self.listenerToken)
        }
        return
      }
      if connections.count >= limits.maxConnections {
        refuse(fd, .overloaded("too many connections (MaxConnections=\(limits.maxConnections))"))
        log.rateLimited(
          .warning, cause: "max-connections", "refused a connection: MaxConnections reached")
        continue
      }
      guard let peer = Peer.of(fd: fd) else {
        log.rateLimited(.warning, cause: "peercred", "refused a connection: no peer credentials")
        close(fd)
        continue
      }
      let caller = peer.caller(access)
      let held = connectionsPerUID[peer.uid, default: 0]
      if held >= limits.maxConnectionsPerUser && !caller.isAdmin {
        refuse(
          fd,
          .overloaded(
            "too many connections for uid \(peer.uid) "
              + "(MaxConnectionsPerUser=\(limits.maxConnectionsPerUser))"))
        log.rateLimited(
          .warning, cause: "max-connections-per-user",
          "refused a connection of uid \(peer.uid): MaxConnectionsPerUser reached")
        continue
      }
      connectionsPerUID[peer.uid] = held + 1
      let id = nextConnectionID
      nextConnectionID += 1
      let connection = Connection(
        id: id, fd: fd, peer: peer, caller: caller, maxFrameBytes: limits.maxFrameBytes)
      connections[id] = connection
      connection.interest = Self.readingInterest
      register(fd, token: id, events: connection.interest)
    }
  }

  /// Sends one error line to a connection we will not serve, and closes it.
  private func refuse(_ fd: Int32, _ error: RPCError) {
    var w = JSONWriter(capacity: 256)
    ResponseEncoding.writeError(&w, id: .null, error)
    w.raw("\n")
    _ = w.bytes.withUnsafeBytes {
      send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT))
    }
    close(fd)
  }

  // MARK: Connections

  private func connectionEvent(_ token: UInt64, _ events: UInt32) {
    guard let connection = connections[token] else { return }
    if events & UInt32(SHIM_EPOLLERR | SHIM_EPOLLHUP) != 0 {
      closeConnection(connection, why: nil)
      return
    }
    if events & UInt32(SHIM_EPOLLIN | SHIM_EPOLLRDHUP) != 0 { readInput(connection) }
    if !connection.isClosed { pump(connection) }
  }

  private static let readChunk = 65_536
  /// Writes one connection may have at the writer at once.
  static let maxWritesInFlight = 64
  /// Writes one non-administrator uid may have at the writer at once, over
  /// all its connections: what one group commit carries of it at most.
  static let maxWritesInFlightPerUser = 256
  /// A batch stops being served once its answer has this many bytes; the
  /// rest of its requests are answered `Overloaded`.
  static let maxBatchAnswerBytes = 4 << 20
  private var readBuffer = [UInt8](repeating: 0, count: Server.readChunk)

  private func readInput(_ connection: Connection) {
    guard !stopping, !connection.inputClosed else { return }
    // A few reads per wake-up, so one busy client cannot starve the rest.
    for _ in 0..<4 {
      if connection.framer.bufferedCount > limits.maxFrameBytes + Self.readChunk { return }
      let n = readBuffer.withUnsafeMutableBytes { raw in
        retryingEINTR { recv(connection.fd, raw.baseAddress, raw.count, Int32(MSG_DONTWAIT)) }
      }
      if n > 0 {
        readBuffer.withUnsafeBytes {
          connection.framer.append(UnsafeRawBufferPointer(rebasing: $0[0..<n]))
        }
        if n < Self.readChunk { return }
      } else if n == 0 {
        connection.inputClosed = true
        return
      } else {
        if errno != EAGAIN && errno != EWOULDBLOCK { closeConnection(connection, why: nil) }
        return
      }
    }
  }

  /// Serves a connection until nothing more can happen now: runs what can
  /// run, takes frames while the unsent output is under the high-water
  /// mark, continues replays, and sends. A send that drains the output goes
  /// round again, because what it held back (frames already read, a paused
  /// replay) has no event of its own to resume it: the peer may only be
  /// reading. Then sets what to wait for.
  func pump(_ connection: Connection) {
    while !connection.isClosed {
      var progressed = runRequests(connection)
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

  /// Sends the events a publish queued. A watcher with nothing else to do —
  /// no request waiting, no frame read, no replay, input open — needs just
  /// the send, which is all a pump would do for it (fan-out to a thousand
  /// watchers is a thousand of these); and when the send drains the queue
  /// of a connection that reads as usual, its epoll interest stands. Anything
  /// else gets the whole pump.
  func sendEvents(_ connection: Connection) {
    guard !connection.hasPending, connection.framer.bufferedCount == 0,
      connection.replaysUnfinished == 0, !connection.inputClosed, !stopping
    else { return pump(connection) }
    switch sendQueued(connection) {
    case .failed: return
    case .drained where connection.interest == Self.readingInterest: return
    default: settle(connection)
    }
  }

  private static let readingInterest = UInt32(SHIM_EPOLLIN | SHIM_EPOLLRDHUP)

  /// Runs pending requests in order and frames new ones while the output
  /// has room; true when it ran or framed anything.
  private func runRequests(_ connection: Connection) -> Bool {
    var progressed = false
    while !connection.isClosed {
      if let next = connection.nextPending {
        // Reads wait for the writes before them (read your writes); writes
        // wait once a connection has many in flight, so a client that
        // never reads cannot queue answers without bound. Everything waits
        // for a log read in flight, for the same reason.
        let isWrite = Method(rawValue: next.request.method)?.isWrite == true
        if connection.writesInFlight > 0 && !isWrite { break }
        if connection.readsInFlight > 0 { break }
        if connection.writesInFlight >= Self.maxWritesInFlight { break }
        // Administrators are exempt, as from MaxConnectionsPerUser.
        if isWrite && !connection.caller.isAdmin
          && !writesPerUser.mayHandOver(uid: connection.peer.uid, connection: connection.id)
        {
          break
        }
        _ = connection.popPending()
        execute(next, on: connection)
        progressed = true
        continue
      }
      // Once the threads are told to stop, no new frame is taken.
      if connection.unsentCount > limits.highWater || stopSentToReader { break }
      guard let frame = connection.framer.next() else { break }
      accept(frame, on: connection)
      progressed = true
    }
    return progressed
  }

  /// Bytes one pump sends at most: a client reading a big answer (a
  /// history page, a replay) does not hold the loop for all of it while
  /// other clients wait; the rest goes next turn.
  static let sendBudget = 64 << 10

  /// Sends what is queued, up to the budget; closes the connection when the
  /// peer is gone (`.failed`).
  private func sendQueued(_ connection: Connection) -> Connection.SendResult {
    guard connection.unsentCount > 0 else { return .drained }
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
  private func settle(_ connection: Connection) {
    let idle =
      !connection.hasPending && connection.writesInFlight == 0 && connection.readsInFlight == 0
      && connection.slots.isEmpty && connection.unsentCount == 0 && !isReplaying(connection)
    // A pump ends with an empty framer unless something else holds it back,
    // which `idle` rules out (or the daemon is stopping, and drops it).
    if connection.inputClosed && idle {
      closeConnection(connection, why: nil)
      return
    }
    var want = UInt32(0)
    let mayRead =
      !stopping && !connection.inputClosed && connection.unsentCount <= limits.highWater
      && connection.framer.bufferedCount <= limits.maxFrameBytes + Self.readChunk
    if mayRead { want |= Self.readingInterest }
    if connection.unsentCount > 0 { want |= UInt32(SHIM_EPOLLOUT) }
    if want != connection.interest {
      connection.interest = want
      _ = shim_epoll_ctl(epoll, Int32(SHIM_EPOLL_MOD), connection.fd, want, connection.id)
    }
  }

  func closeConnection(_ connection: Connection, why: String?) {
    guard connections.removeValue(forKey: connection.id) != nil else { return }
    connection.isClosed = true
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
    connection.closeUnsentDescriptors()
    _ = shim_epoll_ctl(epoll, Int32(SHIM_EPOLL_DEL), connection.fd, 0, 0)
    close(connection.fd)
  }

  // MARK: Framing and envelopes

  private func accept(_ frame: LineFramer.Frame, on connection: Connection) {
    switch frame {
    case .oversized:
      log.rateLimited(.notice, cause: "oversized", "a line longer than MaxFrameBytes was discarded")
      let slot = connection.openSlot(parts: 1, isBatch: false)
      let error = RPCError.invalidRequest("the line is longer than \(limits.maxFrameBytes) bytes")
      connection.fill(slot: slot, part: 0, with: errorBytes(id: .null, error))
    case .line(let bytes):
      let incoming = bytes.withUnsafeBufferPointer {
        RequestDecoder.decode($0, maxDepth: limits.maxNestingDepth)
      }
      switch incoming {
      case .single(let item):
        enqueue([item], isBatch: false, on: connection)
      case .batch(let items):
        enqueue(items, isBatch: true, on: connection)
      }
    }
  }

  /// Opens one slot for the line and queues its requests; invalid ones are
  /// answered at once (their answers do not depend on any state).
  private func enqueue(_ items: [Incoming.Item], isBatch: Bool, on connection: Connection) {
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
        connection.fill(slot: slot, part: part, with: errorBytes(id: invalid.id, invalid.error))
        part += 1
      case .success(let request):
        if request.id == nil {
          connection.enqueue(PendingRequest(request: request, answer: nil))
        } else {
          connection.enqueue(PendingRequest(request: request, answer: (slot, part)))
          part += 1
        }
      }
    }
  }

  // MARK: Answers

  func answer(
    _ pending: PendingRequest, on connection: Connection, _ write: (inout JSONWriter) -> Void
  ) {
    guard let (slot, part) = pending.answer, let id = pending.request.id else { return }
    answer(Ticket(connection: connection.id, slot: slot, part: part, id: id), on: connection, write)
  }

  /// Answers a request run earlier, whose answer a thread produced.
  func answer(
    _ ticket: Ticket, on connection: Connection, _ write: (inout JSONWriter) -> Void
  ) {
    let (slot, part, id) = (ticket.slot, ticket.part, ticket.id)
    func body(_ w: inout JSONWriter) {
      ResponseEncoding.beginResult(&w, id: id)
      write(&w)
      ResponseEncoding.endResult(&w)
    }
    if connection.writeDirectly(slot: slot, body) { return }
    var w = JSONWriter(capacity: 512)
    body(&w)
    connection.fill(slot: slot, part: part, with: w.bytes)
  }

  func fail(_ pending: PendingRequest, on connection: Connection, _ error: RPCError) {
    guard let (slot, part) = pending.answer, let id = pending.request.id else { return }
    connection.fill(slot: slot, part: part, with: errorBytes(id: id, error))
  }

  func fail(_ ticket: Ticket, on connection: Connection, _ error: RPCError) {
    connection.fill(slot: ticket.slot, part: ticket.part, with: errorBytes(id: ticket.id, error))
  }

  private func errorBytes(id: RequestID, _ error: RPCError) -> [UInt8] {
    var w = JSONWriter(capacity: 256)
    ResponseEncoding.writeError(&w, id: id, error)
    return w.bytes
  }

  // MARK: Requests

  private func execute(_ pending: PendingRequest, on connection: Connection) {
    let request = pending.request
    if let (slot, _) = pending.answer,
      connection.answeredBytes(slot: slot) > Self.maxBatchAnswerBytes
    {
      fail(
        pending, on: connection,
        .overloaded(
          "the batch's answer passed \(Self.maxBatchAnswerBytes) bytes; send fewer requests in one batch"
        ))
      return
    }
    guard let method = Method(rawValue: request.method) else {
      fail(pending, on: connection, .methodNotFound(request.method))
      return
    }
    let caller = connection.caller
    guard Rules.mayCall(method.privilege, caller: caller) else {
      fail(
        pending, on: connection, .permissionDenied(method: method, requirement: adminRequirement))
      return
    }
    let call: Call
    switch Call.decode(method, params: request.params, limits: limits.params) {
    case .success(let decoded): call = decoded
    case .failure(let error):
      fail(pending, on: connection, error)
      return
    }
    switch call {
    case .get(let key, let user):
      guard let position = encodings.positions[key], let bytes = encodedSwitch(at: position) else {
        fail(pending, on: connection, RPCError(Refusal.unknownSwitch(key: key)))
        return
      }
      // The common case, a system switch read as oneself: the cached object.
      if user == nil && !encodings.isUserScoped(at: position) {
        let writable = writability(key, for: caller)
        answer(pending, on: connection) { w in
          WireEncoding.writeSwitch(&w, encoded: bytes, writable: writable)
        }
        return
      }
      let viewpoint: Viewpoint
      do {
        viewpoint = try self.viewpoint(user, for: caller, key: key)
      } catch {
        return fail(pending, on: connection, error)
      }
      answer(pending, on: connection) { w in
        writeSwitch(&w, at: position, for: caller, viewpoint: viewpoint)
      }
    case .list(let prefix, let user):
      let viewpoint: Viewpoint
      do {
        viewpoint = try self.viewpoint(user, for: caller, key: nil)
      } catch {
        return fail(pending, on: connection, error)
      }
      answer(pending, on: connection) { w in
        ResultEncoding.writeList(&w, revision: revision) {
          writeSwitches(&$0, positions(withPrefix: prefix), for: caller, viewpoint: viewpoint)
        }
      }
    case .write(let key, let operation, let user):
      var write = ticket(pending, connection)
      // Administrators are exempt from the per-uid share, so only the writes
      // of others count against their uid (given back when answered).
      if !caller.isAdmin { write.countedAgainst = connection.peer.uid }
      let acting = caller.acting(as: user)
      write.viewer = acting.subject
      submit(.write(write, key: key, operation, acting), for: connection, pending)
    case .reload:
      notifier.send("RELOADING=1")
      guard admitWrite(for: connection, pending) else { return }
      configReader.reload(ticket(pending, connection))
    case .watch(let patterns, let since, let user):
      watch(pending, on: connection, patterns: patterns, since: since, user: user)
    case .unwatch(let id):
      guard let index = connection.watchIDs.firstIndex(of: id) else {
        fail(
          pending, on: connection,
          .invalidParams("there is no watch \(id) on this connection", param: WireField.watch))
        return
      }
      connection.watchIDs.remove(at: index)
      hub.remove(id)
      answer(pending, on: connection) { w in ResultEncoding.writeEmpty(&w) }
    case .history(let key, let limit, let before, let user):
      history(pending, on: connection, key: key, limit: limit, before: before, user: user)
    case .status:
      let report = status(for: connection, caller: caller)
      answer(pending, on: connection) { w in ResultEncoding.writeStatus(&w, report) }
    case .backup:
      backup(pending, on: connection)
    }
  }

  private var adminRequirement: String {
    var who = "root"
    if access.daemonUID != 0 { who += ", uid \(access.daemonUID) (switchd's own)" }
    if let name = catalog.settings.adminGroup, !name.isEmpty, access.adminGroup != nil {
      who += " and members of the group \(name)"
    }
    return "only \(who) may"
  }

  func ticket(_ pending: PendingRequest, _ connection: Connection) -> Ticket {
    Ticket(
      connection: connection.id, slot: pending.answer?.slot ?? 0, part: pending.answer?.part ?? 0,
      id: pending.request.id ?? .null)
  }

  /// Queues a write for the writer. Writes are handed over once per turn
  /// of the loop (`handOverWrites`), so the writes of every client that was
  /// ready in the same turn share one transaction and one sync.
  private func submit(_ job: WriterJob, for connection: Connection, _ pending: PendingRequest) {
    guard admitWrite(for: connection, pending) else { return }
    if case .write(let ticket, _, _, _) = job, let uid = ticket.countedAgainst {
      writesPerUser.handedOver(uid: uid)
    }
    writesThisTurn.append(job)
  }

  /// Counts a write (or reload) the writer will answer, unless the writer
  /// was told to stop: it would never answer this one.
  private func admitWrite(for connection: Connection, _ pending: PendingRequest) -> Bool {
    if stopSentToWriter {
      fail(pending, on: connection, .overloaded("switchd is stopping; try again once it is back"))
      return false
    }
    connection.writesInFlight += 1
    return true
  }

  private func handOverWrites() {
    guard !writesThisTurn.isEmpty else { return }
    jobs.push(contentsOf: writesThisTurn)
    writesThisTurn.removeAll(keepingCapacity: true)
  }

  private func status(for connection: Connection, caller: Caller) -> StatusReport {
    StatusReport(
      version: SwitchdVersion.current, revision: revision, switches: catalog.switches.count,
      policies: catalog.policyCount, connections: connections.count, watches: hub.count,
      uptimeSeconds: Int64(monotonicSeconds() - startedAt), database: databasePath,
      socket: listenerPath, configDirectory: configDirectory, lastReload: lastReload,
      reconciling: reconciling,
      caller: StatusReport.CallerReport(
        uid: connection.peer.uid, gid: connection.peer.gid, administrator: caller.isAdmin,
        writesSystemSwitches: caller.mayWrite))
  }

  var listenerPath = ""
  let configDirectory: String
  /// Reads the configuration for `reload` and SIGHUP, off the loop.
  let configReader: ConfigReader
  /// The last reload (by `reload` or SIGHUP) and how it ended, for `status`.
  var lastReload: ReloadRecord?
  /// Switches the reconcile of the start or of a reload is still applying.
  var reconciling = 0

  func markWriterStopped() { writerStopped = true }

  /// `history`: checked here, read by the log reader thread, answered
  /// when its page comes back (`drainReaderOutputs`).
  private func history(
    _ pending: PendingRequest, on connection: Connection, key: String?, limit: Int, before: Int64?,
    user: Viewpoint?
  ) {
    if let key, catalog.switches[key] == nil, records[key] == nil {
      fail(pending, on: connection, RPCError(Refusal.unknownSwitch(key: key)))
      return
    }
    let viewpoint: Viewpoint
    do {
      viewpoint = try self.viewpoint(user, for: connection.caller, key: key)
    } catch {
      return fail(pending, on: connection, error)
    }
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
    connection.readsInFlight += 1
    readerJobs.push(
      .history(
        ticket(pending, connection), key: key, before: min(before ?? .max, revision &+ 1),
        limit: limit, newest: key.map { records[$0]?.revision ?? 0 }, viewer: connection.caller,
        view: view))
  }

  /// Takes what the log reader thread read: answers `history`, sends
  /// replay pages, and resumes the connections that waited.
  func drainReaderOutputs() {
    for output in readerOutputs.drain() {
      switch output {
      case .history(let ticket, let result):
        guard let connection = connections[ticket.connection] else { continue }
        connection.readsInFlight -= 1
        switch result {
        case .success(var response):
          connection.queue(response: &response, slot: ticket.slot, part: ticket.part)
          // What is left (the connection's emptied output buffer, or the page
          // once copied) goes back to the reader for its next page.
          if response.capacity > 0 && response.capacity <= 1 << 20 { readerSpares.push(response) }
        case .failure(let error):
          fail(ticket, on: connection, .storageFailure("reading the change log failed: \(error)"))
        }
        pump(connection)
      case .replay(let id, let watch, let after, let result):
        guard let connection = connections[id] else { continue }
        continueReplay(watch, on: connection, after: after, result)
        if !connection.isClosed { pump(connection) }
      case .stopped:
        readerStopped = true
      }
    }
  }
}
