import CSQLite
import SwitchCore
import SwitchTestSupport
import Testing

@testable import SwitchStore

@Suite struct OpeningTests {
  enum Garbage: CaseIterable {
    case randomBytes
    case textFile
    case truncatedHeader

    var bytes: [UInt8] {
      switch self {
      case .randomBytes:
        var generator = SystemRandomNumberGenerator()
        return (0..<4096).map { _ in UInt8.random(in: 0...255, using: &generator) }
      case .textFile:
        return Array(String(repeating: "this is not a database\n", count: 200).utf8)
      case .truncatedHeader:
        return Array("SQLite format 3\0".utf8) + [UInt8](repeating: 0xff, count: 84)
      }
    }
  }

  @Test(arguments: Garbage.allCases, [SwitchStore.Mode.readWrite, .readOnly])
  func garbageFileIsRefusedAsDamagedAndLeftAlone(garbage: Garbage, mode: SwitchStore.Mode)
    throws
  {
    try withTemporaryDirectory { directory in
      let path = directory + "/s.db"
      let bytes = garbage.bytes
      try writeWholeFile(path, bytes)
      let error = storeError { () throws(StoreError) in
        _ = try SwitchStore(path: path, mode: mode)
      }
      guard case .damaged(let reportedPath, _)? = error else {
        Issue.record("expected .damaged, got \(String(describing: error))")
        return
      }
      #expect(reportedPath == path)
      #expect(try readWholeFileBytes(path) == bytes, "a damaged file must never be rewritten")
      #expect(!fileExists(path + "-wal"))
    }
  }

  enum Corruption: CaseIterable {
    /// A page header smashed: quick_check itself fails with SQLITE_CORRUPT.
    case smashedPageHeader
    /// A wrong fragmented-bytes count: every query still works, and only quick_check's report
    /// (rows other than "ok") shows the damage.
    case wrongFragmentCount
  }

  /// Inserts 500 switches with 200-byte reasons (the switches b-tree spans
  /// the middle of the file); returns the page size and count.
  static func fillWithFiveHundredSwitches(_ store: SwitchStore) throws -> (Int, Int) {
    let reason = String(repeating: "r", count: 200)
    try store.insertNew(
      (0..<500).map {
        SwitchRecord(
          key: "key.\($0)",
          state: SwitchState(checked: true, readOnly: true, readOnlyReason: reason))
      })
    return (
      Int(try store.connection.textRows("PRAGMA page_size")[0])!,
      Int(try store.connection.textRows("PRAGMA page_count")[0])!
    )
  }

  @Test(arguments: Corruption.allCases)
  func corruptPageIsRefusedByQuickCheck(corruption: Corruption) throws {
    try withTemporaryDirectory { directory in
      let path = directory + "/s.db"
      let store = try SwitchStore(path: path)
      let (pageSize, pageCount) = try Self.fillWithFiveHundredSwitches(store)
      // Closing the last connection checkpoints the WAL into the main file.
      store.close()
      #expect(pageCount > 8)
      #expect(!fileExists(path + "-wal"))
      // A page in the middle of the file: a leaf of the switches b-tree.
      let page = pageSize * (pageCount / 2)
      switch corruption {
      case .smashedPageHeader:
        try patchFile(path, at: page, [UInt8](repeating: 0xee, count: 64))
      case .wrongFragmentCount:
        // Byte 7 of a b-tree page header counts fragmented free bytes; it is 0 here.
        try patchFile(path, at: page + 7, [9])
        let reader = try SwitchStore(path: path, mode: .readOnly)
        #expect(try reader.loadSwitches().count == 500, "the damage is invisible to queries")
        reader.close()
      }

      let error = storeError { () throws(StoreError) in _ = try SwitchStore(path: path) }
      guard case .damaged(let reportedPath, let detail)? = error else {
        Issue.record("expected .damaged, got \(String(describing: error))")
        return
      }
      #expect(reportedPath == path)
      #expect(!detail.isEmpty)
    }
  }

