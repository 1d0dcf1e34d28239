import CSQLite

/// One `sqlite3*` handle and the statements prepared on it.
///
/// Not Sendable: a connection belongs to one thread (or one Mutex) at a time, which is why it
/// is opened with `SQLITE_OPEN_NOMUTEX` and SQLite's own per-call locking is skipped.
/// Close it explicitly with `close()`; deinit closes a forgotten one as a safety net.
final class SQLiteConnection {
  let path: String
  /// The C handle; nil once closed. Readable for tests that install SQLite hooks.
  private(set) var handle: OpaquePointer?
  /// Cached statements, finalized by `close()` so the file is closed when `close()` returns.
  private var cached: [SQLiteStatement] = []

  /// Opens `path` with `flags` (`SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE`, or
  /// `SQLITE_OPEN_READONLY`) through the VFS named `vfs` (nil: SQLite's default);
  /// `SQLITE_OPEN_NOMUTEX` is always added.
  init(
    path: String, flags: Int32, vfs: String? = nil, busyTimeoutMilliseconds: Int32 = 5000
  ) throws(SQLiteError) {
    self.path = path
    _ = Self.libraryConfigured
    var db: OpaquePointer?
    let rc = sqlite3_open_v2(path, &db, flags | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE, vfs)
    guard rc == SQLITE_OK, let db else {
      // SQLite hands back a handle even on failure (to carry the message); it must be closed.
      let error = SQLiteError(handle: db, resultCode: rc, context: "opening \(path)")
      sqlite3_close_v2(db)
      throw error
    }
    handle = db
    sqlite3_extended_result_codes(db, 1)
    // A reader and the writer, or two processes, may meet; wait rather than fail at once.
    sqlite3_busy_timeout(db, busyTimeoutMilliseconds)
  }

  deinit {
    close()
  }

  /// The library's configuration, made once before SQLite's first use in
  /// the process: before the first connection opens and before switchd's
  /// VFS is registered (Swift runs a static's initializer once, and every
  /// other thread that comes waits for it). After SQLite's first use it
  /// refuses (SQLITE_MISUSE) and keeps its defaults, which work the same,
  /// slower. Memory statistics off: nothing here reads them, and counting
  /// took a global mutex per allocation, ~4 lock pairs a commit (callgrind).
  static let libraryConfigured: Void = {
    _ = switchd_sqlite3_memstatus_off()
  }()

  /// Finalizes the cached statements and closes the handle. Idempotent.
  func close() {
    for statement in cached { statement.finalize() }
    cached.removeAll()
    // v2: if a one-shot statement is still alive somewhere, the handle becomes a zombie and is
    // freed with that statement, instead of failing with SQLITE_BUSY and leaking.
    sqlite3_close_v2(handle)
    handle = nil
  }

  var isOpen: Bool { handle != nil }

  /// Gives back the page cache's pages no statement holds.
  func releaseCachedPages() {
    guard let handle else { return }
    _ = sqlite3_db_release_memory(handle)
  }

  /// Whether a transaction is open (`BEGIN` ran, and neither `COMMIT` nor `ROLLBACK`, nor an
  /// automatic rollback after an I/O error, ended it).
  var isInTransaction: Bool {
    guard let handle else { return false }
    return sqlite3_get_autocommit(handle) == 0
  }

  /// Rows changed by the most recent INSERT, UPDATE or DELETE.
  var changes: Int64 {
    sqlite3_changes64(handle)
  }

  /// The rowid of the most recent successful INSERT on this connection.
  var lastInsertRowid: Int64 {
    sqlite3_last_insert_rowid(handle)
  }

  /// Prepares `sql` once, for the life of the connection (`SQLITE_PREPARE_PERSISTENT`).
  func prepareCached(_ sql: String) throws(SQLiteError) -> SQLiteStatement {
    let statement = try prepare(sql, flags: UInt32(SQLITE_PREPARE_PERSISTENT))
    cached.append(statement)
    return statement
  }

  /// Prepares `sql` for a single use; it is finalized when released.
  func prepareOnce(_ sql: String) throws(SQLiteError) -> SQLiteStatement {
    try prepare(sql, flags: 0)
  }

  /// Runs one or more statements that return no rows wanted (DDL, pragmas that set).
  func execute(_ sql: String) throws(SQLiteError) {
    let db = try live(sql)
    var message: UnsafeMutablePointer<CChar>?
    let rc = sqlite3_exec(db, sql, nil, nil, &message)
    defer { sqlite3_free(message) }
    guard rc == SQLITE_OK else {
      throw SQLiteError(handle: db, resultCode: rc, context: "`\(sql)` on \(path)")
    }
  }

  /// Runs `sql` once and returns the first column of each row as text (for pragmas that report).
  func textRows(_ sql: String) throws(SQLiteError) -> [String] {
    let statement = try prepareOnce(sql)
    defer { statement.reset() }
    var rows: [String] = []
    while try statement.step() { rows.append(statement.text(at: 0)) }
    return rows
  }

  private func prepare(_ sql: String, flags: UInt32) throws(SQLiteError) -> SQLiteStatement {
    let db = try live(sql)
    var statement: OpaquePointer?
    let rc = sqlite3_prepare_v3(db, sql, -1, flags, &statement, nil)
    guard rc == SQLITE_OK else {
      throw SQLiteError(handle: db, resultCode: rc, context: "preparing `\(sql)` on \(path)")
    }
    guard let statement else {
      // Only whitespace or a comment: a programming error in this module's SQL.
      throw .misuse("no statement in the SQL text", context: "preparing `\(sql)` on \(path)")
    }
    return SQLiteStatement(handle: statement, sql: sql, path: path)
  }

  private func live(_ sql: String) throws(SQLiteError) -> OpaquePointer {
    guard let handle else {
      throw .misuse("the connection is closed", context: "`\(sql)` on \(path)")
    }
    return handle
  }
}
