import CSQLite
import SeededRandom
import SwitchCore
import SwitchTestSupport
import Testing

@testable import SwitchStore

/// A key's history is a walk down `key_previous` with `key_marks` as a sparse index (see the
/// top of SwitchStore.swift). These tests compare every page against a filter of the whole log,
/// across group commits, reopenings, pruning and the migration from schema 1.
@Suite struct KeyHistoryTests {
  static let keys = ["a", "b", "c", "rare"]

  /// A skewed, seeded mix: "a" most, "rare" seldom, in groups of 1 to 9 changes per commit.
  static func commitRandomLog(
    _ store: SwitchStore, from first: Int64, count: Int, seed: UInt64
  ) throws {
    var random = SplitMix64(seed: seed)
    var revision = first
    let last = first + Int64(count) - 1
    while revision <= last {
      let size = min(Int64(random.next() % 9 + 1), last - revision + 1)
      var group: [Change] = []
      for r in revision..<(revision + size) {
        let roll = random.next() % 20
        let key = roll < 10 ? "a" : roll < 15 ? "b" : roll < 19 ? "c" : "rare"
        group.append(sampleChange(r, key: key, checked: random.next() % 2 == 0))
      }
      try store.commit(group)
      revision += size
    }
  }

  /// Every key, every `before` from below the oldest to above the newest, several limits.
  static func expectPagesMatchTheLog(_ store: SwitchStore) throws {
    let log = try store.changes(after: 0, upTo: .max, limit: 1_000_000)
    let newest = log.last?.revision ?? 0
    for key in keys + ["never"] {
      for before in [nil] + Array(Int64(-1)...(newest + 2)).map(Optional.some) {
        for limit in [1, 2, 5, 1000] {
          let expected = log.reversed().filter { $0.key == key && $0.revision < before ?? .max }
            .prefix(limit)
          let page = try store.history(key: key, before: before, limit: limit)
          #expect(page == Array(expected), "key \(key) before \(String(describing: before))")
          // As the daemon asks: with the key's newest revision known.
          let newest = log.last { $0.key == key }?.revision ?? 0
          #expect(try store.history(key: key, before: before, limit: limit, newest: newest) == page)
        }
      }
    }
  }

  /// Between two marks of a key (and above its newest) lie fewer than `spacing` changes.
  static func expectMarksBoundTheWalk(_ store: SwitchStore, spacing: Int) throws {
    let log = try store.changes(after: 0, upTo: .max, limit: 1_000_000)
    let marks = Set(
      try store.connection.textRows("SELECT key || ':' || revision FROM key_marks"))
    for key in keys {
      var unmarked = 0
      for change in log where change.key == key {
        if marks.contains("\(key):\(change.revision)") {
          unmarked = 0
        } else {
          unmarked += 1
          #expect(unmarked < spacing, "\(key) at \(change.revision)")
        }
      }
    }
  }

