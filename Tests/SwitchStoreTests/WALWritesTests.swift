import CSQLite
import CSQLiteVFS
import Glibc
import SwitchCore
import SwitchTestSupport
import Testing

@testable import SwitchStore

/// The store's VFS (`CSQLiteVFS`) writes a commit's WAL frames (each a
/// 24-byte header and a page) in one system call; SQLite's own unix VFS
/// makes two a frame. Counted with the kernel's count of this thread's
/// write calls (`syscw` in /proc/thread-self/io), against the frames the
/// commit added to the WAL.
@Suite(
  .enabled(
    if: (try? readWholeFile("/proc/thread-self/io")) != nil,
    "/proc/thread-self/io is not readable here (no task I/O accounting)"))
struct WALWritesTests {
  @Test func eachCommitIsOneWriteCall() throws {
    try withTemporaryDirectory { directory in
      let path = directory + "/s.db"
      let store = try SwitchStore(path: path)
      defer { store.close() }
      let frameSize = try Int(store.connection.textRows("PRAGMA page_size")[0])! + 24
      // Warm-up: the first commit after opening reads what the store keeps
      // (the newest revision, the marks) and writes a mark besides.
      try commitEach(store, 1...1)
      var revision: Int64 = 1
      var largest = 0
      for round in 1...30 {
        let walBefore = try fileSize(path + "-wal")
        let callsBefore = try writeCalls()
        // Many keys a commit now and then: a commit of more than one page.
        let keys = round % 5 == 0 ? (0..<40).map { "key.\($0)" } : ["wifi"]
        try store.commit(
          keys.map { key in
            revision += 1
            return sampleChange(revision, key: key, checked: revision % 2 == 0)
          })
        let calls = try writeCalls() - callsBefore
        let added = try fileSize(path + "-wal") - walBefore
        #expect(added > 0 && added % frameSize == 0, "round \(round): \(added) bytes")
        #expect(calls == 1, "round \(round): \(calls) write calls for \(added / frameSize) frames")
        largest = max(largest, added / frameSize)
      }
      #expect(largest > 2, "no commit of more than two frames")
      // What was written that way reads back.
      store.close()
      let reopened = try SwitchStore(path: path)
      defer { reopened.close() }
      #expect(try reopened.currentRevision() == revision)
    }
  }

  /// A transaction larger than what the VFS keeps back goes out a limit at
  /// a time: no more memory than the limit, and the whole commit reads back.
  @Test func aCommitLargerThanTheLimitIsWrittenALimitAtATime() throws {
    try withTemporaryDirectory { directory in
      let path = directory + "/raw.db"
      let connection = try Self.openTable(path, ["PRAGMA page_size=1024"])
      defer { connection.close() }
      let frameSize = 1024 + 24
      let walBefore = try fileSize(path + "-wal")
      let callsBefore = try writeCalls()
      // ~500 KB of rows: several limits' worth of frames.
      try connection.execute(Self.insertRows)
      let calls = try writeCalls() - callsBefore
      let frames = (try fileSize(path + "-wal") - walBefore) / frameSize
      let framesPerWrite = Int(switchd_wal_run_limit) / frameSize
      #expect(frames > framesPerWrite, "\(frames) frames: within one limit")
      #expect(calls == (frames + framesPerWrite - 1) / framesPerWrite, "\(calls) writes")
      #expect(try connection.textRows("SELECT count(*) FROM t") == ["2000"])
    }
  }

  /// A commit returns with every header SQLite wrote in the file, also
  /// when no sync follows (`synchronous=NORMAL`) and SQLite rewrote the
  /// checksums of frames it had spilled (a page changed again after the
  /// cache spilled it to the WAL): a copy of the files taken right after the
  /// commit, as a crash would leave them, holds the whole transaction.
  /// Keeping every 24-byte write back (the first version) lost it here.
  @Test func aCommitLeavesNoHeaderBehindWhenSQLiteRewritesChecksums() throws {
    try withTemporaryDirectory { directory in
      let path = directory + "/raw.db"
      let connection = try Self.openTable(
        path, ["PRAGMA synchronous=NORMAL", "PRAGMA cache_size=10"])
      defer { connection.close() }
      try connection.execute("BEGIN")
      // ~100 pages through a cache of 10: spilled to the WAL as they fill.
      try connection.execute(Self.insertRows)
      // The first pages again: spilled frames written over in place.
      try connection.execute("UPDATE t SET v = randomblob(200) WHERE k <= 100")
      try connection.execute("COMMIT")
      for suffix in ["", "-wal"] {
        try writeWholeFile(
          directory + "/copy.db" + suffix, try readWholeFileBytes(path + suffix))
      }
      let copy = try SQLiteConnection(path: directory + "/copy.db", flags: SQLITE_OPEN_READWRITE)
      defer { copy.close() }
      #expect(try copy.textRows("SELECT count(*) FROM t") == ["2000"])
      #expect(try copy.textRows("PRAGMA integrity_check") == ["ok"])
    }
  }

