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
  let connection: SQLiteConnection
  private let statements: StoreStatements
  /// How many changes of a key at most lie between two of its marks (see the top of the file).
  let markSpacing: Int
  /// Per key, the newest change committed through this store and how many changes since its
  /// last mark: a cache of what the file holds, filled by `loadSwitches()` or on a key's first
  /// commit after opening (from the log's tail or the key's row), emptied when a commit fails.
  private var chains: [ChainKey: KeyChain] = [:]
  /// The files as the writer opened them (nil for a reader).
  private var files: DatabaseFiles?

  /// A chain of `key_previous`: a key's switch-level changes (user nil), or one user's values.
  private struct ChainKey: Hashable {
    var key: String
    var user: UInt32? = nil
  }

  private struct KeyChain {
    var newest: Int64
    var sinceMark: Int
  }

  /// Opens (creating when readWrite and absent), checks with PRAGMA quick_check (readWrite
  /// only), refuses a newer schema, and migrates forward (readWrite only).
  public convenience init(path: String, mode: Mode = .readWrite) throws(StoreError) {
    try self.init(path: path, mode: mode, markSpacing: 64)
  }

  /// `markSpacing` is a parameter so tests can make walks between marks short.
  init(path: String, mode: Mode, markSpacing: Int) throws(StoreError) {
    self.path = path
    self.markSpacing = max(markSpacing, 1)
    let connection = try Self.run(path) { () throws(SQLiteError) in
      let flags =
        mode == .readWrite ? SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE : SQLITE_OPEN_READONLY
      return try SQLiteConnection(path: path, flags: flags)
    }
    // Checked before anything writes: a newer file is left exactly as it was. This is also the
    // first read of the file, where one that is not a database fails with SQLITE_NOTADB.
    let found = try Self.run(path) { () throws(SQLiteError) in try Schema.version(of: connection) }
    guard found <= Schema.currentVersion else {
      throw .newerSchema(path: path, found: found, supported: Schema.currentVersion)
    }
    switch mode {
    case .readWrite:
      try Self.prepareWriter(connection, path: path)
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
    self.statements = try Self.run(path) { () throws(SQLiteError) in
      try StoreStatements(connection)
    }
    if mode == .readWrite { files = DatabaseFiles(path: path) }
  }

  /// Refuses to write once the file or its WAL is not the one opened (a
  /// `stat` of each per transaction).
  private func checkFilesInPlace() throws(StoreError) {
    // A closed store has no files to lose (SQLite removed the WAL at close).
    guard connection.handle != nil else { return }
    if let detail = files?.check() { throw .filesMoved(path: path, detail: detail) }
  }

  /// Closes the database; later calls throw. Idempotent.
  public func close() {
    connection.close()
  }

  // MARK: Reading

  /// Every stored switch (declared or not) as of the newest change, sorted by key: the rows,
  /// then the changes after the checkpoint applied to them.
  public func loadSwitches() throws(StoreError) -> [SwitchRecord] {
    try run { () throws(SQLiteError) in
      var records: [String: SwitchRecord] = [:]
      let statement = statements.loadSwitches
      defer { statement.reset() }
      while try statement.step() {
        let record = try statement.readSwitch()
        records[record.key] = record
      }
      try forEachChangeAfterCheckpoint { change in
        if change.user == nil { records[change.key] = change.record }
      }
      // The writer's chains start where the file ends (see `chains`).
      for record in records.values where chains[ChainKey(key: record.key)] == nil {
        chains[ChainKey(key: record.key)] = KeyChain(
          newest: record.revision, sinceMark: markSpacing - 1)
      }
      return records.values.sorted { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }
    }
  }

  /// Every user's own value of every key, as of the newest change: the rows, then the
  /// changes after the checkpoint applied to them.
  public func loadUserValues() throws(StoreError) -> UserValues {
    try run { () throws(SQLiteError) in
      var values: UserValues = [:]
      let statement = statements.loadUserValues
      defer { statement.reset() }
      // Rows come in primary-key order, a key's users together: each key is hashed once.
      var key: String?
      var users: [UInt32: UserValue] = [:]
      while try statement.step() {
        let row = try statement.readUserValue()
        if row.key != key {
          if let key { values[key] = users }
          key = row.key
          users = [:]
        }
        users[row.user] = row.value
      }
      if let key { values[key] = users }
      try forEachChangeAfterCheckpoint { change in
        if let user = change.user { values[change.key, default: [:]][user] = change.userValue }
      }
      // A user's chain is looked up on its first commit (`startChain`): there may be millions.
      return values
    }
  }

  private func forEachChangeAfterCheckpoint(_ body: (Change) -> Void) throws(SQLiteError) {
    var cursor = try readCheckpoint()
    while true {
      let page = try readChanges(after: cursor, limit: 1000)
      for change in page { body(change) }
      guard let last = page.last else { break }
      cursor = last.revision
    }
  }

  /// The global revision (0 for a new database).
  public func currentRevision() throws(StoreError) -> Int64 {
    try run { () throws(SQLiteError) in try readRevision() }
  }

  /// The oldest revision still in the log, nil if the log is empty.
  public func oldestRetainedRevision() throws(StoreError) -> Int64? {
    try run { () throws(SQLiteError) in
      let statement = statements.oldestChange
      defer { statement.reset() }
      // An aggregate always returns one row; min() of no rows is NULL.
      guard try statement.step() else { return nil }
      return statement.optionalInt64(at: 0)
    }
  }

  /// Log rows with after < revision <= upTo, ascending, at most `limit`.
  public func changes(after: Int64, upTo: Int64, limit: Int) throws(StoreError) -> [Change] {
    try run { () throws(SQLiteError) in try readChanges(after: after, upTo: upTo, limit: limit) }
  }

  /// Log rows newest first: optional key filter, optional `before` (revision < before), at
  /// most `limit`. `newest`, when the caller knows it, is the revision of the key's newest
  /// change (0: none); otherwise it is looked up (a scan of the log after the checkpoint).
  public func history(key: String?, before: Int64?, limit: Int, newest: Int64? = nil)
    throws(StoreError) -> [Change]
  {
    guard limit > 0 else { return [] }
    return try run { () throws(SQLiteError) in
      if let key {
        var head = newest ?? 0
        if newest == nil { head = try newestRevision(of: ChainKey(key: key)) }
        return try history(of: key, newest: head, before: before, limit: limit)
      }
      let statement = statements.history
      try statement.bind(before ?? .max, at: 1)
      try statement.bind(Int64(limit), at: 2)
      return try readChanges(statement)
    }
  }

  /// Walks `key`'s chain down from its newest change, or from the mark just above `before`.
  /// Rows are never changed once written and pruning only removes the oldest, so the walk
  /// needs no snapshot: it ends at the first revision no longer in the log.
  private func history(of key: String, newest: Int64, before: Int64?, limit: Int)
    throws(SQLiteError) -> [Change]
  {
    var start: Int64?
    if let before { start = try markAtOrAbove(key: key, revision: before) }
    if start == nil && newest > 0 { start = newest }
    return try walkChain(from: start, before: before, limit: limit)
  }

  /// The changes of one chain (`key_previous`) from `start` down, below `before`, at most `limit`.
  private func walkChain(from start: Int64?, before: Int64?, limit: Int) throws(SQLiteError)
    -> [Change]
  {
    var next = start
    var result: [Change] = []
    let statement = statements.changeAndPrevious
    while let revision = next, result.count < limit {
      defer { statement.reset() }
      try statement.bind(revision, at: 1)
      guard try statement.step() else { break }
      if revision < before ?? .max { result.append(try statement.readChange()) }
      next = statement.optionalInt64(at: StoreStatements.SQL.keyPreviousColumn)
    }
    return result
  }

  /// One user's changes of `key`, newest first, below `before`: a walk down the chain of that
  /// key and user from `newest` (the revision of their newest change; 0: none). A user's chain
  /// has no marks: it holds only what that user set.
  public func userHistory(
    key: String, user: UInt32, before: Int64?, limit: Int, newest: Int64
  ) throws(StoreError) -> [Change] {
    guard limit > 0 else { return [] }
    return try run { () throws(SQLiteError) in
      try walkChain(from: newest > 0 ? newest : nil, before: before, limit: limit)
    }
  }

  /// Log rows newest first below `before` that `include` keeps, at most `limit`: a walk down
  /// the log in pages, for a history that is not one chain (a user's view of every switch).
  public func history(
    before: Int64?, limit: Int, including include: (Change) -> Bool
  ) throws(StoreError) -> [Change] {
    guard limit > 0 else { return [] }
    return try run { () throws(SQLiteError) in
      var result: [Change] = []
      var cursor = before ?? .max
      // Pages of what is still wanted (most rows are kept: one user's are few among all).
      while result.count < limit {
        let wanted = limit - result.count
        let statement = statements.history
        try statement.bind(cursor, at: 1)
        try statement.bind(Int64(wanted), at: 2)
        let page = try readChanges(statement)
        result += page.lazy.filter(include)
        guard let last = page.last, page.count == wanted else { break }
        cursor = last.revision
      }
      return result
    }
  }

  /// What `user` had set of `key` just after revision `at` (nil: nothing), given their
  /// current value `head` (the newest in their chain). Walks their chain down from the head
  /// to `at`: a row after `at` that is the oldest retained tells the value before it.
  public func userValue(
    key: String, user: UInt32, at revision: Int64, head: UserValue?
  ) throws(StoreError) -> Bool? {
    guard let head else { return nil }
    if head.revision <= revision { return head.checked }
    return try run { () throws(SQLiteError) in
      var next: Int64? = head.revision
      var oldestAfter: Change?
      let statement = statements.changeAndPrevious
      while let current = next {
        defer { statement.reset() }
        try statement.bind(current, at: 1)
        guard try statement.step() else { break }
        let change = try statement.readChange()
        if change.revision <= revision { return change.state.checked }
        oldestAfter = change
        next = statement.optionalInt64(at: StoreStatements.SQL.keyPreviousColumn)
      }
      // Their first change after `at`: what it replaced is what they read at `at` (the
      // default, when they had never set it, which is what nil means to a viewer too).
      guard let oldestAfter, next != nil else { return nil }
      return oldestAfter.previous.checked
    }
  }

  /// Whether the store knows `key`: it has a row, or changes not yet checkpointed into one.
  public func hasSwitch(_ key: String) throws(StoreError) -> Bool {
    try run { () throws(SQLiteError) in
      let statement = statements.hasSwitch
      defer { statement.reset() }
      try statement.bind(key, at: 1)
      if try statement.step() { return true }
      return try newestRevision(of: ChainKey(key: key)) > 0
    }
  }

  // MARK: Writing

  /// Inserts rows for newly declared switches (revision 0, changedAt nil) in one transaction;
  /// existing keys are left alone.
  ///
  /// Each record is stored as given (its `revision` and `changedAt` too).
  public func insertNew(_ records: [SwitchRecord]) throws(StoreError) {
    guard !records.isEmpty else { return }
    try checkFilesInPlace()
    try transaction { () throws(SQLiteError) in
      let statement = statements.insertSwitchIfAbsent
      for record in records {
        try statement.bindSwitch(
          key: record.key, state: record.state, revision: record.revision,
          changedAt: record.changedAt)
        try execute(statement)
      }
    }
  }

  /// Commits changes in ONE transaction (BEGIN IMMEDIATE … COMMIT): for each change, a log row
  /// (whose revision is the new global revision); the switch rows follow at a checkpoint.
  ///
  /// Precondition: revisions are consecutive, starting at currentRevision()+1; otherwise this
  /// throws `.sqlite` with `SQLITE_MISUSE` rather than leave a gap or reuse a revision. On any
  /// failure: ROLLBACK, throw, nothing changed. When it returns, the changes are durable.
  public func commit(_ changes: [Change]) throws(StoreError) {
    guard !changes.isEmpty else { return }
    try checkFilesInPlace()
    do throws(StoreError) {
      try commitChanges(changes)
    } catch {
      // The chains ran ahead of the rolled-back file: read them again when next needed.
      chains.removeAll()
      throw error
    }
  }

  private func commitChanges(_ changes: [Change]) throws(StoreError) {
    try transaction { () throws(SQLiteError) in
      // Read under the write lock: this is the revision the first change must follow.
      var expected = try readRevision() + 1
      for change in changes {
        guard change.revision == expected else {
          throw .misuse(
            "change of \(change.key) has revision \(change.revision), expected \(expected)",
            context: "commit on \(path)")
        }
        expected += 1
        let chain = ChainKey(key: change.key, user: change.user)
        let previous: KeyChain
        if let known = chains[chain] {
          previous = known
        } else {
          previous = try startChain(chain)
        }
        let insert = statements.insertChange
        try insert.bindChange(change, keyPrevious: previous.newest > 0 ? previous.newest : nil)
        try execute(insert)
        var next = KeyChain(newest: change.revision, sinceMark: previous.sinceMark + 1)
        // Marks index the switch-level chains; a user's chain is walked whole.
        if change.user == nil && next.sinceMark >= markSpacing {
          let mark = statements.insertMark
          try mark.bind(change.key, at: 1)
          try mark.bind(change.revision, at: 2)
          try execute(mark)
          next.sinceMark = 0
        }
        chains[chain] = next
      }
    }
  }

  /// A key's chain as the file holds it, for its first change since opening: that change is
  /// marked (`sinceMark` is full), so each run of unmarked changes stays within one opening.
  private func startChain(_ chain: ChainKey) throws(SQLiteError) -> KeyChain {
    KeyChain(newest: try newestRevision(of: chain), sinceMark: markSpacing - 1)
  }

  /// The revision the switch rows hold: changes after it are only in the log.
  public func checkpointRevision() throws(StoreError) -> Int64 {
    try run { () throws(SQLiteError) in try readCheckpoint() }
  }

  /// Writes `rows` and records `revision` as the checkpoint, in one transaction: the cheap way
  /// for a caller that holds every switch as of `revision` (the daemon's writer) and passes
  /// each one that changed since the last checkpoint.
  public func checkpoint(
    _ rows: [SwitchRecord], userRows: [(key: String, user: UInt32, value: UserValue)] = [],
    at revision: Int64
  ) throws(StoreError) {
    try transaction { () throws(SQLiteError) in
      let current = try readRevision()
      guard revision == current else {
        throw .misuse(
          "a checkpoint at revision \(revision), but the log is at \(current)",
          context: "checkpoint on \(path)")
      }
      let upsert = statements.upsertSwitch
      for row in rows {
        try upsert.bindSwitch(
          key: row.key, state: row.state, revision: row.revision, changedAt: row.changedAt)
        try execute(upsert)
      }
      let upsertUser = statements.upsertUserValue
      for row in userRows {
        try upsertUser.bindUserValue(key: row.key, user: row.user, row.value)
        try execute(upsertUser)
      }
      let write = statements.writeCheckpoint
      try write.bind(revision, at: 1)
      try execute(write)
    }
  }

  /// Copies each key's newest change since the last checkpoint into its switch row, in one
  /// transaction, so start-up replays only what came after. It reads the whole tail of the log.
  public func checkpointFromLog() throws(StoreError) {
    try transaction { () throws(SQLiteError) in
      let from = try readCheckpoint()
      let to = try readRevision()
      guard to > from else { return }
      let rows = statements.checkpointRows
      try rows.bind(from, at: 1)
      try rows.bind(to, at: 2)
      try execute(rows)
      let userRows = statements.checkpointUserRows
      try userRows.bind(from, at: 1)
      try userRows.bind(to, at: 2)
      try execute(userRows)
      let write = statements.writeCheckpoint
      try write.bind(to, at: 1)
      try execute(write)
    }
  }

  /// Deletes the oldest log rows so that at most `keep` remain, in chunks of at most `chunk`
  /// rows per transaction; returns how many were deleted. Never deletes the newest `keep`.
  ///
  /// Chunks keep each transaction short, so the writer is never held for a whole large prune.
  /// Each chunk first records the global revision in `meta`, so it outlives the rows. A
  /// checkpoint comes first: the switch rows must hold every change before it is deleted.
  public func prune(keep: Int, chunk: Int = 10_000) throws(StoreError) -> Int {
    try checkpointFromLog()
    let keep = Int64(max(keep, 0))
    let chunk = Int64(max(chunk, 1))
    // Rows are only ever added above the threshold, so it stays safe across the chunks.
    let threshold = try run { () throws(SQLiteError) -> Int64? in
      let statement = statements.pruneThreshold
      defer { statement.reset() }
      try statement.bind(keep, at: 1)
      return try statement.step() ? statement.int64(at: 0) : nil
    }
    guard let threshold else { return 0 }
    var deleted: Int64 = 0
    while true {
      let count = try transaction { () throws(SQLiteError) -> Int64 in
        let revision = try readRevision()
        let write = statements.writeRevision
        try write.bind(revision, at: 1)
        try execute(write)
        let statement = statements.pruneChunk
        try statement.bind(threshold, at: 1)
        try statement.bind(chunk, at: 2)
        try execute(statement)
        let count = connection.changes
        if count < chunk {
          // The last chunk: marks of deleted rows go too (harmless if kept: a walk that
          // starts at one ends at once, as every row below it is gone).
          let marks = statements.pruneMarks
          try marks.bind(threshold, at: 1)
          try execute(marks)
        }
        return count
      }
      deleted += count
      if count < chunk { break }
    }
    return Int(deleted)
  }

  // MARK: Private

  /// The writer's settings, its health check and its migrations.
  private static func prepareWriter(_ connection: SQLiteConnection, path: String)
    throws(StoreError)
  {
    // Checked before anything writes: switching to WAL rewrites the header of
    // a file in rollback-journal mode, and a damaged file is left as it was.
    let problems = try run(path) { () throws(SQLiteError) in
      try connection.textRows("PRAGMA quick_check(5)")
    }
    guard problems == ["ok"] else {
      throw .damaged(path: path, detail: problems.joined(separator: "; "))
    }
    try run(path) { () throws(SQLiteError) in
      // Small pages for a new database (a no-op for an existing one): a commit writes a page
      // or two of log rows to the WAL and syncs them, so 1 KiB pages write and checksum a
      // quarter of the bytes of 4 KiB ones (~12% more commits/s here).
      try connection.execute("PRAGMA page_size=1024")
      // WAL: readers never block the writer nor it them; the setting is stored in the file.
      try connection.execute("PRAGMA journal_mode=WAL")
      // A commit is durable when it returns: WAL is fsynced at every commit.
      try connection.execute("PRAGMA synchronous=FULL")
    }
    try run(path) { () throws(SQLiteError) in try Schema.migrate(connection) }
  }

  /// Runs `body`, mapping its SQLiteError to a StoreError for this file.
  @discardableResult
  private static func run<T>(_ path: String, _ body: () throws(SQLiteError) -> T)
    throws(StoreError) -> T
  {
    do throws(SQLiteError) {
      return try body()
    } catch {
      throw StoreError(error, path: path)
    }
  }

  @discardableResult
  private func run<T>(_ body: () throws(SQLiteError) -> T) throws(StoreError) -> T {
    try Self.run(path, body)
  }

  /// Runs `body` inside BEGIN IMMEDIATE … COMMIT; on any failure rolls back and rethrows.
  ///
  /// IMMEDIATE takes the write lock up front, so a second writer waits (busy_timeout) at BEGIN
  /// instead of failing with SQLITE_BUSY half-way through.
  private func transaction<T>(_ body: () throws(SQLiteError) -> T) throws(StoreError) -> T {
    try run { () throws(SQLiteError) -> T in
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

  private func rollBack() {
    // After SQLITE_FULL, IOERR, NOMEM or BUSY SQLite may have rolled back by itself, and a
    // second ROLLBACK would only fail with "no transaction is active". Its own failure cannot
    // be reported better than the error that caused it.
    guard connection.isInTransaction else { return }
    try? execute(statements.rollback)
  }

  /// Steps a statement that returns no rows, then resets it so it holds no lock.
  private func execute(_ statement: SQLiteStatement) throws(SQLiteError) {
    defer { statement.reset() }
    try statement.run()
  }

  /// The revision of a chain's newest change (0: none): in the log's tail, else its row's.
  private func newestRevision(of chain: ChainKey) throws(SQLiteError) -> Int64 {
    let tail = statements.newestInTail
    defer { tail.reset() }
    try tail.bind(try readCheckpoint(), at: 1)
    try tail.bind(chain.key, at: 2)
    try tail.bind(chain.user.map { Int64($0) }, at: 3)
    if try tail.step(), let revision = tail.optionalInt64(at: 0) { return revision }
    let row = chain.user == nil ? statements.switchRevision : statements.userValueRevision
    defer { row.reset() }
    try row.bind(chain.key, at: 1)
    if let user = chain.user { try row.bind(Int64(user), at: 2) }
    return try row.step() ? row.int64(at: 0) : 0
  }

  private func readCheckpoint() throws(SQLiteError) -> Int64 {
    try readMeta(statements.readCheckpoint, row: "checkpoint")
  }

  private func markAtOrAbove(key: String, revision: Int64) throws(SQLiteError) -> Int64? {
    let statement = statements.markAtOrAbove
    defer { statement.reset() }
    try statement.bind(key, at: 1)
    try statement.bind(revision, at: 2)
    return try statement.step() ? statement.int64(at: 0) : nil
  }

  private func readRevision() throws(SQLiteError) -> Int64 {
    try readMeta(statements.readRevision, row: "revision")
  }

  /// The one value a query of the `meta` table returns.
  private func readMeta(_ statement: SQLiteStatement, row: String) throws(SQLiteError) -> Int64 {
    defer { statement.reset() }
    guard try statement.step() else {
      throw .corrupt("the meta table has no \(row) row", context: "reading \(path)")
    }
    return statement.int64(at: 0)
  }

  private func readChanges(after: Int64, upTo: Int64 = .max, limit: Int) throws(SQLiteError)
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

  private func readChanges(_ statement: SQLiteStatement) throws(SQLiteError) -> [Change] {
    defer { statement.reset() }
    var result: [Change] = []
    while try statement.step() { result.append(try statement.readChange()) }
    return result
  }
}

/// A store belongs to one owner at a time; say so, so nobody adds `@unchecked Sendable`.
@available(*, unavailable)
extension SwitchStore: Sendable {}
