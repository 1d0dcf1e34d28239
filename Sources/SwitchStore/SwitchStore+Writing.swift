import CSQLite
import SwitchCore

// Writing: commits, checkpoints of the switch rows, pruning the log.
extension SwitchStore {
  /// Inserts rows for newly declared switches (revision 0, no time shown) in one transaction;
  /// existing keys are left alone.
  ///
  /// Each record is stored as given (its `revision` and `changedAt` too), but a record at
  /// revision 0 keeps `declaredAt` (the time its switch was declared, in milliseconds) as its
  /// time, which no read shows: a switch that never changed has none (`readSwitch`). Its row
  /// then holds a time's bytes already, and the switch's first change rewrites it nearly at
  /// its size. A row that grew by a time in a page its neighbours filled rebalanced the page
  /// with its siblings: ~1.0k instructions more a switch's first change (SQLite alone and in
  /// the daemon, callgrind; a table of 10,000 rows, 1,000 written a transaction). A row
  /// written again at revision 0 (a default that changed, `Writer.rowsWithoutRevision`)
  /// holds no time again: rare, and only a cost. (A switchd before stop 52, opening this
  /// file, would show the declaration time of a switch that never changed.)
  public func insertNew(_ records: [SwitchRecord], declaredAt: Int64? = nil) throws(StoreError) {
    guard !records.isEmpty else { return }
    try checkFilesInPlace()
    if tailChainsLoaded.switches { chains.reserveCapacity(chains.count + records.count) }
    do throws(StoreError) {
      try transaction { () throws(SQLiteError) in
        let statement = statements.insertSwitchIfAbsent
        for record in records {
          let keyID = try keyNumber(of: record.key)
          try statement.bindSwitch(
            keyID: keyID, checked: record.state.checked, revision: record.revision,
            changedAt: record.revision == 0 ? declaredAt : record.changedAt)
          try execute(statement)
          guard connection.changes == 1 else { continue }
          if record.state.holdsDetails {
            try writeDetails(keyID: keyID, record.state, revision: record.revision)
          }
          // A row new to the file, once the tail is loaded: its chain starts here, as
          // `startChain` would start it from the row, with its key's number, so that its
          // first change reads nothing (two queries and an insert, ~15k instructions).
          let chain = ChainKey(hashedKey: record.hashedKey, user: nil)
          if tailChainsLoaded.switches && chains[chain] == nil {
            chains[chain] = openedChain(newest: record.revision, keyID: keyID)
          }
        }
      }
    } catch {
      forgetChains()
      throw error
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
      forgetChains()
      committedRevision = nil
      loggedRows = nil  // a failed COMMIT may have written: counted again
      throw error
    }
    committedRevision = changes[changes.count - 1].revision
    if let rows = loggedRows { loggedRows = rows + Int64(changes.count) }
  }

  func commitChanges(_ changes: [Change]) throws(StoreError) {
    try transaction { () throws(SQLiteError) in
      // Read under the write lock (once, then kept): the revision the first change must follow.
      var expected: Int64
      if let committedRevision {
        expected = committedRevision + 1
      } else {
        let revision = try readRevision()
        rowidIsNextRevision = try readMeta(statements.newestLogRevision, row: "log") == revision
        expected = revision + 1
      }
      try inStatements(of: StoreStatements.SQL.insertChangesSizes, rows: changes.count) {
        (run, size) throws(SQLiteError) in
        try append(changes, run, expected: expected, statement: size)
        expected += Int64(run.count)
      }
    }
  }

