import CSQLite
import SwitchCore
import SwitchTestSupport
import Testing

@testable import SwitchStore

@Suite struct SwitchStoreTests {
  @Test func switchesRoundTripEveryStateField() throws {
    try withTemporaryDirectory { directory in
      let store = try SwitchStore(path: directory + "/s.db")
      defer { store.close() }
      // Keys out of order: loadSwitches sorts.
      var records = sampleStates.enumerated().map { index, state in
        SwitchRecord(key: "k\(sampleStates.count - index)", state: state)
      }
      // A changed switch's revision and time as given (at revision 0 a
      // switch never changed, and has no time: `aNewRowKeepsItsDeclarationTimeUnshown`).
      records.append(
        SwitchRecord(key: "a.changed", state: sampleStates[3], revision: 5, changedAt: -1))
      try store.insertNew(records)
      let loaded = try store.loadSwitches()
      #expect(loaded == records.sorted { $0.key < $1.key })
    }
  }

  @Test func loadedLongKeysAreTheCatalogsStrings() throws {
    // `KeyInterner`: the records, the users' values and the log's chains
    // hold a declared long key as the catalog's String, which a decoded
    // request's key shares, so that the tables find it by its first word.
    try withTemporaryDirectory { directory in
      let store = try SwitchStore(path: directory + "/s.db")
      defer { store.close() }
      let chat = "notifications.chat"
      try store.insertNew([SwitchRecord(key: chat, state: SwitchState(checked: true))])
      try store.commit([
        Change(
          revision: 1, time: 1, key: chat, cause: .set, actor: .policy,
          state: SwitchState(checked: false), previous: SwitchState(checked: true), user: 1000)
      ])
      let declared = String(decoding: Array(chat.utf8), as: UTF8.self)
      func storage(_ text: String) -> UnsafeRawPointer? {
        text.utf8.withContiguousStorageIfAvailable { UnsafeRawPointer($0.baseAddress) } ?? nil
      }
      let keys = KeyInterner([declared])
      let record = try #require(try store.loadSwitches(sharing: keys).first)
      #expect(record.key == chat)
      #expect(storage(record.key) == storage(declared))
      let values = try store.loadUserValues(sharing: keys)
      #expect(values[chat]?[1000]?.checked == false)
      #expect(values.keys.map(storage) == [storage(declared)])
      // The same from the rows a checkpoint wrote, not the log.
      try store.checkpointFromLog()
      let fromRows = try store.loadUserValues(sharing: keys)
      #expect(fromRows[chat]?[1000]?.checked == false)
      #expect(fromRows.keys.map(storage) == [storage(declared)])
      // Without them, Strings of their own that read the same.
      let own = try #require(try store.loadSwitches().first)
      #expect(own == record)
      #expect(storage(own.key) != storage(declared))
    }
  }

