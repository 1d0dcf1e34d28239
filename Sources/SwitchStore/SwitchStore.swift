// SwitchStore: the switches and their change log, in one SQLite file.
//
// Layers, bottom up. `SQLiteError`, `SQLiteStatement` and `SQLiteConnection` wrap the C API
// once: every result code becomes a `SQLiteError` with its codes, statements are prepared once
// (`SQLITE_PREPARE_PERSISTENT`) and finalized by `close()` or deinit. `Schema` holds the
// named forward migrations, versioned with `PRAGMA user_version`. `StoreStatements` holds every SQL
// text and binds and reads rows; `StorageNames` spells SwitchCore's enums for the file (a file
// format, kept apart from the wire names). `SwitchStore` is what the daemon calls: each public
// method is one query or one transaction, and maps `SQLiteError` to `StoreError` in one place.
//
// Threading: nothing here is Sendable. A store and its connection belong to one thread at a
// time (the daemon's writer thread, its log reader thread), so SQLite is opened
// NOMUTEX and skips its own locking. A reader opens its own store in `.readOnly` mode; WAL lets
// it read committed data while the writer commits.
//
// Durability: WAL with `synchronous=FULL`, so `commit` returns after the fsync and a write can
// be answered as soon as it returns. One `commit` per group of writes shares that fsync.
//
// Revisions: the global counter is the newest log row's revision, or `meta.revision` when
// that is larger. `commit` only appends rows (it does not rewrite `meta`: one page less per
// commit); `prune` records the revision in `meta` in the same transaction as each deletion, so
// the counter survives pruning the whole log. `commit` appends revision current + 1, + 2, …
// and `prune` only deletes the oldest rows, so the log is always a contiguous run of revisions
// that ends at the current revision (or is empty).
//
// A commit only appends to the log: the log is the truth, and a switch row holds its switch as
// of `meta.checkpoint`. `checkpointFromLog()` copies each key's newest change into its row now and
// then (the writer does it every ~1,000 changes, before pruning and when it stops), and
// `loadSwitches()` is the rows plus the changes after the checkpoint. Updating the row in every
// commit cost a quarter of the writer's time.
//
// History of a key: there is no index on the log's keys (it cost a page per key per commit).
// Each log row holds `key_previous`, the revision of the previous change of its key, so a key's
// history is a walk down that chain from its newest change: one primary-key lookup per entry
// returned. For an arbitrary `before`, `key_marks` (a sparse index: the first change of a key
// after each open, then every `markSpacing`-th) gives a starting point at most `markSpacing`
// steps above it.

import CSQLite
import CSQLiteVFS
import Glibc
import SwitchCore

/// Switches and their change log in one SQLite database.
///
/// Not Sendable: one owner (a thread, or a Mutex) at a time. Open one store read-write (the
/// writer) and any number read-only (readers); close each with `close()`.
public final class SwitchStore {
  /// How the file is opened.
  public enum Mode: Sendable {
    /// The writer: creates the file when absent, checks it, migrates it, commits.
    case readWrite
    /// A reader: the file must exist at the current schema version; writes fail.
    case readOnly
  }