  /// Appends `changes[range]` to the log, in `commitChanges`' transaction,
  /// with one statement, `statements.insertChanges[statement]` (its size is
  /// the range's): each change's row, its details when it has any, its
  /// key's chain and, every `markSpacing` changes, a mark.
  private func append(
    _ changes: [Change], _ range: Range<Int>, expected: Int64, statement: Int
  ) throws(SQLiteError) {
    let insert = statements.insertChanges[statement]
    // The change at `row` is read field by field in its array: passing
    // `changes[row]` copied it (and released the copy) twice a row (callgrind).
    for row in range {
      let offset = row - range.lowerBound
      let chain = try chainUp(changes, row, expected: expected + Int64(offset))
      try insert.bindChange(
        changes, row, keyID: chain.keyID, keyPrevious: chain.keyPrevious, at: Int32(offset),
        revisionFollows: rowidIsNextRevision)
    }
    try execute(insert)
    // The rows took consecutive rowids from the largest + 1: the last one's
    // is the range's last revision, or the log was not what it was read as.
    let last = expected + Int64(range.count) - 1
    guard connection.lastInsertRowid == last else {
      throw .misuse(
        "the log's rows took revisions up to \(connection.lastInsertRowid), expected \(last)",
        context: "commit on \(path)")
    }
  }

  /// What a change's row needs besides the change, in order: checks its
  /// revision, inserts its details when it has any, moves its key's chain
  /// on (and every `markSpacing` changes writes a mark); returns its
  /// key's number and its `key_previous`. No foreign key: details and
  /// marks may go in before the row.
  private func chainUp(
    _ changes: [Change], _ row: Int, expected: Int64
  ) throws(SQLiteError) -> (keyID: Int64, keyPrevious: Int64?) {
    guard changes[row].revision == expected else {
      throw .misuse(
        "change of \(changes[row].key) has revision \(changes[row].revision), expected \(expected)",
        context: "commit on \(path)")
    }
    let chain = ChainKey(hashedKey: changes[row].hashedKey, user: changes[row].user)
    // One look-up for both the read and the write back (it hashes the key).
    let slot = chains.index(forKey: chain)
    let previous: KeyChain
    if let slot {
      previous = chains.values[slot]
    } else {
      previous = try startChain(chain)
    }
    let keyPrevious = previous.newest > 0 ? previous.newest : nil
    if Change.hasDetails(changes[row].state, changes[row].previous) {
      let details = statements.insertChangeDetails
      try details.bindChangeDetails(changes[row])
      try execute(details)
    }
    let keyID = previous.keyID != 0 ? previous.keyID : try keyNumber(for: chain)
    var next = KeyChain(
      newest: changes[row].revision, sinceMark: previous.sinceMark + 1, keyID: keyID)
    // Marks index the switch-level chains; a user's chain is walked whole.
    if changes[row].user == nil && next.sinceMark >= markSpacing {
      let mark = statements.insertMark
      try mark.bind(changes[row].key, at: 1)
      try mark.bind(changes[row].revision, at: 2)
      try execute(mark)
      next.sinceMark = 0
    }
    if let slot {
      chains.values[slot] = next
    } else {
      chains[chain] = next
    }
    return (keyID, keyPrevious)
  }

  /// After a failed transaction: the chains ran ahead of the rolled-back file, and are read
  /// again from it as each is next needed.
  func forgetChains() {
    chains.removeAll()
    tailChainsLoaded = TailChainsLoaded()
  }

  /// `key`'s number in `keys`, given it in this transaction when it has
  /// none (its chain keeps it; a failed commit empties the chains).
  private func keyNumber(of key: String) throws(SQLiteError) -> Int64 {
    let find = statements.keyNumber
    defer { find.reset() }
    try find.bind(key, at: 1)
    if try find.step() { return find.int64(at: 0) }
    let insert = statements.insertKey
    try insert.bind(key, at: 1)
    try execute(insert)
    return connection.lastInsertRowid
  }

  /// Writes a State's details beside its switch row (a row of an older
  /// revision, left when a State no longer holds them, does not count).
  private func writeDetails(
    keyID: Int64, _ state: SwitchState, revision: Int64
  ) throws(SQLiteError) {
    let details = statements.upsertSwitchDetails
    try details.bindSwitchDetails(keyID: keyID, state: state, revision: revision)
    try execute(details)
  }

  /// A key's chain as the file holds it, for its first change since opening. A chain with a
  /// change in the log's tail is in `chains` once the tail is loaded; one that is not has none
  /// there, and its row tells its newest.
  func startChain(_ chain: ChainKey) throws(SQLiteError) -> KeyChain {
    let newest =
      tailChainsLoaded.covers(chain) ? try rowRevision(of: chain) : try newestRevision(of: chain)
    return openedChain(newest: newest)
  }