  @Test func pagesMatchTheLogAcrossReopeningAndPruning() throws {
    try withTemporaryDirectory { directory in
      let path = directory + "/s.db"
      var store = try SwitchStore(path: path, mode: .readWrite, markSpacing: 3)
      try Self.commitRandomLog(store, from: 1, count: 150, seed: 1)
      try Self.expectPagesMatchTheLog(store)
      try Self.expectMarksBoundTheWalk(store, spacing: 3)
      store.close()

      // After reopening, the chains continue from the switch rows.
      store = try SwitchStore(path: path, mode: .readWrite, markSpacing: 3)
      defer { store.close() }
      try Self.commitRandomLog(store, from: 151, count: 150, seed: 2)
      try Self.expectPagesMatchTheLog(store)
      try Self.expectMarksBoundTheWalk(store, spacing: 3)

      // A reader sees the same pages.
      let reader = try SwitchStore(path: path, mode: .readOnly)
      defer { reader.close() }
      #expect(
        try reader.history(key: "b", before: 200, limit: 7)
          == store.history(key: "b", before: 200, limit: 7))

      // Pruning ends chains and removes the marks of what it deleted.
      #expect(try store.prune(keep: 120, chunk: 50) == 180)
      try Self.expectPagesMatchTheLog(store)
      let oldestMark = try store.connection.textRows("SELECT min(revision) FROM key_marks")
      #expect(Int64(oldestMark.first ?? "") ?? 0 > 180)
    }
  }

  @Test func aFailedCommitLeavesTheChainsAsTheFileHasThem() throws {
    try withTemporaryDirectory { directory in
      let store = try SwitchStore(path: directory + "/s.db", mode: .readWrite, markSpacing: 2)
      defer { store.close() }
      try store.commit([sampleChange(1, key: "a"), sampleChange(2, key: "b")])
      // Revision 4 does not follow 2: the whole group is refused and rolled back.
      #expect(throws: StoreError.self) {
        try store.commit([sampleChange(3, key: "a"), sampleChange(4, key: "a")].reversed())
      }
      try store.commit([sampleChange(3, key: "a"), sampleChange(4, key: "b")])
      #expect(try store.history(key: "a", before: nil, limit: 10).map(\.revision) == [3, 1])
      #expect(try store.history(key: "b", before: nil, limit: 10).map(\.revision) == [4, 2])
    }
  }

  /// After a start loads the switches and the users' values (as the daemon's writer does), a
  /// chain's first change finds the change before it without looking for its key in the
  /// log's tail (`newestInTail`, a scan: ~650k instructions with 1,000 changes there), and
  /// each row's `key_previous` is still the revision of the change before it of the same key
  /// and user: in the tail, in a row as of the checkpoint, or none.
  @Test func aLoadedStoreStartsEachChainWithoutScanningTheTail() throws {
    try withTemporaryDirectory { directory in
      let path = directory + "/s.db"
      var store = try SwitchStore(path: path)
      try store.insertNew(
        ["a", "b", "c"].map { SwitchRecord(key: $0, state: SwitchState(checked: true)) })
      // Checkpointed: a's switch-level change and user 1000's value of c.
      try store.commit([
        sampleChange(1, key: "a"),
        UserValueTests.userChange(2, key: "c", user: 1000, checked: false),
      ])
      try store.checkpointFromLog()
      // The tail: b's switch-level change and two of user 1001's value of c.
      try store.commit([
        sampleChange(3, key: "b"),
        UserValueTests.userChange(4, key: "c", user: 1001, checked: true),
        UserValueTests.userChange(5, key: "c", user: 1001, checked: false),
      ])
      store.close()

      store = try SwitchStore(path: path)
      defer { store.close() }
      _ = try store.loadSwitches()
      _ = try store.loadUserValues()
      try store.insertNew([SwitchRecord(key: "new", state: SwitchState(checked: false))])
      try store.commit([
        sampleChange(6, key: "a"),
        sampleChange(7, key: "b"),
        sampleChange(8, key: "new"),
        UserValueTests.userChange(9, key: "c", user: 1000, checked: true),
        UserValueTests.userChange(10, key: "c", user: 1001, checked: true),
        UserValueTests.userChange(11, key: "c", user: 1002, checked: true),
        UserValueTests.userChange(12, key: "new", user: 1003, checked: true),
      ])
      func runs(_ statement: SQLiteStatement) -> Int32 {
        sqlite3_stmt_status(statement.handle, Int32(SQLITE_STMTSTATUS_RUN), 0)
      }
      #expect(runs(store.statements.newestInTail) == 0)
      // The new switch's chain came with its row, its key numbered then (the one insert):
      // rows are read for the two users' values outside the tail only.
      #expect(runs(store.statements.switchRevision) == 0)
      #expect(runs(store.statements.userValueRevision) == 3)
      #expect(runs(store.statements.insertKey) == 1)
      // Keys are looked up by name for the switches' chains loaded without their number
      // (a, b, and c by its first user), and once by `insertNew`; every other user's chain
      // takes the number its switch's chain has.
      #expect(runs(store.statements.keyNumber) == 4)
      let previous = try store.connection.textRows(
        """
        SELECT revision || ':' || ifnull(key_previous, '-') FROM changes
        WHERE revision > 5 ORDER BY revision
        """)
      #expect(previous == ["6:1", "7:3", "8:-", "9:2", "10:5", "11:-", "12:-"])
      // The first change since opening is marked, unless nothing comes before it.
      let marks = try store.connection.textRows(
        "SELECT key || ':' || revision FROM key_marks WHERE revision > 5 ORDER BY revision")
      #expect(marks == ["a:6", "b:7"])
    }
  }

  /// A database written by schema 1 (an index on the log's keys, no chain) is migrated: its
  /// rows get their chain and marks, and the index is gone.
  @Test func schemaOneIsMigrated() throws {
    try withTemporaryDirectory { directory in
      let path = directory + "/s.db"
      let old = try SQLiteConnection(path: path, flags: SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE)
      try old.execute(Schema.changeLog.sql)
      try old.execute("PRAGMA user_version = 1")
      var random = SplitMix64(seed: 3)
      for revision in 1...200 {
        let key = Self.keys[Int(random.next() % 4)]
        try old.execute(
          """
          INSERT INTO changes(revision, key, cause, time, s_checked, s_read_only, s_disabled,
            p_checked, p_read_only, p_disabled)
          VALUES (\(revision), '\(key)', 'set', \(revision), \(revision % 2), 0, 0,
            \(1 - revision % 2), 0, 0);
          INSERT INTO switches(key, checked, read_only, disabled, revision, changed_at)
          VALUES ('\(key)', \(revision % 2), 0, 0, \(revision), \(revision))
          ON CONFLICT(key) DO UPDATE SET revision = excluded.revision;
          """)
      }
      old.close()

      let store = try SwitchStore(path: path)
      defer { store.close() }
      #expect(
        try store.connection.textRows("PRAGMA user_version") == ["\(Schema.currentVersion)"])
      // Schema 1 kept its rows up to date: they are the checkpoint.
      #expect(try store.checkpointRevision() == 200)
      #expect(
        try store.connection.textRows(
          "SELECT name FROM sqlite_schema WHERE name = 'changes_by_key'") == [])
      try Self.expectPagesMatchTheLog(store)
      try Self.expectMarksBoundTheWalk(store, spacing: 64)
      // And new commits continue the migrated chains.
      try store.commit([sampleChange(201, key: "rare"), sampleChange(202, key: "a")])
      try Self.expectPagesMatchTheLog(store)
    }
  }
}