  /// The database file.
  public let path: String
  public let mode: Mode
  let connection: SQLiteConnection
  let statements: StoreStatements
  /// How many changes of a key at most lie between two of its marks (see the top of the file).
  let markSpacing: Int
  /// Per key (and per key and user), the newest change committed through this store, how many
  /// changes since its last mark and its key's number: a cache of what the file holds, filled
  /// by `loadSwitches()`, `loadUserValues()` (the log's tail) and `insertNew` (a new row), or on
  /// a chain's first commit after opening (`startChain`), emptied when a transaction fails.
  var chains: [ChainKey: KeyChain] = [:]
  /// Whether `chains` holds every chain with a change after the checkpoint
  /// (the log's tail), switches' by `loadSwitches()` and users' by
  /// `loadUserValues()`, each of which reads the whole tail; cleared with
  /// `chains`. A chain not in it then starts from its row alone. Without it
  /// a chain's first change looks for its key in the tail, row by row (there
  /// is no index on the log's keys): ~650k instructions with 1,000 changes
  /// there, for the first toggle of each switch a start added and of each
  /// user's own value (callgrind, issue 26).
  var tailChainsLoaded = TailChainsLoaded()
  /// The revision of the newest change committed through this store, the
  /// same kind of cache: a commit checks its first revision against it
  /// instead of reading the file each time (a query per commit, ~1.5k
  /// instructions, callgrind); read from the file on the first commit and
  /// after a failed one.
  var committedRevision: Int64?
  /// Whether the log's newest row is `committedRevision`'s, read with it:
  /// SQLite then gives a row whose `revision` is bound NULL the largest
  /// rowid plus one, the next revision, without the seek from the b-tree's
  /// root that checking an explicit rowid costs (~1.1k instructions a row,
  /// callgrind on SQLite 3.40). False when the log was emptied below the
  /// revision (pruned to nothing): rows then carry their revision.
  var rowidIsNextRevision = false
  /// The log's rows, once counted (`logRowCount`).
  var loggedRows: Int64?
  /// The files as the writer opened them (nil for a reader).
  var files: DatabaseFiles?
  /// The watch on the database's folder, for an event loop to take over
  /// (`FolderWatch.handOver`); nil for a reader, or when inotify refused.
  public var folderWatch: FolderWatch? { files?.watch }
  /// True while the file's health check (`checkHealth(of:)`) runs on another
  /// connection, as the opener asked (`HealthCheck.alongside`): the store
  /// reads, and refuses every write until `healthCheckPassed()`.
  public private(set) var healthCheckPending = false

  /// A chain of `key_previous`: a key's switch-level changes (user nil), or one user's values.
  struct ChainKey: Hashable {
    /// A committed change's key, hashed once by the writer.
    var hashedKey: HashedKey
    var user: UInt32? = nil

    var key: String { hashedKey.string }

    /// `KeyHash`: each commit looks its key's chain up, and SipHash cost
    /// more than the rest of the look-up.
    func _rawHashValue(seed: Int) -> Int { hashedKey.hash(user: user, seed: seed) }
  }

  struct KeyChain {
    var newest: Int64
    var sinceMark: Int
    /// The key's number in `keys` (migration 10); 0 until looked up.
    var keyID: Int64 = 0
  }

  /// Which kinds of chain the log's tail was loaded for (`tailChainsLoaded`).
  struct TailChainsLoaded {
    var switches = false
    var users = false

    func covers(_ chain: ChainKey) -> Bool { chain.user == nil ? switches : users }
  }

  /// Opens (creating when readWrite and absent), checks with PRAGMA quick_check (readWrite
  /// only), refuses a newer schema, and migrates forward (readWrite only).
  public convenience init(
    path: String, mode: Mode = .readWrite, healthCheck: HealthCheck = .first
  ) throws(StoreError) {
    try self.init(path: path, mode: mode, markSpacing: 64, healthCheck: healthCheck)
  }

  /// When a read-write store runs `PRAGMA quick_check` over the file.
  public enum HealthCheck: Sendable {
    /// Before anything else (the check reads every page: with a million
    /// user values, a third of the start's instructions).
    case first
    /// When the file needs no write to be opened (WAL already, the current
    /// schema), the caller runs `checkHealth(of:)` on another thread while
    /// the store reads, and calls `healthCheckPassed()` before any write;
    /// otherwise first, as above.
    case alongside
  }

