import SwitchCore
import SwitchProtocol

extension Server {
  /// `watch`: registers the watch and answers with the snapshot as of the
  /// current revision R (or, with `since`, replays N+1…R from the log
  /// first); every later change goes out live, so nothing is missed or
  /// seen twice.
  func watch(
    _ pending: PendingRequest, on connection: Connection, patterns: [KeyPattern]?, since: Int64?
  ) {
    if connection.watchIDs.count >= limits.maxWatchesPerConnection {
      fail(
        pending, on: connection,
        .overloaded(
          "this connection has \(connection.watchIDs.count) watches "
            + "(MaxWatchesPerConnection=\(limits.maxWatchesPerConnection))"))
      return
    }
    if let since {
      if since > revision {
        fail(
          pending, on: connection,
          .invalidParams("\"since\" is \(since), beyond the current revision \(revision)"))
        return
      }
      let oldest = oldestRetained ?? revision + 1
      if since < revision && oldest > since + 1 {
        fail(pending, on: connection, .historyCompacted(since: since, oldest: oldest))
        return
      }
    }
    let replayFrom = since.flatMap { $0 < revision ? $0 : nil }
    let id = hub.add(connection: connection.id, patterns: patterns, replayFrom: replayFrom)
    connection.watchIDs.append(id)
    let current = revision
    answer(pending, on: connection) { w in
      w.raw("{\"watch\":")
      w.string(id)
      w.raw(",\"revision\":")
      w.int(current)
      if since == nil {
        w.raw(",\"switches\":")
        writeSwitches(&w, positions(matching: patterns))
      }
      w.raw("}")
    }
  }

  /// Sends the next pages of every replaying watch of a connection, while
  /// its queue has room. A replay reads the log up to the loop's revision;
  /// when it reaches it, the watch goes live. True when it sent anything.
  func continueReplays(_ connection: Connection) -> Bool {
    var progressed = false
    for id in connection.watchIDs {
      guard let watch = hub.watches[id], var cursor = watch.replayCursor else { continue }
      while connection.unsentCount <= limits.highWater {
        let page: [Change]
        do {
          page = try readerChanges(after: cursor, limit: 256)
        } catch {
          closeConnection(connection, why: "the change log could not be read for a watch")
          return true
        }
        if let first = page.first, first.revision != cursor + 1 {
          // Pruned underneath the replay: the client resumes with `since`
          // and is told HistoryCompacted.
          closeConnection(connection, why: "a replaying watch fell behind the retained history")
          return true
        }
        progressed = true
        for change in page where watch.matches(change.key) {
          appendEvent(change, watch: id, to: connection)
        }
        cursor = page.last?.revision ?? cursor
        if page.count < 256 || cursor >= revision {
          watch.replayCursor = nil
          break
        }
        watch.replayCursor = cursor
      }
      if connection.isClosed { return true }
    }
    return progressed
  }

  /// Whether a watch of the connection is still replaying `since`.
  func isReplaying(_ connection: Connection) -> Bool {
    connection.watchIDs.contains { hub.watches[$0]?.replayCursor != nil }
  }

  /// Publishes committed changes, in revision order, to every live watch
  /// they match. A watcher whose unsent events pass `MaxQueuedBytes` is
  /// disconnected rather than allowed to grow without bound.
  func publish(_ changes: [Change]) {
    var touched: [UInt64: Connection] = [:]
    for change in changes {
      records[change.key] = SwitchRecord(
        key: change.key, state: change.state, revision: change.revision, changedAt: change.time)
      encodings.invalidate(change.key)
      revision = change.revision
      var members: [UInt8]?
      hub.forEachMatch(change.key) { watch in
        guard watch.replayCursor == nil, let connection = connections[watch.connection] else {
          return
        }
        if members == nil {
          var w = JSONWriter(capacity: 512)
          WireEncoding.writeChangeMembers(&w, change)
          members = w.bytes
        }
        appendEvent(members!, watch: watch.id, to: connection)
        touched[connection.id] = connection
      }
    }
    for connection in touched.values {
      if connection.unsentCount - min(connection.responseBytesQueued, connection.unsentCount)
        > limits.maxQueuedBytes
      {
        closeConnection(connection, why: "a watcher fell behind by more than MaxQueuedBytes")
      } else {
        pump(connection)
      }
    }
  }

  private func appendEvent(_ change: Change, watch: String, to connection: Connection) {
    var members = JSONWriter(capacity: 512)
    WireEncoding.writeChangeMembers(&members, change)
    appendEvent(members.bytes, watch: watch, to: connection)
  }

  private func appendEvent(_ members: [UInt8], watch: String, to connection: Connection) {
    // Written straight into the connection's queue: no copy per watcher.
    var w = JSONWriter(capacity: 0)
    swap(&w.bytes, &connection.out)
    WireEncoding.writeChangedEvent(&w, watch: watch, members: members)
    swap(&w.bytes, &connection.out)
  }
}
