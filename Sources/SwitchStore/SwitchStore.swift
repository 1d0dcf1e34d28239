// SwitchStore: the switches and their change log, in one SQLite file.
//
// Layers, bottom up. `SQLiteError`, `SQLiteStatement` and `SQLiteConnection` wrap the C API
// once: every result code becomes a `SQLiteError` with its codes, statements are prepared once
// (`SQLITE_PREPARE_PERSISTENT`) and finalized by `close()` or deinit. `Schema` holds the
// forward migrations, versioned with `PRAGMA user_version`. `StoreStatements` holds every SQL
// text and binds and reads rows; `StorageNames` spells SwitchCore's enums for the file (a file
// format, kept apart from the wire names). `SwitchStore` is what the daemon calls: each public
// method is one query or one transaction, and maps `SQLiteError` to `StoreError` in one place.
//
// Threading: nothing here is Sendable. A store and its connection belong to one thread at a
// time (the daemon keeps the writer behind a Mutex or on a writer thread), so SQLite is opened
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
// of `meta.checkpoint`. `checkpoint()` copies each key's newest change into its row now and
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
  private var chains: [String: KeyChain] = [:]

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
      var cursor = try readCheckpoint()
      while true {
        let page = try readChanges(after: cursor, limit: 1000)
        for change in page {
          records[change.key] = SwitchRecord(
            key: change.key, state: change.state, revision: change.revision,
            changedAt: change.time)
        }
        guard let last = page.last else { break }
        cursor = last.revision
      }
      // The writer's chains start where the file ends (see `chains`).
      for record in records.values where chains[record.key] == nil {
        chains[record.key] = KeyChain(newest: record.revision, sinceMark: markSpacing - 1)
      }
      return records.values.sorted { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }
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
    var result: [Change] = []
    try history(key: key, before: before, limit: limit, newest: newest) { result.append($0) }
    return result
  }

  /// The same rows, handed to `body` one at a time as they are read: a caller that encodes
  /// a page keeps no array of them, and may pause between rows.
  public func history(
    key: String?, before: Int64?, limit: Int, newest: Int64? = nil, _ body: (Change) -> Void
  ) throws(StoreError) {
    guard limit > 0 else { return }
    try run { () throws(SQLiteError) in
      if let key {
        var head = newest ?? 0
        if newest == nil { head = try newestRevision(of: key) }
        try history(of: key, newest: head, before: before, limit: limit, body)
        return
      }
      let statement = statements.history
      defer { statement.reset() }
      try statement.bind(before ?? .max, at: 1)
      try statement.bind(Int64(limit), at: 2)
      while try statement.step() { body(try statement.readChange()) }
    }
  }

  /// Walks `key`'s chain down from its newest change, or from the mark just above `before`.
  /// Rows are never changed once written and pruning only removes the oldest, so the walk
  /// needs no snapshot: it ends at the first revision no longer in the log.
  private func history(
    of key: String, newest: Int64, before: Int64?, limit: Int, _ body: (Change) -> Void
  ) throws(SQLiteError) {
    var next: Int64?
    if let before { next = try markAtOrAbove(key: key, revision: before) }
    if next == nil && newest > 0 { next = newest }
    var count = 0
    let statement = statements.changeAndPrevious
    while let revision = next, count < limit {
      defer { statement.reset() }
      try statement.bind(revision, at: 1)
      guard try statement.step() else { break }
      if revision < before ?? .max {
        body(try statement.readChange())
        count += 1
      }
      next = statement.optionalInt64(at: 21)
    }
  }

  /// Whether the store knows `key`: it has a row, or changes not yet checkpointed into one.
  public func hasSwitch(_ key: String) throws(StoreError) -> Bool {
    try run { () throws(SQLiteError) in
      let statement = statements.hasSwitch
      defer { statement.reset() }
      try statement.bind(key, at: 1)
      if try statement.step() { return true }
      return try newestRevision(of: key) > 0
    }
  }

  // MARK: Writing

  /// Inserts rows for newly declared switches (revision 0, changedAt nil) in one transaction;
  /// existing keys are left alone.
  ///
  /// Each record is stored as given (its `revision` and `changedAt` too).
  public func insertNew(_ records: [SwitchRecord]) throws(StoreError) {
    guard !records.isEmpty else { return }
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
  /// (whose revision is the new global revision); the switch rows follow at `checkpoint()`.
  ///
  /// Precondition: revisions are consecutive, starting at currentRevision()+1; otherwise this
  /// throws `.sqlite` with `SQLITE_MISUSE` rather than leave a gap or reuse a revision. On any
  /// failure: ROLLBACK, throw, nothing changed. When it returns, the changes are durable.
  public func commit(_ changes: [Change]) throws(StoreError) {
    guard !changes.isEmpty else { return }
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
        let previous: KeyChain
        if let known = chains[change.key] {
          previous = known
        } else {
          previous = try startChain(change.key)
        }
        let insert = statements.insertChange
        try insert.bindChange(change, keyPrevious: previous.newest > 0 ? previous.newest : nil)
        try execute(insert)
        var next = KeyChain(newest: change.revision, sinceMark: previous.sinceMark + 1)
        if next.sinceMark >= markSpacing {
          let mark = statements.insertMark
          try mark.bind(change.key, at: 1)
          try mark.bind(change.revision, at: 2)
          try execute(mark)
          next.sinceMark = 0
        }
        chains[change.key] = next
      }
    }
  }

  /// A key's chain as the file holds it, for its first change since opening: that change is
  /// marked (`sinceMark` is full), so each run of unmarked changes stays within one opening.
  private func startChain(_ key: String) throws(SQLiteError) -> KeyChain {
    KeyChain(newest: try newestRevision(of: key), sinceMark: markSpacing - 1)
  }

  /// The revision the switch rows hold: changes after it are only in the log.
  public func checkpointRevision() throws(StoreError) -> Int64 {
    try run { () throws(SQLiteError) in try readCheckpoint() }
  }

  /// Writes `rows` and records `revision` as the checkpoint, in one transaction: the cheap way
  /// for a caller that holds every switch as of `revision` (the daemon's writer) and passes
  /// each one that changed since the last checkpoint.
  public func checkpoint(_ rows: [SwitchRecord], at revision: Int64) throws(StoreError) {
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
      let write = statements.writeCheckpoint
      try write.bind(revision, at: 1)
      try execute(write)
    }
  }

  /// Copies each key's newest change since the last checkpoint into its switch row, in one
  /// transaction, so start-up replays only what came after. It reads the whole tail of the log.
  public func checkpoint() throws(StoreError) {
    try transaction { () throws(SQLiteError) in
      let from = try readCheckpoint()
      let to = try readRevision()
      guard to > from else { return }
      let rows = statements.checkpointRows
      try rows.bind(from, at: 1)
      try rows.bind(to, at: 2)
      try execute(rows)
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
    try checkpoint()
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

  /// The revision of `key`'s newest change (0: none): in the log's tail, else its row's.
  private func newestRevision(of key: String) throws(SQLiteError) -> Int64 {
    let tail = statements.newestInTail
    defer { tail.reset() }
    try tail.bind(try readCheckpoint(), at: 1)
    try tail.bind(key, at: 2)
    if try tail.step(), let revision = tail.optionalInt64(at: 0) { return revision }
    let row = statements.switchRevision
    defer { row.reset() }
    try row.bind(key, at: 1)
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