  @Test func aDependentThatFollowsTheSystemKeepsTheSystemAsItsActor() throws {
    try withTemporaryDirectory { directory in
      let store = try SwitchStore(path: directory + "/s.db")
      defer { store.close() }
      // Null ids with cause `dependency` are a policy's unless the log says system.
      let changes = [Actor.system, .policy].enumerated().map { index, actor in
        Change(
          revision: Int64(index + 1), time: 1_790_000_000_123, key: "hotspot", cause: .dependency,
          actor: actor, state: sampleStates[0], previous: sampleStates[1])
      }
      try store.commit(changes)
      #expect(
        try store.changes(after: 0, upTo: .max, limit: 10).map(\.actor) == [.system, .policy])
    }
  }

  @Test func changesRoundTripEveryCauseActorAndState() throws {
    try withTemporaryDirectory { directory in
      let store = try SwitchStore(path: directory + "/s.db")
      defer { store.close() }
      let actors: [Actor] = [
        .policy, .peer(uid: 0, gid: 0, pid: 1),
        .peer(uid: .max, gid: .max - 1, pid: .max), .system, .timer,
      ]
      var changes: [Change] = []
      for (index, cause) in Cause.allCases.enumerated() {
        // The log tells switchd's own reconcile, and the system's drift,
        // from a policy by the cause.
        let actor: Actor =
          switch cause {
          case .reconcile: .reconcile
          case .external, .drift: .system
          default: actors[index % actors.count]
          }
        changes.append(
          Change(
            revision: Int64(index + 1), time: 1_790_000_000_123 + Int64(index),
            key: "key.\(index % 3)", cause: cause, actor: actor,
            state: sampleStates[index % sampleStates.count],
            previous: sampleStates[(index + 1) % sampleStates.count]))
      }
      try store.commit(changes)
      let read = try store.changes(after: 0, upTo: .max, limit: 1000)
      #expect(read == changes)
      #expect(read.map(\.fields) == changes.map(\.fields))
      #expect(try store.history(key: nil, before: nil, limit: 1000) == changes.reversed())
      #expect(try store.currentRevision() == Int64(changes.count))
    }
  }

  /// A commit appends to the change log only; `loadSwitches` lays the
  /// changes after the checkpoint over the rows, so a committed change shows
  /// at once, also for a key that has no row yet, and a checkpoint that
  /// then writes the rows shows the same switches.
  @Test func loadSwitchesShowsCommittedChangesOverTheRows() throws {
    try withTemporaryDirectory { directory in
      let store = try SwitchStore(path: directory + "/s.db")
      defer { store.close() }
      try store.insertNew([
        SwitchRecord(key: "a", state: SwitchState(checked: false)),
        SwitchRecord(key: "b", state: SwitchState(checked: false)),
      ])
      let first = Change(
        revision: 1, time: 111, key: "a", cause: .lock, actor: .peer(uid: 0, gid: 0, pid: 9),
        state: sampleStates[3], previous: SwitchState(checked: false))
      // "c" has no row: it comes from the log alone.
      let second = Change(
        revision: 2, time: 222, key: "c", cause: .policy, actor: .policy,
        state: sampleStates[4], previous: SwitchState(checked: true))
      // Deadlines and who made them go from the log's details to the rows.
      let timed = Change(
        revision: 3, time: 333, key: "d", cause: .set, actor: .peer(uid: 0, gid: 0, pid: 9),
        state: sampleStates[8], previous: sampleStates[9])
      let tried = Change(
        revision: 4, time: 444, key: "e", cause: .set, actor: .peer(uid: 0, gid: 0, pid: 9),
        state: sampleStates[9], previous: SwitchState(checked: false))
      try store.commit([first, second, timed, tried])
      let expected = [
        SwitchRecord(key: "a", state: sampleStates[3], revision: 1, changedAt: 111),
        SwitchRecord(key: "b", state: SwitchState(checked: false)),
        SwitchRecord(key: "c", state: sampleStates[4], revision: 2, changedAt: 222),
        SwitchRecord(key: "d", state: sampleStates[8], revision: 3, changedAt: 333),
        SwitchRecord(key: "e", state: sampleStates[9], revision: 4, changedAt: 444),
      ]
      #expect(try store.loadSwitches() == expected)
      #expect(try store.currentRevision() == 4)
      #expect(try store.checkpointRevision() == 0, "the commit wrote no row")
      try store.checkpointFromLog()
      #expect(try store.checkpointRevision() == 4)
      #expect(try store.loadSwitches() == expected)
    }
  }

  @Test func commitWithBrokenRevisionsChangesNothing() throws {
    try withTemporaryDirectory { directory in
      let store = try SwitchStore(path: directory + "/s.db")
      defer { store.close() }
      try store.commit([sampleChange(1, key: "a", checked: true)])
      let switchesBefore = try store.loadSwitches()
      let attempts: [[Change]] = [
        // The bad one last: the first two would have been written before it was seen.
        [sampleChange(2, key: "a"), sampleChange(3, key: "b"), sampleChange(5, key: "c")],
        [sampleChange(1, key: "b")],  // reuses a revision
        [sampleChange(3, key: "b")],  // leaves a gap
        [sampleChange(2, key: "b"), sampleChange(2, key: "c")],  // a duplicate inside the list
      ]
      for changes in attempts {
        let error = storeError { () throws(StoreError) in try store.commit(changes) }
        #expect(error?.sqliteCode == SQLITE_MISUSE, "\(changes.map(\.revision))")
        #expect(try store.currentRevision() == 1)
        #expect(try store.changes(after: 0, upTo: .max, limit: 100).map(\.revision) == [1])
        #expect(try store.loadSwitches() == switchesBefore)
        #expect(!store.connection.isInTransaction)
      }
      // The connection is not left in a transaction: the right revision still commits.
      try store.commit([sampleChange(2, key: "b")])
      #expect(try store.currentRevision() == 2)
    }
  }

  @Test func commitThatFailsInsideSQLiteRollsBack() throws {
    try withTemporaryDirectory { directory in
      let store = try SwitchStore(path: directory + "/s.db")
      defer { store.close() }
      try commitEach(store, 1...3, keys: ["a", "b"])
      let switchesBefore = try store.loadSwitches()
      // Cap the file at its current size: the next large commit fails with SQLITE_FULL part
      // way through, after some rows were written.
      let pages = try store.connection.textRows("PRAGMA page_count")[0]
      try store.connection.execute("PRAGMA max_page_count = \(pages)")
      let big = String(repeating: "x", count: 2000)
      let changes = (4...200).map { (revision: Int64) in
        Change(
          revision: revision, time: revision, key: "key\(revision)", cause: .disable,
          actor: .policy,
          state: SwitchState(
            checked: true, disabled: true, disabledReason: big, disabledBy: .admin),
          previous: SwitchState(checked: true))
      }
      let error = storeError { () throws(StoreError) in try store.commit(changes) }
      #expect(error?.sqliteCode == SQLITE_FULL)
      #expect(!store.connection.isInTransaction)
      #expect(try store.currentRevision() == 3)
      #expect(try store.oldestRetainedRevision() == 1)
      #expect(try store.changes(after: 0, upTo: .max, limit: 500).count == 3)
      #expect(try store.loadSwitches() == switchesBefore)
      // Once there is room again, the same commit goes through.
      try store.connection.execute("PRAGMA max_page_count = 1073741823")
      try store.commit(changes)
      #expect(try store.currentRevision() == 200)
    }
  }

  @Test func commitOnReadOnlyStoreThrowsAndChangesNothing() throws {
    try withTemporaryDirectory { directory in
      let path = directory + "/s.db"
      let writer = try SwitchStore(path: path)
      defer { writer.close() }
      try writer.insertNew([SwitchRecord(key: "a", state: SwitchState(checked: false))])
      try writer.commit([sampleChange(1, key: "a")])
      let reader = try SwitchStore(path: path, mode: .readOnly)
      defer { reader.close() }
      let commitError = storeError { () throws(StoreError) in
        try reader.commit([sampleChange(2, key: "a")])
      }
      #expect(commitError?.sqliteCode == SQLITE_READONLY)
      let insertError = storeError { () throws(StoreError) in
        try reader.insertNew([SwitchRecord(key: "b", state: SwitchState(checked: true))])
      }
      #expect(insertError?.sqliteCode == SQLITE_READONLY)
      let pruneError = storeError { () throws(StoreError) in _ = try reader.prune(keep: 0) }
      #expect(pruneError?.sqliteCode == SQLITE_READONLY)
      #expect(try writer.currentRevision() == 1)
      #expect(try writer.hasSwitch("b") == false)
      #expect(try writer.oldestRetainedRevision() == 1)
      // The writer is not blocked by the reader's failed attempts.
      try writer.commit([sampleChange(2, key: "a")])
      #expect(try reader.currentRevision() == 2)
    }
  }

  @Test func revisionsAndRowsSurviveCloseAndReopen() throws {
    try withTemporaryDirectory { directory in
      let path = directory + "/s.db"
      let store = try SwitchStore(path: path)
      try store.insertNew([SwitchRecord(key: "z", state: sampleStates[2])])
      try commitEach(store, 1...5, keys: ["a", "b"])
      let switches = try store.loadSwitches()
      let log = try store.changes(after: 0, upTo: .max, limit: 100)
      store.close()

      let reopened = try SwitchStore(path: path)
      defer { reopened.close() }
      #expect(try reopened.currentRevision() == 5)
      #expect(try reopened.loadSwitches() == switches)
      #expect(try reopened.changes(after: 0, upTo: .max, limit: 100) == log)
      #expect(try Schema.version(of: reopened.connection) == Schema.currentVersion)
      try reopened.commit([sampleChange(6)])
      #expect(try reopened.currentRevision() == 6)
    }
  }

  @Test func globalRevisionSurvivesPruningTheWholeLog() throws {
    try withTemporaryDirectory { directory in
      let path = directory + "/s.db"
      let store = try SwitchStore(path: path)
      try commitEach(store, 1...10)
      #expect(try store.prune(keep: 0) == 10)
      #expect(try store.oldestRetainedRevision() == nil)
      #expect(try store.currentRevision() == 10)
      store.close()

      let reopened = try SwitchStore(path: path)
      defer { reopened.close() }
      #expect(try reopened.currentRevision() == 10)
      #expect(try reopened.loadSwitches().first?.revision == 10)
      let reuse = storeError { () throws(StoreError) in try reopened.commit([sampleChange(1)]) }
      #expect(reuse?.sqliteCode == SQLITE_MISUSE)
      try reopened.commit([sampleChange(11)])
      #expect(try reopened.oldestRetainedRevision() == 11)
    }
  }

  /// A row's revision is bound NULL while the log's newest row is the
  /// revision (SQLite then numbers it); once pruning empties the log, rows
  /// carry their revision again, in the same store, not only after a reopen.
  @Test func rowsKeepTheirRevisionsAfterPruningTheWholeLog() throws {
    try withTemporaryDirectory { directory in
      let store = try SwitchStore(path: directory + "/s.db")
      defer { store.close() }
      try commitEach(store, 1...10)
      #expect(try store.prune(keep: 0) == 10)
      try store.commit([sampleChange(11), sampleChange(12, key: "bluetooth")])
      try store.commit([sampleChange(13)])
      let log = try store.changes(after: 0, upTo: .max, limit: 100)
      #expect(log.map(\.revision) == [11, 12, 13])
      #expect(log.map(\.key) == ["wifi", "bluetooth", "wifi"])
      #expect(try store.currentRevision() == 13)
    }
  }

  /// Were the store wrong about the log's end, the rows SQLite numbered
  /// would not be the changes' revisions: the commit fails whole instead,
  /// and the next one reads the log's end again.
  @Test func aCommitWhoseRowsWouldTakeOtherRevisionsFails() throws {
    try withTemporaryDirectory { directory in
      let store = try SwitchStore(path: directory + "/s.db")
      defer { store.close() }
      try commitEach(store, 1...10)
      #expect(try store.prune(keep: 0) == 10)
      // What the store believes after a commit of revision 10 with the log
      // running up to it; the log is in fact empty.
      store.committedRevision = 10
      store.rowidIsNextRevision = true
      let wrong = storeError { () throws(StoreError) in try store.commit([sampleChange(11)]) }
      #expect(wrong?.sqliteCode == SQLITE_MISUSE)
      #expect(try store.changes(after: 0, upTo: .max, limit: 100).isEmpty)
      try store.commit([sampleChange(11)])
      #expect(try store.changes(after: 0, upTo: .max, limit: 100).map(\.revision) == [11])
    }
  }

  @Test func pruneDeletesOldestInChunksAndKeepsNewest() throws {
    try withTemporaryDirectory { directory in
      let store = try SwitchStore(path: directory + "/s.db")
      defer { store.close() }
      try commitEach(store, 1...25, keys: ["a", "b", "c"])
      let newest = try store.changes(after: 18, upTo: .max, limit: 100)
      // Count the transactions: a checkpoint (the rows must hold what goes), then 18 rows in
      // chunks of at most 4 is 4 + 4 + 4 + 4 + 2.
      let commits = UnsafeMutablePointer<Int>.allocate(capacity: 1)
      defer { commits.deallocate() }
      commits.pointee = 0
      sqlite3_commit_hook(
        store.connection.handle,
        { context in
          context!.assumingMemoryBound(to: Int.self).pointee += 1
          return 0  // 0: let the commit go ahead
        }, commits)
      #expect(try store.prune(keep: 7, chunk: 4) == 18)
      #expect(commits.pointee == 6)
      sqlite3_commit_hook(store.connection.handle, nil, nil)
      #expect(try store.oldestRetainedRevision() == 19)
      #expect(try store.changes(after: 0, upTo: .max, limit: 100) == newest)
      #expect(try store.prune(keep: 7, chunk: 4) == 0)
      #expect(try store.prune(keep: 100) == 0)
      // An odd chunk size that does not divide the count, and a chunk of exactly the rest.
      #expect(try store.prune(keep: 2, chunk: 3) == 5)
      #expect(try store.changes(after: 0, upTo: .max, limit: 100).map(\.revision) == [24, 25])
      #expect(try store.currentRevision() == 25)
    }
  }

  @Test func historyIsNewestFirstWithKeyBeforeAndLimit() throws {
    try withTemporaryDirectory { directory in
      let store = try SwitchStore(path: directory + "/s.db")
      defer { store.close() }
      // Revisions 1...9 on keys a b a c a b a b c.
      let keys = ["a", "b", "a", "c", "a", "b", "a", "b", "c"]
      try store.commit(keys.enumerated().map { sampleChange(Int64($0 + 1), key: $1) })

      func revisions(_ key: String?, _ before: Int64?, _ limit: Int) throws -> [Int64] {
        try store.history(key: key, before: before, limit: limit).map(\.revision)
      }
      #expect(try revisions(nil, nil, 100) == [9, 8, 7, 6, 5, 4, 3, 2, 1])
      #expect(try revisions(nil, nil, 3) == [9, 8, 7])
      #expect(try revisions(nil, 4, 2) == [3, 2])
      #expect(try revisions(nil, 1, 10) == [])
      #expect(try revisions("a", nil, 100) == [7, 5, 3, 1])
      #expect(try revisions("a", 5, 100) == [3, 1])
      #expect(try revisions("b", nil, 2) == [8, 6])
      #expect(try revisions("b", 6, 1) == [2])
      #expect(try revisions("c", 100, 10) == [9, 4])
      #expect(try revisions("nope", nil, 10) == [])
      #expect(try revisions(nil, nil, 0) == [])
      #expect(try revisions("a", nil, -1) == [])
      #expect(try store.history(key: "a", before: nil, limit: 1).first?.key == "a")
    }
  }

  @Test func changesRespectsAfterUpToAndLimit() throws {
    try withTemporaryDirectory { directory in
      let store = try SwitchStore(path: directory + "/s.db")
      defer { store.close() }
      try commitEach(store, 1...10, keys: ["a", "b"])

      func revisions(_ after: Int64, _ upTo: Int64, _ limit: Int) throws -> [Int64] {
        try store.changes(after: after, upTo: upTo, limit: limit).map(\.revision)
      }
      #expect(try revisions(3, 7, 100) == [4, 5, 6, 7])
      #expect(try revisions(3, 7, 2) == [4, 5])
      #expect(try revisions(-5, 2, 100) == [1, 2])
      #expect(try revisions(9, .max, 100) == [10])
      #expect(try revisions(10, .max, 100) == [])
      #expect(try revisions(7, 3, 100) == [])
      #expect(try revisions(4, 4, 100) == [])
      #expect(try revisions(0, 10, 0) == [])
      #expect(try revisions(0, 10, -1) == [])
    }
  }

  @Test func insertNewLeavesExistingRowsAlone() throws {
    try withTemporaryDirectory { directory in
      let store = try SwitchStore(path: directory + "/s.db")
      defer { store.close() }
      try store.insertNew([SwitchRecord(key: "a", state: SwitchState(checked: false))])
      try store.commit([sampleChange(1, key: "a", checked: true)])
      let changed = try store.loadSwitches()
      #expect(changed.first?.revision == 1)

      try store.insertNew([
        SwitchRecord(key: "a", state: sampleStates[3]),
        SwitchRecord(key: "b", state: sampleStates[4]),
      ])
      #expect(
        try store.loadSwitches() == changed + [SwitchRecord(key: "b", state: sampleStates[4])])
      #expect(try store.hasSwitch("a"))
      #expect(try store.hasSwitch("b"))
      #expect(try store.hasSwitch("c") == false)
      #expect(try store.hasSwitch("") == false)
      // Inserting declares switches; it is not a change and takes no revision.
      #expect(try store.currentRevision() == 1)
    }
  }

  @Test func emptyCommitAndInsertDoNothing() throws {
    try withTemporaryDirectory { directory in
      let store = try SwitchStore(path: directory + "/s.db")
      defer { store.close() }
      #expect(try store.currentRevision() == 0)
      #expect(try store.oldestRetainedRevision() == nil)
      try store.commit([])
      try store.insertNew([])
      #expect(try store.currentRevision() == 0)
      #expect(try store.loadSwitches() == [])
      #expect(try store.prune(keep: 0) == 0)
    }
  }

  @Test func closedStoreThrowsInsteadOfCrashing() throws {
    try withTemporaryDirectory { directory in
      let store = try SwitchStore(path: directory + "/s.db")
      store.close()
      store.close()
      let error = storeError { () throws(StoreError) in _ = try store.currentRevision() }
      #expect(error?.sqliteCode == SQLITE_MISUSE)
      let commit = storeError { () throws(StoreError) in try store.commit([sampleChange(1)]) }
      #expect(commit?.sqliteCode == SQLITE_MISUSE)
    }
  }

  @Test func readerSeesCommitsWhileWriterIsOpenAndHoldsNoSnapshot() throws {
    try withTemporaryDirectory { directory in
      let path = directory + "/s.db"
      let writer = try SwitchStore(path: path)
      defer { writer.close() }
      try writer.insertNew([SwitchRecord(key: "a", state: SwitchState(checked: false))])
      try writer.commit([sampleChange(1, key: "a", checked: true)])

      let reader = try SwitchStore(path: path, mode: .readOnly)
      defer { reader.close() }
      #expect(try reader.currentRevision() == 1)
      #expect(try reader.loadSwitches() == writer.loadSwitches())

      try writer.commit([sampleChange(2, key: "a", checked: false), sampleChange(3, key: "b")])
      #expect(try reader.currentRevision() == 3)
      #expect(try reader.history(key: "a", before: nil, limit: 10).map(\.revision) == [2, 1])
      #expect(try reader.hasSwitch("b"))
      #expect(
        try reader.changes(after: 1, upTo: 3, limit: 10)
          == writer.changes(
            after: 1, upTo: 3, limit: 10))
      // Every reader call resets its statement, so no read transaction pins the WAL: a
      // truncating checkpoint completes (its first column, "busy", is 0).
      let checkpoint = try writer.connection.textRows("PRAGMA wal_checkpoint(TRUNCATE)")
      #expect(checkpoint == ["0"])
    }
  }
}
