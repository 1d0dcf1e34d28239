import SwitchCore
import SwitchProtocol
import SwitchStore

extension Server {
  /// `watch`: registers the watch and answers with the snapshot as of the
  /// current revision R (or, with `since`, replays N+1…R from the log
  /// first); every later change goes out live, so nothing is missed or
  /// seen twice.
  func watch(
    _ pending: PendingRequest, on connection: Connection, patterns: [KeyPattern]?, since: Int64?,
    user: Viewpoint?, caller: Caller
  ) {
    if connection.watchIDs.count >= limits.maxWatchesPerConnection {
      fail(
        pending, on: connection,
        .overloaded(
          "this connection has \(connection.watchIDs.count) watches "
            + "(MaxWatchesPerConnection=\(limits.maxWatchesPerConnection))"))
      return
    }
    if let since, since > revision {
      fail(pending, on: connection, .sinceBeyondRevision(since, current: revision))
      return
    }
    // After InvalidParams, as the order of checks says.
    guard let viewpoint = viewpointOrAsk(user, pending, on: connection, caller: caller, key: nil)
    else { return }
    // The oldest change a replay has: the log's, and after a restore from
    // a backup the first after the restore (the changes a client saw
    // between the backup and the restore are not the database's).
    let oldest = max(oldestRetained ?? revision + 1, resumeFloor + 1)
    if let since, since < revision, oldest > since + 1 {
      fail(pending, on: connection, .historyCompacted(since: since, oldest: oldest))
      return
    }
    let replayFrom = since.flatMap { $0 < revision ? $0 : nil }
    let id = hub.add(
      connection: connection.id, owner: connection, patterns: patterns, viewpoint: viewpoint,
      replayFrom: replayFrom, varlink: connection.wire == .varlink)
    connection.watchIDs.append(id)
    if caller.isAdmin && !connection.caller.isAdmin { hub.watches[id]?.grantedByPolkit = true }
    if connection.wire == .varlink { connection.varlinkWatchStreams = true }
    if replayFrom != nil { connection.replaysUnfinished += 1 }
    let current = revision
    let snapshotFor = snapshotCaller(viewpoint, caller: connection.caller)
    if since == nil, let positions = snapshotRange(patterns) {
      return answer(
        pending, on: connection, switchesAt: positions, for: snapshotFor, viewpoint: viewpoint
      ) { w, switches in
        if connection.wire == .varlink {
          VarlinkEncoding.writeWatch(&w, revision: current, withSwitches: true, switches: switches)
        } else {
          ResultEncoding.writeWatch(&w, watch: id, revision: current, switches: switches)
        }
      }
    }
    answer(pending, on: connection) { w in
      if connection.wire == .varlink {
        // The first reply: no watch id (the call itself is the watch).
        VarlinkEncoding.writeWatch(&w, revision: current, withSwitches: since == nil) {
          writeSwitches(&$0, matching: patterns, for: snapshotFor, viewpoint: viewpoint)
        }
      } else if since == nil {
        ResultEncoding.writeWatch(&w, watch: id, revision: current) {
          writeSwitches(&$0, matching: patterns, for: snapshotFor, viewpoint: viewpoint)
        }
      } else {
        ResultEncoding.writeReplayingWatch(&w, watch: id, revision: current)
      }
    }
  }

  /// The positions a snapshot of `patterns` shows when they are a range
  /// (every switch, or one prefix), as a `list`'s are: a large one is then
  /// the same kept array as the `list` of the range (`answer(_:on:switchesAt:…)`).
  func snapshotRange(_ patterns: [KeyPattern]?) -> Range<Int>? {
    guard let patterns else { return catalog.sortedKeys.indices }
    guard patterns.count == 1, case .prefix(let prefix) = patterns[0] else { return nil }
    return positions(withPrefix: prefix)
  }