  /// SQLite's "unix-excl" VFS: this process takes the database file's lock
  /// once and keeps it, and the WAL index lives in this process's memory,
  /// shared by its connections (the writer, the log reader, a backup), not
  /// in a `-shm` file. A commit then takes no file locks: six `fcntl` calls
  /// fewer per commit (strace), the most of any system call a toggle made.
  /// The price: no other process can open the database while switchd runs
  /// (it waits, then gets "database is locked"). switchd's lock file already
  /// keeps a second daemon out, and reads and backups go through the daemon.
  ///
  /// Wrapped (`CSQLiteVFS`) so that a commit's WAL frames are one write,
  /// not each frame's header and page: a commit of n pages makes one
  /// `pwrite` instead of 2n (strace, issue 26), and the files SQLite keeps
  /// beside the database are claimed as switchd's (ClaimedFiles.c).
  /// Registered on first use; should that fail, no store opens (`connect`):
  /// the plain "unix-excl" would write into files another user slipped in.
  /// SQLite's process-wide settings are made first
  /// (`SQLiteConnection.libraryConfigured`): in the daemon this is its first use of SQLite.
  static var vfs: String {
    _ = vfsRegistered
    return "switchd-unix-excl"
  }

  private static let vfsRegistered: Bool = {
    _ = SQLiteConnection.libraryConfigured
    return switchd_register_joined_wal_vfs("switchd-unix-excl", "unix-excl") == SQLITE_OK
  }()

  /// `markSpacing` is a parameter so tests can make walks between marks short.
  init(path: String, mode: Mode, markSpacing: Int, healthCheck: HealthCheck = .first)
    throws(StoreError)
  {
    self.path = path
    self.mode = mode
    self.markSpacing = max(markSpacing, 1)
    let connection = try Self.run(path) { () throws(SQLiteError) in
      try Self.connect(path, mode: mode)
    }
    // Checked before anything writes: a newer file is left exactly as it was. This is also the
    // first read of the file, where one that is not a database fails with SQLITE_NOTADB.
    let found = try Self.run(path) { () throws(SQLiteError) in try Schema.version(of: connection) }
    guard found <= Schema.currentVersion else {
      throw .newerSchema(path: path, found: found, supported: Schema.currentVersion)
    }
    /// This build's statements, when a migration prepared them before its commit.
    var verified: StoreStatements?
    switch mode {
    case .readWrite:
      if healthCheck == .alongside, found == Schema.currentVersion,
        try Self.run(path, { () throws(SQLiteError) in try Self.isWAL(connection) })
      {
        // Nothing to write: the settings of this connection only.
        try Self.run(path) { () throws(SQLiteError) in try Self.applyWriterSettings(connection) }
        healthCheckPending = true
      } else {
        verified = try Self.prepareWriter(connection, path: path, found: found)
      }
    case .readOnly:
      guard found == Schema.currentVersion else {
        throw .sqlite(
          SQLiteError(
            extendedCode: SQLITE_ERROR,
            message: "schema version \(found) is older than \(Schema.currentVersion) and a "
              + "read-only connection cannot migrate it: open it read-write first",
            context: "opening \(path) read-only"))
      }
    }
    self.connection = connection
    if let verified {
      self.statements = verified
    } else {
      do throws(SQLiteError) {
        self.statements = try StoreStatements(connection)
      } catch {
        // The health check speaks first when it is still to come.
        if healthCheckPending { try Self.quickCheck(connection, path: path) }
        throw Self.schemaFault(error, path: path, version: found)
      }
    }
    if mode == .readWrite { files = DatabaseFiles(path: path) }
  }

  /// Refuses to write once the file or its WAL is not the one opened (a
  /// `stat` of each per transaction).
  func checkFilesInPlace() throws(StoreError) {
    // A closed store has no files to lose (SQLite removed the WAL at close).
    guard connection.handle != nil else { return }
    if let detail = files?.check() { throw .filesMoved(path: path, detail: detail) }
  }

  /// Gives back the pages SQLite cached while the switches were loaded or
  /// first written (every page of their table), to be read again when a
  /// change needs one.
  public func releaseCachedPages() {
    connection.releaseCachedPages()
  }

  /// Closes the database; later calls throw. Idempotent.
  public func close() {
    connection.close()
  }

  // MARK: Private

