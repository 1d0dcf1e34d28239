import SwitchCore
import SwitchTestSupport
import Testing

@testable import SwitchStore

/// A commit only appends to the log; `checkpointFromLog()` brings the switch rows up to date, and
/// `loadSwitches()` is the rows plus the log after the checkpoint (see SwitchStore.swift).
@Suite struct CheckpointTests {
  /// The raw switch rows, bypassing the replay: key, checked, revision.
  static func rows(_ store: SwitchStore) throws -> [String] {
    try store.connection.textRows(
      """
      SELECT keys.key || ' ' || checked || ' ' || revision
      FROM switches JOIN keys ON keys.id = key_id ORDER BY keys.key
      """)
  }

  @Test func commitsAppendRowsFollowAtTheCheckpoint() throws {
    try withTemporaryDirectory { directory in
      let path = directory + "/s.db"
      var store = try SwitchStore(path: path)
      try store.insertNew([
        SwitchRecord(key: "a", state: SwitchState(checked: false)),
        SwitchRecord(key: "b", state: SwitchState(checked: false)),
      ])
      try store.commit([sampleChange(1, key: "a", checked: true)])
      try store.commit([sampleChange(2, key: "a", checked: false), sampleChange(3, key: "c")])
      // The rows still hold the defaults; the state is the rows plus the log.
      #expect(try Self.rows(store) == ["a 0 0", "b 0 0"])
      #expect(try store.checkpointRevision() == 0)
      let expected = [
        SwitchRecord(
          key: "a", state: SwitchState(checked: false), revision: 2,
          changedAt: sampleChange(2).time),
        SwitchRecord(key: "b", state: SwitchState(checked: false)),
        SwitchRecord(
          key: "c", state: SwitchState(checked: true), revision: 3,
          changedAt: sampleChange(3).time),
      ]
      #expect(try store.loadSwitches() == expected)
      #expect(try store.hasSwitch("c"))
      store.close()

      // A start after a crash replays the log after the checkpoint.
      store = try SwitchStore(path: path)
      defer { store.close() }
      #expect(try store.loadSwitches() == expected)
      try store.checkpointFromLog()
      #expect(try Self.rows(store) == ["a 0 2", "b 0 0", "c 1 3"])
      #expect(try store.checkpointRevision() == 3)
      #expect(try store.loadSwitches() == expected)
      // Nothing new: a second checkpoint changes nothing.
      try store.checkpointFromLog()
      #expect(try store.checkpointRevision() == 3)

      // History of a key needs its newest change: found in the rows or the log's tail.
      try store.commit([sampleChange(4, key: "a", checked: true)])
      #expect(try store.history(key: "a", before: nil, limit: 10).map(\.revision) == [4, 2, 1])
      #expect(try store.history(key: "c", before: nil, limit: 10).map(\.revision) == [3])
      #expect(
        try store.history(key: "a", before: nil, limit: 10, newest: 2).map(\.revision) == [2, 1])
    }
  }

  /// The writer's way: it passes the rows of the switches it changed.
  @Test func aCheckpointFromTheCallersRows() throws {
    try withTemporaryDirectory { directory in
      let path = directory + "/s.db"
      var store = try SwitchStore(path: path)
      try store.commit([sampleChange(1, key: "a", checked: true), sampleChange(2, key: "b")])
      let rows = try store.loadSwitches()
      // Only at the log's revision: rows of an older or newer state would be wrong.
      #expect(throws: StoreError.self) { try store.checkpoint(rows, at: 1) }
      #expect(try store.checkpointRevision() == 0)
      try store.checkpoint(rows, at: 2)
      #expect(try store.checkpointRevision() == 2)
      #expect(try Self.rows(store) == ["a 1 1", "b 1 2"])
      store.close()
      store = try SwitchStore(path: path)
      defer { store.close() }
      #expect(try store.loadSwitches() == rows)
    }
  }

  /// A new switch's row keeps the time it was declared, which no read
  /// shows (it never changed); its first change's checkpoint writes the
  /// change's time over it.
  @Test func aNewRowKeepsItsDeclarationTimeUnshown() throws {
    try withTemporaryDirectory { directory in
      let path = directory + "/s.db"
      var store = try SwitchStore(path: path)
      defer { store.close() }
      let declared: Int64 = 1_780_000_000_000
      try store.insertNew(
        [
          SwitchRecord(key: "a", state: SwitchState(checked: false)),
          SwitchRecord(key: "b", state: SwitchState(checked: true)),
        ], declaredAt: declared)
      let times = """
        SELECT keys.key || ' ' || changed_at FROM switches JOIN keys ON id = key_id
        ORDER BY keys.key
        """
      #expect(try store.connection.textRows(times) == ["a \(declared)", "b \(declared)"])
      let fresh = [
        SwitchRecord(key: "a", state: SwitchState(checked: false)),
        SwitchRecord(key: "b", state: SwitchState(checked: true)),
      ]
      #expect(try store.loadSwitches() == fresh)

      try store.commit([sampleChange(1, key: "a", checked: true)])
      try store.checkpoint([try store.loadSwitches()[0]], at: 1)
      let changed = sampleChange(1).time
      #expect(try store.connection.textRows(times) == ["a \(changed)", "b \(declared)"])
      store.close()
      store = try SwitchStore(path: path)
      #expect(
        try store.loadSwitches() == [
          SwitchRecord(
            key: "a", state: SwitchState(checked: true), revision: 1, changedAt: changed),
          fresh[1],
        ])
    }
  }

  /// A checkpoint writes its rows as multi-row upserts of 64, 16 and 4
  /// rows, then single rows (`SQL.upsertSwitchesSizes`): checkpoints of
  /// every size from 1 to 90, some rows holding details, each row read
  /// back as written, and once reopened (a wrong row offset shows here as
  /// a row given another switch's values, or one left unwritten).
  @Test func checkpointsOfEverySizeReadBackAsWritten() throws {
    try withTemporaryDirectory { directory in
      let path = directory + "/s.db"
      var store = try SwitchStore(path: path)
      defer { store.close() }
      let keys = (0..<97).map { "s\($0)" }
      try store.insertNew(keys.map { SwitchRecord(key: $0, state: SwitchState(checked: false)) })
      let held = SwitchState(
        checked: true, readOnly: true, readOnlyReason: "exam", heldBy: .admin, valueFixed: true)
      var revision: Int64 = 0
      var expected: [SwitchRecord] = []
      for size in 1...90 {
        // `size` different keys (5 and 97 share no factor), a few held.
        var group: [Change] = []
        for row in 0..<size {
          revision += 1
          var change = sampleChange(
            revision, key: keys[(row * 5 + size) % keys.count], checked: (row + size) % 2 == 0)
          if (row + size) % 9 == 0 { change.state = held }
          group.append(change)
        }
        try store.commit(group)
        // The rows plus the log, which the rows alone must hold once checkpointed.
        expected = try store.loadSwitches()
        let changed = Set(group.map(\.key))
        try store.checkpoint(expected.filter { changed.contains($0.key) }, at: revision)
        let rows = expected.sorted { $0.key < $1.key }.map {
          "\($0.key) \($0.state.checked ? 1 : 0) \($0.revision)"
        }
        #expect(try Self.rows(store) == rows, "size \(size)")
        #expect(try store.loadSwitches() == expected, "size \(size)")
      }
      #expect(expected.contains { $0.state == held })
      // The held rows written again at the revisions they hold, holding no
      // more (a default that changed), five in one checkpoint (a statement
      // of 4 and one of 1): each one's details go.
      // Details at their switch row's revision: the ones that count.
      let details = """
        SELECT count(*) FROM switch_details JOIN switches USING (key_id)
        WHERE switch_details.revision = switches.revision
        """
      let heldRows = expected.indices.filter { expected[$0].state == held }
      #expect(heldRows.count >= 5)
      #expect(try store.connection.textRows(details) == ["\(heldRows.count)"])
      for index in heldRows.prefix(5) { expected[index].state = SwitchState(checked: true) }
      try store.checkpoint(heldRows.prefix(5).map { expected[$0] }, at: revision)
      #expect(try store.connection.textRows(details) == ["\(heldRows.count - 5)"])
      #expect(try store.loadSwitches() == expected)
      store.close()
      store = try SwitchStore(path: path)
      #expect(try store.loadSwitches() == expected)
    }
  }

  /// A State that holds more than `checked` keeps it in `switch_details`,
  /// beside its row; once it holds no more, its row alone says so (the
  /// details row of the older revision is left and does not count), through
  /// both kinds of checkpoint and a reopening. A free switch writes none.
  @Test func aSwitchRowsDetailsCountOnlyAtItsRevision() throws {
    try withTemporaryDirectory { directory in
      let path = directory + "/s.db"
      var store = try SwitchStore(path: path)
      defer { store.close() }
      /// The States the store loads once closed and opened again.
      func reopened() throws -> [SwitchState] {
        store.close()
        store = try SwitchStore(path: path)
        return try store.loadSwitches().map(\.state)
      }
      let details =
        "SELECT keys.key || ' ' || revision FROM switch_details JOIN keys ON id = key_id"
      let held = SwitchState(
        checked: true, readOnly: true, readOnlyReason: "exam", heldBy: .admin, valueFixed: true,
        readOnlyUntil: 900)
      let on = SwitchState(checked: true)
      let off = SwitchState(checked: false)
      try store.insertNew([
        SwitchRecord(key: "email", state: held), SwitchRecord(key: "wifi", state: on),
      ])
      #expect(try store.connection.textRows(details) == ["email 0"])
      #expect(try store.loadSwitches().map(\.state) == [held, on])

      // Unlocked, checkpointed from the caller's rows: the row alone is the State.
      var unlock = sampleChange(1, key: "email", checked: true, cause: .unlock)
      unlock.previous = held
      try store.commit([unlock, sampleChange(2, key: "wifi", checked: false)])
      try store.checkpoint(try store.loadSwitches(), at: 2)
      #expect(try store.connection.textRows(details) == ["email 0"])
      #expect(try reopened() == [on, off])

      // Held again, checkpointed from the log: its details at the new revision.
      var lock = sampleChange(3, key: "email", checked: true, cause: .lock)
      lock.state = held
      try store.commit([lock])
      try store.checkpointFromLog()
      #expect(try store.connection.textRows(details) == ["email 3"])
      #expect(try reopened() == [held, off])

      // Written again at the revision it holds, holding no more: its details go.
      var free = try store.loadSwitches()
      free[0].state = off
      try store.checkpoint(free, at: 3)
      #expect(try store.connection.textRows(details) == [])
      #expect(try store.loadSwitches() == free)

      // Held and freed again, checkpointed from the log: the freeing change's
      // details (of the State before it) hold the defaults at its revision.
      lock.revision = 4
      unlock.revision = 5
      try store.commit([lock])
      try store.commit([unlock])
      try store.checkpointFromLog()
      #expect(try store.connection.textRows(details) == ["email 5"])
      #expect(try reopened() == [on, off])
    }
  }

  /// A checkpoint writes a row and its details whole (`upsertSwitches` and
  /// `upsertSwitchDetails` replace them), so the columns they name must be
  /// every column of each table: one left out, as a migration could add,
  /// would be reset at each checkpoint.
  @Test func aCheckpointWritesEveryColumnOfTheRow() throws {
    try withTemporaryDirectory { directory in
      let store = try SwitchStore(path: directory + "/s.db")
      defer { store.close() }
      for (table, columns) in [
        ("switches", StoreStatements.SQL.switchRowColumns),
        ("switch_details", StoreStatements.SQL.switchDetailColumns),
      ] {
        let stored = try store.connection.textRows(
          "SELECT name FROM pragma_table_info('\(table)')")
        let written = columns.split(separator: ",").map {
          String($0.filter { $0 != " " && $0 != "\n" })
        }
        #expect(written == stored, "\(table)")
      }
      // And a load reads each of them but the keys (`readSwitch`).
      let read = StoreStatements.SQL.switchColumns.split(separator: ",").map {
        String($0.filter { $0 != " " && $0 != "\n" })
      }
      let rowColumns = try store.connection.textRows(
        "SELECT 'switch.' || name FROM pragma_table_info('switches') WHERE name != 'key_id'")
      let detailColumns = try store.connection.textRows(
        """
        SELECT 'details.' || name FROM pragma_table_info('switch_details')
        WHERE name NOT IN ('key_id', 'revision')
        """)
      #expect(Set(read) == Set(["keys.key"] + rowColumns + detailColumns))
    }
  }

  /// Pruning checkpoints first, so the rows hold every change it deletes.
  @Test func pruningNeverLosesTheState() throws {
    try withTemporaryDirectory { directory in
      let path = directory + "/s.db"
      var store = try SwitchStore(path: path)
      try commitEach(store, 1...30, keys: ["a", "b", "c"])
      let before = try store.loadSwitches()
      #expect(try store.prune(keep: 0) == 30)
      #expect(try store.changes(after: 0, upTo: .max, limit: 100) == [])
      #expect(try store.loadSwitches() == before)
      store.close()
      store = try SwitchStore(path: path)
      defer { store.close() }
      #expect(try store.loadSwitches() == before)
      #expect(try store.currentRevision() == 30)
      try store.commit([sampleChange(31, key: "b", checked: false)])
      #expect(try store.history(key: "b", before: nil, limit: 10).map(\.revision) == [31])
    }
  }
}
