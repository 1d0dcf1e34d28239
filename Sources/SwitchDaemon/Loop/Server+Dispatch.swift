import CShim
import Glibc
import SwitchCore
import SwitchProtocol
import SwitchStore
import SwitchSystem

// Running a request: the order of checks, then the method.
extension Server {
  // MARK: Requests

  /// Runs `pending` as the connection's caller.
  func execute(_ pending: PendingRequest, on connection: Connection) {
    execute(pending, on: connection, as: connection.caller)
  }

  /// Runs `pending` as `caller`: the connection's, or the caller with the
  /// right polkit granted for this call (`drainPolkitAnswers`). Not an
  /// optional `granted`: `granted ?? connection.caller` copied the
  /// optional Caller through a generic value witness on every request.
  func execute(_ pending: PendingRequest, on connection: Connection, as caller: Caller) {
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
    // The order of checks: MethodNotFound, PermissionDenied for the
    // method, then InvalidParams (the params were decoded at framing).
    if let method = pending.method, !Rules.mayCall(method.privilege, caller: caller) {
      if let question = administeringQuestion(pending, caller: caller) {
        return askPolkit(question, pending, on: connection, caller: caller)
      }
      fail(
        pending, on: connection, .permissionDenied(method: method, requirement: adminRequirement))
      return
    }
    // A `get` is matched in place: copying the whole Call out of the
    // Result first went through its generic value witnesses (~600
    // instructions of a `get`, callgrind).
    switch pending.call {
    case .failure(let error):
      fail(pending, on: connection, error)
    case .success(.get(let key, let user)):
      get(pending, on: connection, key: key, user: user, caller: caller)
    case .success(let call):
      run(call, pending, on: connection, caller: caller)
    }
  }

  private func get(
    _ pending: PendingRequest, on connection: Connection, key: String, user: Viewpoint?,
    caller: Caller
  ) {
    guard let position = encodings.positions[key], isStored(at: position) else {
      fail(pending, on: connection, RPCError(Refusal.unknownSwitch(key: key)))
      return
    }
    let kept = encodings.bytes(at: position)
    // The common case, a system switch read as oneself: the cached object.
    if let bytes = kept, user == nil && !encodings.isUserScoped(at: position),
      let state = encodings.state(at: position)
    {
      let writable = writability(key, state: state, for: caller)
      answer(pending, on: connection) { w in
        WireEncoding.writeSwitch(&w, encoded: bytes, writable: writable)
      }
      return
    }
    guard let viewpoint = viewpointOrAsk(user, pending, on: connection, caller: caller, key: key)
    else { return }
    // A system switch's first read (and a user-scope one's read for
    // everyone) is written and not kept; its second keeps it. Each of
    // 10,000 switches read once kept 7 MB of objects and templates (VmHWM
    // 35.5 MiB against 28.7 for Redis with the same keys). A user-scope
    // switch read as one user keeps its template and shared members, as
    // before (`writeSwitchAsSeen`).
    let keeping = kept != nil || encodings.noteRead(at: position)
    answer(pending, on: connection) { w in
      writeSwitchAsSeen(&w, at: position, for: caller, viewpoint: viewpoint, keeping: keeping)
    }
  }

  /// The method of `call` (a `get` is read by `execute` itself).
  private func run(
    _ call: Call, _ pending: PendingRequest, on connection: Connection, caller: Caller
  ) {
    switch call {
    case .get(let key, let user):
      get(pending, on: connection, key: key, user: user, caller: caller)
    case .list(let prefix, let user):
      guard let viewpoint = viewpointOrAsk(user, pending, on: connection, caller: caller, key: nil)
      else { return }
      answer(
        pending, on: connection, switchesAt: positions(withPrefix: prefix), for: caller,
        viewpoint: viewpoint
      ) { w, switches in
        ResultEncoding.writeList(&w, revision: revision, switches: switches)
      }
    case .write(let key, let operation, let user, let lasting):
      var write = ticket(pending, connection)
      // Administrators are exempt from the per-uid share, so only the writes
      // of others count against their uid (given back when answered).
      if !caller.isAdmin { write.countedAgainst = connection.peer.uid }
      let acting = caller.acting(as: user)
      if let question = changeQuestion(key, operation, caller: acting) {
        return askPolkit(question, pending, on: connection, caller: acting)
      }
      write.viewer = acting.subject
      if case .confirmWithin(_, true) = lasting { connection.madeTriedChange = true }
      submit(.write(write, key: key, operation, acting, lasting: lasting), for: connection, pending)
    case .reload:
      notifier.send("RELOADING=1")
      guard admitWrite(for: connection, pending) else { return }
      // Later calls of this connection wait for its answer: a write sent
      // right after it went to the writer before the configuration it
      // loads (a switch it adds was unknown to it).
      connection.barriersInFlight += 1
      // The writes taken before it in this turn go first: the reader may
      // hand the writer the configuration before the turn ends.
      handOverWrites()
      configReader.reload(ticket(pending, connection))
    case .watch(let patterns, let since, let user):
      watch(pending, on: connection, patterns: patterns, since: since, user: user, caller: caller)
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
      history(
        pending, on: connection, key: key, limit: limit, before: before, user: user,
        caller: caller)
    case .status:
      let report = status(for: connection, caller: caller)
      answer(pending, on: connection) { w in ResultEncoding.writeStatus(&w, report) }
    case .backup:
      backup(pending, on: connection)
    }
  }

  var adminRequirement: String {
    var who = "root"
    if access.daemonUID != 0 { who += ", uid \(access.daemonUID) (switchd's own)" }
    if let name = catalog.settings.adminGroup, !name.isEmpty, access.adminGroup != nil {
      who += " and members of the group \(name)"
    }
    return "only \(who) may"
  }

  /// Queues a write for the writer. Writes are handed over once per turn
  /// of the loop (`handOverWrites`), so the writes of every client that was
  /// ready in the same turn share one transaction and one sync.
  func submit(_ job: WriterJob, for connection: Connection, _ pending: PendingRequest) {
    guard admitWrite(for: connection, pending) else { return }
    if case .write(let ticket, _, _, _, _) = job, let uid = ticket.countedAgainst {
      writesPerUser.handedOver(uid: uid)
    }
    writesThisTurn.append(job)
  }

  /// Counts a write (or reload) the writer will answer, unless the writer
  /// was told to stop: it would never answer this one.
  func admitWrite(for connection: Connection, _ pending: PendingRequest) -> Bool {
    if stopSentToWriter {
      fail(pending, on: connection, .overloaded("switchd is stopping; try again once it is back"))
      return false
    }
    connection.writesInFlight += 1
    return true
  }

  func handOverWrites() {
    guard !writesThisTurn.isEmpty else { return }
    jobs.push(taking: &writesThisTurn)
  }

  func status(for connection: Connection, caller: Caller) -> StatusReport {
    StatusReport(
      version: SwitchdVersion.current, revision: revision, switches: catalog.switches.count,
      policies: catalog.policyCount, connections: connections.count, watches: hub.count,
      uptimeSeconds: Int64(monotonicSeconds() - startedAt), database: databasePath,
      socket: listenerPath, configDirectory: configDirectory, lastReload: lastReload,
      reconciling: reconciling,
      caller: StatusReport.CallerReport(
        uid: connection.peer.uid, gid: connection.peer.gid, administrator: caller.isAdmin,
        writesSystemSwitches: caller.mayWrite),
      readBack: readBackReports.keys.sorted().compactMap { readBackReports[$0] })
  }

  func markWriterStopped() { writerStopped = true }
}