  /// Whom `writable` in a watch's snapshot is computed for: the watch's
  /// user. Another user named by an administrator has the rights the group
  /// database gave them at start or the last reload (`Caller.user`: kept in
  /// memory, since a look-up here would block the loop); the caller itself,
  /// and every user (`*`), have the caller's own.
  func snapshotCaller(_ viewpoint: Viewpoint, caller: Caller) -> Caller {
    guard case .user(let uid) = viewpoint, uid != caller.uid else { return caller }
    return Caller.user(uid, access: access)
  }

  /// Asks the log reader for the next page of every replaying watch of a
  /// connection whose queue has room (one page in flight per watch); true
  /// when it asked for any. Each page ends at the loop's revision as it is
  /// when asked; the replay goes on until it reaches the loop's revision as
  /// it is when the page arrives (`continueReplay`).
  func continueReplays(_ connection: Connection) -> Bool {
    // A peer that hung up reads nothing more: its pages would be read,
    // encoded and thrown away (`sendQueued` drops its output), a whole
    // `since` replay of CPU for nobody.
    guard connection.replaysUnfinished > 0, !stopSentToReader, !connection.hungUp,
      connection.unsentCount <= limits.highWater
    else { return false }
    var asked = false
    for id in connection.watchIDs {
      guard let watch = hub.watches[id], let cursor = watch.replayCursor, !watch.replayReading
      else { continue }
      watch.replayReading = true
      readerJobs.push(
        .replay(
          connection: connection.id, watch: id, after: cursor, upTo: revision,
          limit: Self.replayPage, view: readerView(watch.viewpoint),
          format: watch.replayFormat(viewer: connection.caller)))
      asked = true
    }
    return asked
  }

  static let replayPage = 256

  /// Sends a replay page the log reader read. While a page was being read
  /// the watch got no live events (it was replaying), so it goes live only
  /// when its cursor reaches the loop's revision now: until then it asks
  /// for more. Nothing is missed, nothing is sent twice. A page written
  /// for rights the caller no longer has (a reload came between) is asked
  /// for again: live events show actors as the rights are at publish time.
  func continueReplay(
    _ id: String, on connection: Connection, after: Int64, _ result: Result<ReplayPage, StoreError>
  ) {
    // An unwatched watch's page is dropped.
    guard let watch = hub.watches[id], watch.replayCursor == after else { return }
    watch.replayReading = false
    let page: ReplayPage
    switch result {
    case .success(let read): page = read
    case .failure(let error):
      closeConnection(connection, why: "the change log could not be read for a watch: \(error)")
      return
    }
    guard page.viewer == connection.caller else { return }
    if page.first.map({ $0 != after + 1 }) ?? (after < revision) {
      // Pruned underneath the replay: the client resumes with `since`
      // and is told HistoryCompacted.
      closeConnection(connection, why: "a replaying watch fell behind the retained history")
      return
    }
    connection.queue(events: page.events)
    let cursor = page.last ?? after
    watch.replayCursor = cursor >= revision ? nil : cursor
    if watch.replayCursor == nil { connection.replaysUnfinished -= 1 }
  }

  /// Whether a watch of the connection is still replaying `since` to a
  /// peer that can read it (one that hung up is not replayed to).
  func isReplaying(_ connection: Connection) -> Bool {
    connection.replaysUnfinished > 0 && !connection.hungUp
      && connection.watchIDs.contains { hub.watches[$0]?.replayCursor != nil }
  }