  /// A transaction that spilled frames and rolled back leaves them kept,
  /// and SQLite does no more to that WAL file. Written at the connection's
  /// next read, they landed on frames another connection of the process
  /// had committed since, and the database read as "not a database"; they
  /// are dropped when the write lock goes.
  @Test func aRolledBackTransactionsFramesAreNotWrittenOverAnothersCommit() throws {
    try withTemporaryDirectory { directory in
      let path = directory + "/two.db"
      let first = try Self.openTable(
        path, ["PRAGMA page_size=1024", "PRAGMA wal_autocheckpoint=0"])
      defer { first.close() }
      try first.execute("INSERT INTO t VALUES (0, randomblob(200))")
      let second = try SQLiteConnection(
        path: path, flags: SQLITE_OPEN_READWRITE, vfs: SwitchStore.vfs)
      defer { second.close() }
      try second.execute("PRAGMA wal_autocheckpoint=0")
      try first.execute("PRAGMA wal_checkpoint(TRUNCATE)")
      try first.execute("BEGIN")
      try first.execute(
        """
        WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 100)
        INSERT INTO t SELECT i, randomblob(200) FROM n
        """)
      // The pages go to the WAL as a spill would write them.
      #expect(sqlite3_db_cacheflush(first.handle) == SQLITE_OK)
      try first.execute("ROLLBACK")
      try second.execute(
        """
        WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 3000)
        INSERT INTO t SELECT 10000 + i, zeroblob(200) FROM n
        """)
      #expect(try first.textRows("SELECT count(*) FROM t") == ["3001"])
      let third = try SQLiteConnection(
        path: path, flags: SQLITE_OPEN_READWRITE, vfs: SwitchStore.vfs)
      defer { third.close() }
      #expect(try third.textRows("PRAGMA integrity_check") == ["ok"])
      #expect(try third.textRows("SELECT count(*) FROM t") == ["3001"])
    }
  }

  /// Without power-safe overwrite SQLite pads a commit to the sector and
  /// splits the frame across the sector's end around a sync: a 24-byte rest
  /// looked like a new frame's header and was kept, so the commit returned
  /// with the WAL short of what the WAL index named. Such a WAL is written
  /// as asked: every commit leaves it whole frames long.
  @Test func aWALWithoutPowerSafeOverwriteIsWrittenAsAsked() throws {
    try withTemporaryDirectory { directory in
      let path = directory + "/p.db"
      let uri = "file:\(path)?psow=0"
      let flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_URI
      let writer = try SQLiteConnection(path: uri, flags: flags, vfs: SwitchStore.vfs)
      defer { writer.close() }
      for pragma in [
        "PRAGMA page_size=1024", "PRAGMA journal_mode=WAL", "PRAGMA synchronous=FULL",
        "PRAGMA wal_autocheckpoint=0", "CREATE TABLE t(k INTEGER PRIMARY KEY, v)",
      ] {
        try writer.execute(pragma)
      }
      let reader = try SQLiteConnection(path: uri, flags: flags, vfs: SwitchStore.vfs)
      defer { reader.close() }
      var misaligned: [Int] = []
      for row in 0..<200 {
        try writer.execute("INSERT INTO t VALUES (\(row), \(row))")
        if (try fileSize(path + "-wal") - 32) % (1024 + 24) != 0 { misaligned.append(row) }
      }
      #expect(misaligned.isEmpty, "commits that left part of a frame kept: \(misaligned)")
      #expect(try reader.textRows("SELECT count(*) FROM t") == ["200"])
    }
  }

  /// A new database at `path` through the store's VFS, in WAL mode after
  /// `pragmas`, with an empty table `t` of keys and blobs.
  static func openTable(_ path: String, _ pragmas: [String]) throws -> SQLiteConnection {
    let connection = try SQLiteConnection(
      path: path, flags: SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, vfs: SwitchStore.vfs)
    for pragma in pragmas + ["PRAGMA journal_mode=WAL"] { try connection.execute(pragma) }
    try connection.execute("CREATE TABLE t(k INTEGER PRIMARY KEY, v BLOB)")
    return connection
  }

  /// 2,000 rows of 200 random bytes into `t`: ~500 KB.
  static let insertRows = """
    WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 2000)
    INSERT INTO t SELECT i, randomblob(200) FROM n
    """

  /// The write system calls this thread has made.
  private func writeCalls() throws -> Int {
    let text = try readWholeFile("/proc/thread-self/io")
    guard
      let line = text.split(separator: "\n").first(where: { $0.hasPrefix("syscw:") }),
      let count = Int(line.dropFirst("syscw:".count).trimmingPrefix(" "))
    else { throw FixtureError("no syscw in /proc/thread-self/io: \(text)") }
    return count
  }

  private func fileSize(_ path: String) throws -> Int {
    var status = stat()
    guard stat(path, &status) == 0 else { throw FixtureError("stat \(path): errno \(errno)") }
    return Int(status.st_size)
  }
}
