import CShim
import Glibc
import SwitchCore
import SwitchProtocol

extension Server {
  /// Takes what the writer thread committed: swaps in a new configuration,
  /// publishes the changes (events go out before the answers), then answers
  /// the writes and resumes the connections that waited for them.
  func drainWriterOutputs() {
    // The kept arrays moved out for the drain (and back after): a drain
    // within it, if one ever came, would start from empty ones.
    var drained: [WriterOutput] = []
    var resumed: [Connection] = []
    swap(&drained, &drainBuffers.outputs)
    swap(&resumed, &drainBuffers.resumed)
    defer {
      drained.empty()
      swap(&drained, &drainBuffers.outputs)
      swap(&resumed, &drainBuffers.resumed)
    }
    outputs.drain(into: &drained)
    // Each output and answer moved out: its own array then holds the only
    // reference (no copy of the answers on write), and an answer is neither
    // copied out nor released with the array (callgrind).
    for index in drained.indices {
      var output = drained.moveOut(
        at: index, leaving: WriterOutput(catalog: nil, changes: [], answers: []))
      var schemaChanges: SchemaChanges?
      if let update = output.catalog {
        schemaChanges = SchemaChanges(from: catalog, to: update.catalog)
        adopt(update)
      }
      if output.oldestRetained != nil { oldestRetained = output.oldestRetained }
      if let count = output.reconciling {
        reconciling = count
        notifier.send(statusLine)
      }
      takeCommitted(output.changes)
      if let reports = output.readBack { readBackReports = reports }
      for (key, state) in output.observations {
        // Not State: no event, only the Switch object shows it from now on.
        observations[key] = state
        encodings.invalidate(key)
      }
      // Each connection once, marked with this output's number: a mark
      // costs less than a dictionary made, grown and freed per output.
      drainMark += 1
      // At its size: grown from empty it was three buffers an output (callgrind).
      resumed.reserveCapacity(output.answers.count)
      func resume(_ connection: Connection) {
        guard connection.resumeMark != drainMark else { return }
        connection.resumeMark = drainMark
        resumed.append(connection)
      }
      // Taken from the end, each moved out of the array: no placeholder
      // made and destroyed in its place (callgrind). The order does not
      // matter: each answer fills its own slot, and a connection sends its
      // answers in the order of its slots.
      while let (ticket, answer) = output.answers.popLast() {
        if let uid = ticket.countedAgainst {
          for id in writesPerUser.finished(uid: uid) {
            if let connection = connections[id] { resume(connection) }
          }
        }
        guard let connection = connections[ticket.connection] else { continue }
        connection.writesInFlight -= 1
        if case .reload = answer { connection.barriersInFlight -= 1 }
        resume(connection)
        let caller = connection.caller.acting(as: ticket.viewer)
        respond(ticket, on: connection) { write(&$0, answer, to: ticket, for: caller) }
      }
      // A connection with nothing else to do needs only the send (`sendOrPump`).
      for connection in resumed { sendOrPump(connection) }
      resumed.empty()
      giveBack(&output)
      if let schemaChanges, !schemaChanges.isEmpty { announce(schemaChanges) }
      if let reload = output.reload {
        lastReload = reload
        notifier.send("READY=1")
        notifier.send(statusLine)
      }
      if output.stopped { markWriterStopped() }
    }
    finishConnectionsBeyondRights()
  }

  /// Hands `output`'s arrays, emptied, back to the writer: a group's
  /// `changes` and `answers` made and freed per group (on two threads)
  /// cost ~1.5k instructions, callgrind. Arrays past `keptElements`, and
  /// spares the writer has not taken (`Spare.queued`), are freed here.
  private func giveBack(_ output: inout WriterOutput) {
    guard output.changes.capacity <= keptElements, output.answers.capacity <= keptElements,
      output.changes.capacity > 0 || output.answers.capacity > 0
    else { return }
    var spare = WriterOutput.Spare(changes: [], answers: [])
    swap(&spare.changes, &output.changes)
    swap(&spare.answers, &output.answers)
    spare.changes.removeAll(keepingCapacity: true)
    spare.answers.removeAll(keepingCapacity: true)
    outputSpares.push(spare, ifFewerThan: WriterOutput.Spare.queued)
  }

  /// `drainWriterOutputs`' arrays between drains.
  struct DrainBuffers {
    var outputs: [WriterOutput] = []
    var resumed: [Connection] = []
  }

  /// A caller whose rights a reload took away keeps no watch of other
  /// users' values (rule 13): such a watch was allowed only to an
  /// administrator (or granted by polkit, which stands while polkit is the
  /// authority), and its events would go on showing values the caller may
  /// no longer read. Each one ends now, before the reload's own changes
  /// are published. The protocol has no event for a watch that ends, so
  /// the connection ends too, as one whose peer stopped sending does: what
  /// it sent before is answered (under its rights as they are now), then it
  /// closes (`settle`); a client that reconnects is told why.
  private func endWatchesBeyondRights(of connection: Connection) {
    let ended = connection.watchIDs.filter { id in
      guard let watch = hub.watches[id] else { return false }
      if watch.grantedByPolkit && connection.caller.asksPolkit { return false }
      if case .success = Rules.viewpoint(watch.viewpoint, caller: connection.caller, key: nil) {
        return false
      }
      return true
    }
    guard !ended.isEmpty else { return }
    for id in ended { hub.remove(id) }
    connection.watchIDs.removeAll { ended.contains($0) }
    connection.inputClosed = true
    closingForRights.append(connection)
    log.notice(
      "a reload took away the right the watch of other users' values of a connection"
        + " (pid \(connection.peer.pid)) needs: the watch ended, and the connection closes once"
        + " what it sent is answered")
  }