  /// Takes the changes the writer committed, in revision order: each goes
  /// into the loop's copy of the switches (`adopt`), then out to the
  /// watches it matches (`publish`), so that an event is drawn with the
  /// values as of its own revision. A watcher whose unsent events of
  /// earlier batches pass `MaxQueuedBytes` is disconnected rather than
  /// allowed to grow without bound; one batch's own events may pass it
  /// (a group commit of more than ~1,400 changes did, and every watcher
  /// was cut off however fast it read, an audit), up to `batchCeilingFactor`.
  func takeCommitted(_ changes: [Change]) {
    // Each connection once, marked with this batch's first revision: a
    // mark costs less than hashing its id once per watcher.
    guard let mark = changes.first?.revision else { return }
    var touched: [Connection] = []
    let alone = changes.count == 1
    for index in changes.indices {
      take(changes, index, mark: mark, alone: alone, touched: &touched)
    }
    let batchCeiling = Self.batchCeilingFactor * limits.maxQueuedBytes
    for connection in touched {
      if connection.eventBytesBeforeBatch > limits.maxQueuedBytes {
        closeConnection(connection, why: "a watcher fell behind by more than MaxQueuedBytes")
        continue
      }
      sendOrPump(connection)
      if !connection.isClosed && connection.unsentEventBytes > batchCeiling {
        closeConnection(
          connection,
          why: "a watcher was left more than \(Self.batchCeilingFactor) times MaxQueuedBytes "
            + "of one batch's events")
      }
    }
  }

  /// How many times `MaxQueuedBytes` a watcher may be left of one batch's
  /// events once its socket took what it would: a group of ~5,800 changes
  /// at the default. Not more: it is memory each watcher that does not
  /// read can hold, and administrators' writes (not limited to 256 in
  /// flight per uid) or many users' together make groups larger than that
  /// (a review). Judged once the batch is queued: the peak is the batch.
  static let batchCeilingFactor = 4

  /// One committed change, `changes[index]`: into the loop's copy, then to
  /// its watchers. Its fields are read where it lies: passing the change
  /// on its own, even through an unsafe buffer, copied it and released the
  /// copy after (callgrind); only a publish to watchers takes it whole.
  private func take(
    _ changes: [Change], _ index: Int, mark: Int64, alone: Bool, touched: inout [Connection]
  ) {
    // Looked up once for both: where its Switch object is kept, and its scope.
    let position = encodings.positions[changes[index].hashedKey]
    adopt(changes, index, at: position)
    guard !hub.watches.isEmpty else { return }
    let userScoped = position.map { encodings.isUserScoped(at: $0) } ?? false
    publish(changes[index], userScoped: userScoped, mark: mark, alone: alone, touched: &touched)
  }

  /// A committed change into the loop's copy (the one way: `Change.adopt`).
  private func adopt(_ changes: [Change], _ index: Int, at position: Int?) {
    Change.adopt(changes, at: index, into: &records, &userValues)
    if let position {
      // A user's own value changes what that user reads, not the shared object.
      if changes[index].user == nil {
        encodings.invalidate(at: position)
      } else {
        encodings.touch(at: position)
      }
    }
    revision = changes[index].revision
  }

  /// Publishes one change to every live watch it matches; `touched`
  /// collects the connections that have events to send. A system switch's
  /// change is encoded at most twice, whatever the number of watchers: as
  /// is, and with the actor's ids hidden for watchers who may not see them;
  /// a user-scope switch's goes to each watch as its viewer sees it
  /// (`publishPerViewer`). `alone`: the batch is this one change.
  private func publish(
    _ change: borrowing Change, userScoped: Bool, mark: Int64, alone: Bool,
    touched: inout [Connection]
  ) {
    if change.user != nil || userScoped {
      publishPerViewer(change, mark: mark, touched: &touched)
      return
    }
    // The line after each watch's head, shared by its watchers.
    var lines = EventRests()
    hub.forEachMatch(change.key) { watch in
      guard watch.replayCursor == nil, let connection = watch.owner, !connection.isClosed else {
        return
      }
      let line = lines.rest(
        of: change, showingActor: connection.caller.seesActor(change.actor),
        varlink: watch.isVarlink)
      let backlog = connection.publishMark != mark ? connection.unsentEventBytes : 0
      // A publish of one change (the usual case) sends each watcher its
      // event at once; several changes go out together in one send each.
      if alone {
        if connection.sendEvent(head: watch.eventHead, rest: line) { return }
      } else {
        connection.queueEvent(head: watch.eventHead, rest: line)
      }
      if connection.publishMark != mark {
        connection.publishMark = mark
        connection.eventBytesBeforeBatch = backlog
        touched.append(connection)
      }
    }
  }