  /// `HealthCheck.alongside`: a file that needs no write to be opened is
  /// read at once while `checkHealth(of:)` runs on another connection, and
  /// nothing is written until the check passed; one that does (new, or not
  /// WAL yet) is checked first, as always. The check finds damage that
  /// every query misses.
  @Test func aCheckAlongsideHoldsWritesBackAndFindsWhatQueriesMiss() throws {
    try withTemporaryDirectory { directory in
      let path = directory + "/s.db"
      let new = try SwitchStore(path: path, healthCheck: .alongside)
      #expect(!new.healthCheckPending, "a new file is checked (and made) first")
      let (pageSize, pageCount) = try Self.fillWithFiveHundredSwitches(new)
      new.close()

      let sound = try SwitchStore(path: path, healthCheck: .alongside)
      #expect(sound.healthCheckPending)
      #expect(try sound.loadSwitches().count == 500, "it reads before the check")
      let early = SwitchRecord(key: "before.check", state: SwitchState(checked: false))
      let refused = storeError { () throws(StoreError) in try sound.insertNew([early]) }
      #expect(
        refused?.description.contains("health check") == true, "\(String(describing: refused))")
      try SwitchStore.checkHealth(of: path)
      sound.healthCheckPassed()
      try sound.insertNew([SwitchRecord(key: "after.check", state: SwitchState(checked: false))])
      sound.close()

      // Byte 7 of a b-tree page header counts fragmented free bytes; it is 0 here.
      try patchFile(path, at: pageSize * (pageCount / 2) + 7, [9])
      let before = try readWholeFileBytes(path)
      let damaged = try SwitchStore(path: path, healthCheck: .alongside)
      #expect(try damaged.loadSwitches().count == 501, "the damage is invisible to queries")
      let error = storeError { () throws(StoreError) in try SwitchStore.checkHealth(of: path) }
      #expect(error?.isDamaged == true, "\(String(describing: error))")
      #expect(damaged.healthCheckPending)
      damaged.close()
      #expect(try readWholeFileBytes(path) == before, "a damaged file must never be rewritten")
    }
  }

  @Test func healthyDatabasePassesQuickCheckOnEveryOpen() throws {
    try withTemporaryDirectory { directory in
      let path = directory + "/s.db"
      let store = try SwitchStore(path: path)
      try store.insertNew(sampleStates.enumerated().map { SwitchRecord(key: "k\($0)", state: $1) })
      try commitEach(store, 1...20, keys: ["k1", "k2", "new"])
      #expect(try store.connection.textRows("PRAGMA quick_check") == ["ok"])
      store.close()
      let reopened = try SwitchStore(path: path)
      defer { reopened.close() }
      #expect(try reopened.currentRevision() == 20)
      #expect(try reopened.connection.textRows("PRAGMA integrity_check") == ["ok"])
    }
  }

  @Test(arguments: [SwitchStore.Mode.readWrite, .readOnly])
  func newerSchemaIsRefusedAndLeftAlone(mode: SwitchStore.Mode) throws {
    try withTemporaryDirectory { directory in
      let path = directory + "/s.db"
      try SwitchStore(path: path).close()
      let raw = try SQLiteConnection(path: path, flags: SQLITE_OPEN_READWRITE)
      try raw.execute("PRAGMA user_version = 99")
      raw.close()
      let before = try readWholeFileBytes(path)

      let error = storeError { () throws(StoreError) in
        _ = try SwitchStore(path: path, mode: mode)
      }
      guard case .newerSchema(let reportedPath, let found, let supported)? = error else {
        Issue.record("expected .newerSchema, got \(String(describing: error))")
        return
      }
      #expect(reportedPath == path)
      #expect(found == 99)
      #expect(supported == Schema.currentVersion)
      #expect(
        try readWholeFileBytes(path) == before, "a newer file must not be migrated or modified")
    }
  }

  @Test func readOnlyOpenOfMissingFileFailsWithoutCreatingIt() throws {
    try withTemporaryDirectory { directory in
      let path = directory + "/missing.db"
      let error = storeError { () throws(StoreError) in
        _ = try SwitchStore(path: path, mode: .readOnly)
      }
      #expect(error?.sqliteCode == SQLITE_CANTOPEN)
      #expect(error?.description.contains(path) == true)
      #expect(!fileExists(path))
    }
  }

  @Test func readOnlyOpenOfUnmigratedFileFailsAndReadWriteMigratesIt() throws {
    try withTemporaryDirectory { directory in
      let path = directory + "/empty.db"
      try writeWholeFile(path, [])
      let error = storeError { () throws(StoreError) in
        _ = try SwitchStore(path: path, mode: .readOnly)
      }
      #expect(error?.sqliteCode == SQLITE_ERROR)
      let writer = try SwitchStore(path: path)
      defer { writer.close() }
      #expect(try writer.currentRevision() == 0)
      let reader = try SwitchStore(path: path, mode: .readOnly)
      reader.close()
    }
  }

  @Test func writerUsesWALFullSyncAndTheCurrentSchema() throws {
    try withTemporaryDirectory { directory in
      let store = try SwitchStore(path: directory + "/s.db")
      defer { store.close() }
      #expect(try store.connection.textRows("PRAGMA journal_mode") == ["wal"])
      // 2 is FULL: the WAL is fsynced at every commit, so a commit is durable when it returns.
      #expect(try store.connection.textRows("PRAGMA synchronous") == ["2"])
      #expect(try store.connection.textRows("PRAGMA user_version") == ["\(Schema.currentVersion)"])
      #expect(try store.connection.textRows("PRAGMA busy_timeout") == ["5000"])
    }
  }

  @Test func errorDescriptionsNameTheFileAndWhatToDo() {
    let damaged = StoreError.damaged(path: "/x/y.db", detail: "file is not a database")
    #expect(
      damaged.description
        == "the database /x/y.db is damaged (file is not a database): move it aside and "
        + "restore a backup, or delete it to start from the defaults")
    let newer = StoreError.newerSchema(path: "/x/y.db", found: 99, supported: 1)
    #expect(newer.description.contains("/x/y.db"))
    #expect(newer.description.contains("99"))
    let full = StoreError.sqlite(
      SQLiteError(
        code: SQLITE_FULL, extendedCode: SQLITE_FULL, message: "database or disk is full",
        context: "`COMMIT` on /x/y.db"))
    #expect(full.description.contains("/x/y.db"))
    #expect(full.description.contains("free some disk space"))
  }

  @Test func sqliteErrorKeepsPrimaryAndExtendedCodes() throws {
    try withTemporaryDirectory { directory in
      let store = try SwitchStore(path: directory + "/s.db")
      defer { store.close() }
      // A duplicate primary key straight through the wrapper: SQLITE_CONSTRAINT with the
      // _PRIMARYKEY extension, as SQLite reports it.
      let error: SQLiteError? = {
        do throws(SQLiteError) {
          try store.connection.execute("INSERT INTO meta(name, value) VALUES ('revision', 1)")
          return nil
        } catch {
          return error
        }
      }()
      #expect(error?.code == SQLITE_CONSTRAINT)
      // SQLITE_CONSTRAINT_PRIMARYKEY is a macro expression, which Swift does not import.
      #expect(error?.extendedCode == SQLITE_CONSTRAINT | (6 << 8))
      #expect(error?.message.contains("UNIQUE") == true)
    }
  }
}