  /// Why a statement of this build or of a migration did not prepare on
  /// the file at `version`. Naming a table, column or index the file lacks
  /// means its schema is not the one the migrations made: damaged (a byte
  /// of its text changed, which the health check cannot see) or edited by
  /// hand. Any other failure is reported as it came (a fault of switchd's
  /// own SQL is not damage), and so is any on a new file (version 0), whose
  /// whole schema this build has just made.
  static func schemaFault(_ error: SQLiteError, path: String, version: Int32) -> StoreError {
    let missing = ["no such table", "no such column", "has no column named", "no such index"]
    guard version > 0, error.code == SQLITE_ERROR, missing.contains(where: error.message.contains)
    else {
      return StoreError(error, path: path)
    }
    return .damaged(
      path: path, detail: "its schema is not the one of version \(version): \(error.message)")
  }

  /// The writer's settings, its health check and its migrations.
  /// - Returns: this build's statements, prepared on the migrated schema
  ///   before the migrations' commit (nil when the file needed none).
  static func prepareWriter(_ connection: SQLiteConnection, path: String, found: Int32)
    throws(StoreError) -> StoreStatements?
  {
    // Checked before anything writes: switching to WAL rewrites the header of
    // a file in rollback-journal mode, and a damaged file is left as it was.
    try quickCheck(connection, path: path)
    try run(path) { () throws(SQLiteError) in
      // The page size of a new database (a no-op for an existing one): 1 KiB.
      // SQLite checksums each page it writes to the WAL, ~1.2k instructions a
      // KiB, and copies it twice: a lone toggle's commit, one page, cost ~4.3k
      // instructions less than with 4 KiB pages (37.1k → 32.8k, callgrind,
      // issue 26). Smaller pages mean more frames a commit (~2 for 8 toggles
      // instead of ~1.2), which cost no system calls: the VFS writes a
      // commit's frames with one `pwrite` (`CSQLiteVFS`).
      try connection.execute("PRAGMA page_size=1024")
      // WAL: readers never block the writer nor it them; the setting is stored in the file.
      try connection.execute("PRAGMA journal_mode=WAL")
      try applyWriterSettings(connection)
    }
    // A file whose schema text is damaged in a part its migrations leave
    // alone migrates cleanly, and only this build's statements then fail on
    // it: they are prepared before the commit, which their failure rolls
    // back, so a file refused is left at its version as it was.
    var statements: StoreStatements?
    do throws(SQLiteError) {
      try Schema.migrate(connection) { () throws(SQLiteError) in
        statements = try StoreStatements(connection)
      }
    } catch {
      throw schemaFault(error, path: path, version: found)
    }
    return statements
  }

  /// A connection to `path` through `vfs`. A reader opens read-write too,
  /// and is made query-only: under unix-excl a read-only connection takes
  /// its own POSIX locks, which would turn this process's exclusive lock
  /// into a shared one and release it when the reader finishes (POSIX locks
  /// are per process).
  static func connect(_ path: String, mode: Mode) throws(SQLiteError) -> SQLiteConnection {
    guard vfsRegistered else {
      throw .misuse("switchd's SQLite VFS could not be registered", context: "open \(path)")
    }
    let flags =
      mode == .readWrite ? SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE : SQLITE_OPEN_READWRITE
    let connection = try SQLiteConnection(path: path, flags: flags, vfs: vfs)
    if mode == .readOnly { try connection.execute("PRAGMA query_only=1") }
    if mode == .readWrite, let why = unwritable(connection, path: path) {
      connection.close()
      throw SQLiteError(extendedCode: SQLITE_READONLY, message: why, context: "open \(path)")
    }
    return connection
  }