  /// After a reload: `schemaChanged` to every watch that matches a switch it
  /// added, removed or redeclared, naming those keys. Not State: no revision.
  func announce(_ changes: SchemaChanges) {
    var touched: [UInt64: Connection] = [:]
    for watch in hub.watches.values {
      guard let part = changes.filtered(watch.matches),
        let connection = connections[watch.connection]
      else { continue }
      var w = JSONWriter(capacity: 256)
      if watch.isVarlink {
        VarlinkEncoding.writeSchemaChanged(&w, part)
      } else {
        WireEncoding.writeSchemaChangedEvent(&w, watch: watch.id, part)
      }
      w.copy(to: &connection.out)
      touched[connection.id] = connection
    }
    for connection in touched.values { pump(connection) }
  }

  /// A change of a user-scope switch to each live watch as its viewer sees
  /// it (`Visibility.view`): another user's value never; a switch-level
  /// change with the viewer's own value where no hold fixes it, and their
  /// timers; a user's own change under a hold that fixes the value with
  /// that value (the switch's, adopted up to this change). A viewer with no
  /// timer reads one of three values (on, off, never set), so each is
  /// encoded at most six times; one with a timer is encoded for alone.
  private func publishPerViewer(
    _ change: borrowing Change, mark: Int64, touched: inout [Connection]
  ) {
    var encoded: [Int: [UInt8]] = [:]
    var fixed: Bool?
    if change.isOwnValueUnderAFixingHold, let state = records[change.key]?.state, state.valueFixed {
      fixed = state.checked
    }
    hub.forEachMatch(change.key) { watch in
      guard watch.replayCursor == nil, let connection = watch.owner, !connection.isClosed else {
        return
      }
      var own: SeenOwnValue?
      if change.user == nil, case .user(let uid) = watch.viewpoint,
        let value = userValues[change.key]?[uid]
      {
        own = SeenOwnValue(value)
      }
      guard let seen = Visibility.view(change, for: watch.viewpoint, own: own, fixed: fixed)
      else { return }
      let showingActor = connection.caller.seesActor(change.actor)
      let rest: [UInt8]
      if let own, own.hasDeadlines {
        rest = Self.eventRest(seen, showingActor: showingActor, end: watch.eventEnd)
      } else {
        let slot =
          ((own.map { $0.checked ? 1 : 2 } ?? 0) * 2 + (showingActor ? 1 : 0)) * 2
          + (watch.isVarlink ? 1 : 0)
        if encoded[slot] == nil {
          encoded[slot] = Self.eventRest(seen, showingActor: showingActor, end: watch.eventEnd)
        }
        rest = encoded[slot]!
      }
      if connection.publishMark != mark {
        connection.publishMark = mark
        connection.eventBytesBeforeBatch = connection.unsentEventBytes
        touched.append(connection)
      }
      connection.queueEvent(head: watch.eventHead, rest: rest)
    }
  }

  /// An event line after the watch's head: the change's members and the
  /// end (`Watch.eventEnd`: a JSON-RPC notification's or a varlink reply's).
  static func eventRest(_ change: Change, showingActor: Bool, end: [UInt8]) -> [UInt8] {
    var w = JSONWriter(capacity: 512)
    writeEventRest(&w, change, showingActor: showingActor, end: end)
    return w.bytes
  }

  /// `eventRest` written into `w` (the log reader writes a replay page's
  /// events one after the other, each after its watch's head).
  static func writeEventRest(
    _ w: inout JSONWriter, _ change: Change, showingActor: Bool, end: [UInt8]
  ) {
    WireEncoding.writeChangeMembers(&w, change, showingActor: showingActor)
    w.raw(end)
  }
}