  /// Lets the connections `endWatchesBeyondRights` ended watches of run
  /// and answer what they had sent, then close.
  func finishConnectionsBeyondRights() {
    guard !closingForRights.isEmpty else { return }
    let closing = closingForRights
    closingForRights.removeAll()
    for connection in closing where !connection.isClosed { pump(connection) }
  }

  private func adopt(_ update: CatalogUpdate) {
    catalog = update.catalog
    access = update.access
    for connection in connections.values {
      connection.caller = connection.peer.caller(access)
      if !connection.watchIDs.isEmpty { endWatchesBeyondRights(of: connection) }
    }
    limits = Limits(update.catalog.settings)
    // The mark, the limit and who is exempt may have changed: counted again.
    backlogPerUser.limit = limits.backlogPerUser
    for connection in connections.values { countBacklog(connection) }
    backlogResumes.append(contentsOf: backlogPerUser.reconsider())
    log.setLevel(update.catalog.settings.logLevel)
    for record in update.newRecords { records[record.key] = record }
    encodings = SwitchEncodings(
      sortedKeys: update.catalog.sortedKeys,
      isUserScoped: { update.catalog.switches[$0]?.scope == .user })
    // Kept for the old schema and rights.
    switchLists.removeAll()
  }

  var statusLine: String {
    "STATUS=Serving \(catalog.switches.count) switches, \(catalog.policyCount) policies, "
      + "revision \(revision)"
      + (reconciling > 0 ? ", applying \(reconciling) stored values" : "")
  }

  private func write(
    _ w: inout JSONWriter, _ answer: borrowing WriterOutput.Answer, to ticket: borrowing Ticket,
    for caller: borrowing Caller
  ) {
    switch answer {
    case .write(.success(let outcome)):
      Self.writeResponse(&w, to: ticket) {
        ResultEncoding.writeWrite(&$0, changed: outcome.changed) {
          writeSwitchAfterWrite(&$0, outcome, for: caller)
        }
      }
    case .reload(.success(let summary)):
      Self.writeResponse(&w, to: ticket) { ResultEncoding.writeReload(&$0, summary) }
    case .refused(.conflict(let key, let expected, let current)):
      // The switch as it is now (`data.switch`), so that a page redraws
      // it without another `get`.
      var now = JSONWriter(capacity: 512)
      writeSwitchAsSeen(&now, key: key, for: caller, viewpoint: .user(caller.subject))
      let conflict = Refusal.conflict(key: key, expected: expected, current: current)
      Self.writeResponse(&w, to: ticket, error: RPCError(conflict), switchObject: now.bytes)
    case .refused(.pending(let key)):
      var now = JSONWriter(capacity: 512)
      writeSwitchAsSeen(&now, key: key, for: caller, viewpoint: .user(caller.subject))
      // The revision the caller reads: a user's own value has its own.
      var revision = records[key]?.revision ?? 0
      if let record = records[key], let definition = catalog.switches[key],
        definition.scope == .user
      {
        revision =
          Visibility.value(
            record, own: userValues[key]?[caller.subject],
            defaultChecked: definition.defaultChecked
          ).revision
      }
      Self.writeResponse(
        &w, to: ticket, error: .pendingConflict(key: key, revision: revision),
        switchObject: now.bytes)
    case .refused(let refusal):
      Self.writeResponse(&w, to: ticket, error: RPCError(refusal))
    case .write(.failure(let error)), .reload(.failure(let error)):
      Self.writeResponse(&w, to: ticket, error: error)
    }
  }

  /// Writes the Switch object a write answers with, as `caller` (acting
  /// as the user it names) sees it: the cached encoding when the switch is
  /// still as this write left it, else encoded from the outcome.
  private func writeSwitchAfterWrite(
    _ w: inout JSONWriter, _ outcome: borrowing WriteOutcome, for caller: borrowing Caller
  ) {
    let key = outcome.record.key
    // The key as the writer hashed it: no hash made here.
    let position = encodings.positions[outcome.record.hashedKey]
    if outcome.definition.scope == .user {
      // A write of a user's value: the switch as that user reads it after it,
      // lent (a copy of it per answer, callgrind).
      if let user = outcome.user {
        writeUserSwitch(
          &w, definition: outcome.definition, at: position, seen: outcome.record, user: user,
          for: caller)
        return
      }
      // A hold's answer shows the switch with this user's own value now.
      let user = caller.subject
      let seen = Visibility.record(
        outcome.record, own: userValues[outcome.record.hashedKey]?[user],
        definition: outcome.definition)
      writeUserSwitch(
        &w, definition: outcome.definition, at: position, seen: seen, user: user, for: caller)
      return
    }
    // The switch as this write left it (a revision is one State of one
    // switch), with the caller's `writable`: the kept object when a read has
    // made it for this revision, else written straight into the answer. It
    // is not kept: after a write the next read of the switch may never come,
    // and keeping it cost an array, a copy and a record look-up per write.
    let writable = writability(key, state: outcome.record.state, for: caller)
    if let position, let bytes = encodings.bytes(at: position, revision: outcome.record.revision) {
      WireEncoding.writeSwitch(&w, encoded: bytes, writable: writable)
      return
    }
    guard let position, encodings.noteRead(at: position) else {
      // The switch's first object since the start, as a first `get`'s:
      // straight from its definition (a template made for one object cost
      // more than the object, and was kept for a switch perhaps never read).
      WireEncoding.writeSwitch(
        &w, definition: outcome.definition, record: outcome.record,
        policySource: outcome.policySource, observed: observations[key], writable: writable)
      return
    }
    WireEncoding.writeSwitch(
      &w, template: template(of: outcome.definition, at: position), record: outcome.record,
      policySource: outcome.policySource, observed: observations[key], writable: writable)
  }
}