  /// The key number of a chain that has none yet, or of a switch row a
  /// checkpoint writes: its switch's chain's when that has it (each user's
  /// chain of a key would look it up again), else looked up and given to
  /// the switch's chain too.
  private func keyNumber(for chain: ChainKey) throws(SQLiteError) -> Int64 {
    let switchChain = chains.index(forKey: ChainKey(hashedKey: chain.hashedKey))
    if let switchChain, chains.values[switchChain].keyID != 0 {
      return chains.values[switchChain].keyID
    }
    let keyID = try keyNumber(of: chain.key)
    if let switchChain { chains.values[switchChain].keyID = keyID }
    return keyID
  }

  /// A chain as it stands before its first change since opening. That change is marked
  /// (`sinceMark` is full), so that each run of unmarked changes stays within one opening,
  /// unless the chain has no change before it (`newest` 0): no run comes before it then, and
  /// the first change of each of 10,000 new switches writes no mark (~4.9k instructions).
  func openedChain(newest: Int64, keyID: Int64 = 0) -> KeyChain {
    KeyChain(newest: newest, sinceMark: newest == 0 ? 0 : markSpacing - 1, keyID: keyID)
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
    // Not into a file that is no longer the database (the stop's checkpoint
    // wrote into a removed one, an audit).
    try checkFilesInPlace()
    do throws(StoreError) {
      try writeRowsAndCheckpoint(rows, userRows: userRows, at: revision)
    } catch {
      // A key numbered in the rolled-back transaction may be in the chains.
      forgetChains()
      throw error
    }
  }