  /// Why the writer could not write `path`, if so: SQLite opens a file it
  /// may only read read-only without a word, and a WAL it may only read
  /// makes every write fail. Asked before anything is read or written: a
  /// switchd that started and said "serving" refused every write with
  /// StorageFailure, and its read-only run left a WAL only it could read,
  /// which kept the next start read-only too (an audit).
  static func unwritable(_ connection: SQLiteConnection, path: String) -> String? {
    if sqlite3_db_readonly(connection.handle, "main") == 1 {
      return "switchd may read the file but not write it"
    }
    let wal = path + "-wal"
    let fd = open(wal, O_RDWR | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)
    let error = errno
    if fd >= 0 {
      Glibc.close(fd)
    } else if error == EACCES || error == EPERM || error == EROFS {
      return "switchd may not write its write-ahead log \(wal)"
    }
    return nil
  }

  /// The writer connection's settings (SQLite keeps them per connection).
  static func applyWriterSettings(_ connection: SQLiteConnection) throws(SQLiteError) {
    // A commit is durable when it returns: WAL is fsynced at every commit.
    try connection.execute("PRAGMA synchronous=FULL")
    // SQLite copies the WAL into the database once it holds this many
    // pages (1 KiB each), with two syncs of its own that every write in
    // the queue waits for: 1,000 (the default) made ~2 % of the flushes
    // checkpoints' with 50 writers on a slow disk. 8,000 (8 MiB of log)
    // makes them 8 times rarer; the log is read back at start in
    // milliseconds, and each page is copied once per checkpoint however
    // often it was rewritten.
    try connection.execute("PRAGMA wal_autocheckpoint=\(walCheckpointPages)")
  }

  /// `wal_autocheckpoint` of the writer's connection.
  static let walCheckpointPages = 8000

  /// Whether the file is in WAL mode already (read from its header: no write).
  static func isWAL(_ connection: SQLiteConnection) throws(SQLiteError) -> Bool {
    try connection.textRows("PRAGMA journal_mode") == ["wal"]
  }

  /// `PRAGMA quick_check`: every page read and its b-tree checked.
  /// - Throws: `.damaged` with SQLite's first findings.
  static func quickCheck(_ connection: SQLiteConnection, path: String) throws(StoreError) {
    let problems = try run(path) { () throws(SQLiteError) in
      try connection.textRows("PRAGMA quick_check(5)")
    }
    guard problems == ["ok"] else {
      throw .damaged(path: path, detail: problems.joined(separator: "; "))
    }
  }

  /// The health check of a store opened with `HealthCheck.alongside`, on a
  /// reader's connection of its own (any thread; under unix-excl this
  /// process's connections share the file's lock and WAL index).
  /// - Throws: `.damaged`, or why the file could not be read.
  public static func checkHealth(of path: String) throws(StoreError) {
    let connection = try run(path) { () throws(SQLiteError) in
      try connect(path, mode: .readOnly)
    }
    defer { connection.close() }
    try quickCheck(connection, path: path)
  }

  /// The health check run alongside passed: the store may write.
  public func healthCheckPassed() {
    healthCheckPending = false
  }

  /// Runs `body`, mapping its SQLiteError to a StoreError for this file.
  @discardableResult
  static func run<T>(_ path: String, _ body: () throws(SQLiteError) -> T)
    throws(StoreError) -> T
  {
    do throws(SQLiteError) {
      return try body()
    } catch {
      throw StoreError(error, path: path)
    }
  }

  @discardableResult
  func run<T>(_ body: () throws(SQLiteError) -> T) throws(StoreError) -> T {
    try Self.run(path, body)
  }

  /// Runs `body` inside BEGIN IMMEDIATE … COMMIT; on any failure rolls back and rethrows.
  ///
  /// IMMEDIATE takes the write lock up front, so a second writer waits (busy_timeout) at BEGIN
  /// instead of failing with SQLITE_BUSY half-way through.
  func transaction<T>(_ body: () throws(SQLiteError) -> T) throws(StoreError) -> T {
    guard !healthCheckPending else {
      throw StoreError(
        .misuse("a write before the file's health check passed", context: "transaction"),
        path: path)
    }
    return try run { () throws(SQLiteError) -> T in
      // A transaction left open by a ROLLBACK that failed would make every later BEGIN fail.
      if connection.isInTransaction { rollBack() }
      try execute(statements.begin)
      do throws(SQLiteError) {
        let result = try body()
        try execute(statements.commit)
        return result
      } catch {
        rollBack()
        throw error
      }
    }
  }