  private func writeRowsAndCheckpoint(
    _ rows: [SwitchRecord], userRows: [(key: String, user: UInt32, value: UserValue)],
    at revision: Int64
  ) throws(StoreError) {
    try transaction { () throws(SQLiteError) in
      let current = try readRevision()
      guard revision == current else {
        throw .misuse(
          "a checkpoint at revision \(revision), but the log is at \(current)",
          context: "checkpoint on \(path)")
      }
      let previous = try readCheckpoint()
      // Rows in key-number order: where the next row's number follows,
      // SQLite's cursor steps to it without a descent from the root, as
      // for the rows of switches declared together and changed together
      // (~1.9k instructions a row less; in another order, no more; SQLite
      // alone, 1,000 rows of 10,000 a transaction, callgrind).
      var order: [(keyID: Int64, row: Int)] = []
      order.reserveCapacity(rows.count)
      for row in rows.indices {
        order.append((try keyNumber(for: ChainKey(hashedKey: rows[row].hashedKey)), row))
      }
      order.sort { $0.keyID < $1.keyID }
      try inStatements(of: StoreStatements.SQL.upsertSwitchesSizes, rows: order.count) {
        (run, size) throws(SQLiteError) in
        try upsertSwitches(rows, order[run], statement: statements.upsertSwitches[size])
        for (keyID, row) in order[run] {
          try writeOrDropDetails(of: rows, row, keyID: keyID, previousCheckpoint: previous)
        }
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

  /// Runs `body` over `count` rows in as few statements as `sizes` (largest
  /// first) allow: each run of rows, and the index of its statement's size.
  /// The sizes end with 1, so one always fits (13 rows of [8, 4, 1]: 8, 4
  /// and 1).
  private func inStatements(
    of sizes: [Int], rows count: Int, _ body: (Range<Int>, Int) throws(SQLiteError) -> Void
  ) throws(SQLiteError) {
    var start = 0
    while start < count {
      let size = sizes.firstIndex { $0 <= count - start } ?? sizes.count - 1
      try body(start..<start + sizes[size], size)
      start += sizes[size]
    }
  }

  /// Writes the switch rows `order` names (each its key's number and its
  /// index in `rows`) with `statement`, whose size is `order`'s.
  private func upsertSwitches(
    _ rows: [SwitchRecord], _ order: ArraySlice<(keyID: Int64, row: Int)>,
    statement: SQLiteStatement
  ) throws(SQLiteError) {
    for (offset, (keyID, row)) in order.enumerated() {
      try statement.bindSwitch(
        keyID: keyID, checked: rows[row].state.checked, revision: rows[row].revision,
        changedAt: rows[row].changedAt, at: Int32(offset))
    }
    try execute(statement)
  }

  /// Writes the details of `rows[index]`'s State beside its switch row
  /// (its key's number `keyID`), or, when it holds none and the row was
  /// written again at the revision it held (a default that changed,
  /// `Writer.rowsWithoutRevision`), deletes the details of that revision:
  /// they are no longer its State's. A newer revision has none yet. (Read
  /// in the array: a row passed alone is copied.)
  private func writeOrDropDetails(
    of rows: [SwitchRecord], _ index: Int, keyID: Int64, previousCheckpoint: Int64
  ) throws(SQLiteError) {
    let revision = rows[index].revision
    if rows[index].state.holdsDetails {
      try writeDetails(keyID: keyID, rows[index].state, revision: revision)
    } else if revision <= previousCheckpoint {
      let details = statements.deleteSwitchDetails
      try details.bind(keyID, at: 1)
      try details.bind(revision, at: 2)
      try execute(details)
    }
  }

  /// Copies each key's newest change since the last checkpoint into its switch row, in one
  /// transaction, so start-up replays only what came after. It reads the whole tail of the log.
  public func checkpointFromLog() throws(StoreError) {
    try checkFilesInPlace()
    try transaction { () throws(SQLiteError) in
      let from = try readCheckpoint()
      let to = try readRevision()
      guard to > from else { return }
      for rows in [statements.checkpointRows, statements.checkpointDetailRows] {
        try rows.bind(from, at: 1)
        try rows.bind(to, at: 2)
        try execute(rows)
      }
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
    // It may empty the log: the next commit reads the log's end again.
    committedRevision = nil
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
    // Unknown until the chunks are all done: a failed one may have deleted.
    let rowsBefore = loggedRows
    loggedRows = nil
    while true {
      let count = try transaction { () throws(SQLiteError) -> Int64 in
        let revision = try readRevision()
        let write = statements.writeRevision
        try write.bind(revision, at: 1)
        try execute(write)
        let details = statements.pruneDetailsChunk
        try details.bind(threshold, at: 1)
        try details.bind(chunk, at: 2)
        try execute(details)
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
    loggedRows = rowsBefore.map { $0 - deleted }
    return Int(deleted)
  }
}

extension SwitchStore {
  /// A start on a database older than the revision switchd had announced
  /// (a restore from a backup): the database's revision becomes `revision`,
  /// above every number a client may have seen, so no number names two
  /// changes; and no watch may resume from before it (`resumeFloor`), as
  /// the changes a client saw after the backup are not the database's. As
  /// etcd's restore with `--bump-revision` and `--mark-compacted`.
  public func markRestored(at revision: Int64) throws(StoreError) {
    try transaction { () throws(SQLiteError) in
      guard revision > (try readRevision()) else { return }
      // Our own integer, not input: nothing to bind.
      try connection.execute("UPDATE meta SET value = \(revision) WHERE name = 'revision'")
      try connection.execute(
        "INSERT INTO meta(name, value) VALUES ('resumeFloor', \(revision)) "
          + "ON CONFLICT(name) DO UPDATE SET value = excluded.value")
    }
    committedRevision = nil
  }

  /// How many changes the log holds: counted once, then kept as commits
  /// add rows and prunes delete them. Not the span of revisions it holds,
  /// which a restore leaves with a gap (`markRestored`).
  public func logRowCount() throws(StoreError) -> Int64 {
    if let loggedRows { return loggedRows }
    let counted = try run { () throws(SQLiteError) in
      Int64(try connection.textRows("SELECT count(*) FROM changes").first ?? "0") ?? 0
    }
    loggedRows = counted
    return counted
  }

  /// The oldest revision a watch may resume from (`since`), set by the last
  /// `markRestored`; 0 when the database was never restored.
  public func resumeFloor() throws(StoreError) -> Int64 {
    try run { () throws(SQLiteError) in
      let rows = try connection.textRows("SELECT value FROM meta WHERE name = 'resumeFloor'")
      return rows.first.flatMap { Int64($0) } ?? 0
    }
  }
}