  func rollBack() {
    // After SQLITE_FULL, IOERR, NOMEM or BUSY SQLite may have rolled back by itself, and a
    // second ROLLBACK would only fail with "no transaction is active". Its own failure cannot
    // be reported better than the error that caused it.
    guard connection.isInTransaction else { return }
    try? execute(statements.rollback)
  }

  /// Steps a statement that returns no rows, then resets it so it holds no lock.
  func execute(_ statement: SQLiteStatement) throws(SQLiteError) {
    defer { statement.reset() }
    try statement.run()
  }

  /// The revision of a chain's newest change (0: none): in the log's tail, else its row's.
  func newestRevision(of chain: ChainKey) throws(SQLiteError) -> Int64 {
    let tail = statements.newestInTail
    defer { tail.reset() }
    try tail.bind(try readCheckpoint(), at: 1)
    try tail.bind(chain.key, at: 2)
    try tail.bind(chain.user.map { Int64($0) }, at: 3)
    if try tail.step(), let revision = tail.optionalInt64(at: 0) { return revision }
    return try rowRevision(of: chain)
  }

  /// The revision of a chain's newest change as of the checkpoint (0: none): its row's.
  func rowRevision(of chain: ChainKey) throws(SQLiteError) -> Int64 {
    let row = chain.user == nil ? statements.switchRevision : statements.userValueRevision
    defer { row.reset() }
    try row.bind(chain.key, at: 1)
    if let user = chain.user { try row.bind(Int64(user), at: 2) }
    return try row.step() ? row.int64(at: 0) : 0
  }

  func readCheckpoint() throws(SQLiteError) -> Int64 {
    try readMeta(statements.readCheckpoint, row: "checkpoint")
  }

  func markAtOrAbove(key: String, revision: Int64) throws(SQLiteError) -> Int64? {
    let statement = statements.markAtOrAbove
    defer { statement.reset() }
    try statement.bind(key, at: 1)
    try statement.bind(revision, at: 2)
    return try statement.step() ? statement.int64(at: 0) : nil
  }

  func readRevision() throws(SQLiteError) -> Int64 {
    try readMeta(statements.readRevision, row: "revision")
  }

  /// The one value a query of the `meta` table returns.
  func readMeta(_ statement: SQLiteStatement, row: String) throws(SQLiteError) -> Int64 {
    defer { statement.reset() }
    guard try statement.step() else {
      throw .corrupt("the meta table has no \(row) row", context: "reading \(path)")
    }
    return statement.int64(at: 0)
  }

  func readChanges(after: Int64, upTo: Int64 = .max, limit: Int) throws(SQLiteError)
    -> [Change]
  {
    // A negative LIMIT means "no limit" to SQLite: never pass one through.
    guard limit > 0, upTo > after else { return [] }
    let statement = statements.changesRange
    try statement.bind(after, at: 1)
    try statement.bind(upTo, at: 2)
    try statement.bind(Int64(limit), at: 3)
    return try readChanges(statement)
  }

  func readChanges(_ statement: SQLiteStatement) throws(SQLiteError) -> [Change] {
    defer { statement.reset() }
    var result: [Change] = []
    while try statement.step() { result.append(try statement.readChange()) }
    return result
  }
}

/// A store belongs to one owner at a time; say so, so nobody adds `@unchecked Sendable`.
@available(*, unavailable)
extension SwitchStore: Sendable {}

// In an extension, so that the memberwise `init(hashedKey:user:)` stays.
extension SwitchStore.ChainKey {
  init(key: String, user: UInt32? = nil) { self.init(hashedKey: HashedKey(key), user: user) }
}
