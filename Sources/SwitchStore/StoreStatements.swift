import SwitchCore

/// The SQL of every statement the store runs, and the statements prepared from it once.
///
/// Fixed text with bound parameters only: nothing is built per call, and each statement is
/// prepared once per connection (`SQLITE_PREPARE_PERSISTENT`). Column order in the SELECTs is
/// what the `read...` functions below expect.
struct StoreStatements {
  enum SQL {
    static let begin = "BEGIN IMMEDIATE"
    static let commit = "COMMIT"
    static let rollback = "ROLLBACK"

    /// A switch's State as `readSwitch` reads it, from `switchSource`: its
    /// row (migration 11) and its details when it has them (NULL, which
    /// reads as the defaults, when it has none).
    static let switchColumns = """
      keys.key, switch.checked, details.read_only, details.read_only_reason, details.held_by, \
      details.disabled, details.disabled_reason, details.disabled_by, switch.revision, \
      switch.changed_at, details.invalid, details.invalid_reason, details.value_fixed, \
      details.expires_at, details.read_only_until, details.disabled_until, \
      details.pending_until, details.pending, details.expiry_by_admin
      """
    /// A switch row, its key by number, and its details row: one of an older
    /// revision is what an older State held, and does not count.
    static let switchSource = """
      switches AS switch JOIN keys ON keys.id = switch.key_id \
      LEFT JOIN switch_details AS details \
      ON details.key_id = switch.key_id AND details.revision = switch.revision
      """
    /// Every column of `switches` and of `switch_details`, in the order
    /// `bindSwitch` and `bindSwitchDetails` bind them.
    static let switchRowColumns = "key_id, checked, revision, changed_at"
    static let switchDetailColumns = """
      key_id, revision, read_only, read_only_reason, held_by, disabled, disabled_reason, \
      disabled_by, invalid, invalid_reason, value_fixed, expires_at, read_only_until, \
      disabled_until, pending_until, pending, expiry_by_admin
      """
    /// A key's number in `keys`, from its text `?1`.
    static let keyNumberOfParameter = "(SELECT id FROM keys WHERE key = ?1)"

    /// `what`'s parts (migration 8) and `actor`'s (migration 9) are read
    /// where their columns were.
    static let changeColumns = """
      revision, \(keyOfRow), \(ChangeWhat.causeSQL), time, \(ActorIDs.uidSQL), \
      \(ActorIDs.gidSQL), actor_pid, \
      \(ChangeWhat.checkedSQL), s_read_only, s_read_only_reason, s_held_by, s_disabled, s_disabled_reason, \
      s_disabled_by, \
      \(ChangeWhat.previousCheckedSQL), p_read_only, p_read_only_reason, p_held_by, p_disabled, p_disabled_reason, \
      p_disabled_by, s_invalid, s_invalid_reason, p_invalid, p_invalid_reason, user, \
      s_value_fixed, p_value_fixed, \(ChangeWhat.sourceSQL), s_expires_at, s_read_only_until, \
      s_disabled_until, s_pending_until, s_pending, p_expires_at, p_read_only_until, \
      p_disabled_until, p_pending_until, p_pending, s_expiry_by_admin, p_expiry_by_admin
      """
    /// A log row's key, read back from `keys` (migration 10).
    static let keyOfRow = "(SELECT key FROM keys WHERE id = key_id)"
    /// A key's number in `keys`, and a new one.
    static let keyNumber = "SELECT id FROM keys WHERE key = ?1"
    static let insertKey = "INSERT INTO keys(key) VALUES (?1)"
    /// `changeColumns` then `key_previous`: its column index.
    static let keyPreviousColumn: Int32 = 41
    /// Where `changeColumns` are read: a change's row, and its details when it has any
    /// (migration 7); a change without details reads NULL there, which `readChange` takes
    /// for the defaults (0, no reason, no deadline) those columns held.
    static let changeSource = "changes LEFT JOIN change_details USING (revision)"

    static let loadSwitches = "SELECT \(switchColumns) FROM \(switchSource) ORDER BY keys.key"
    static let hasSwitch = "SELECT 1 FROM switches WHERE key_id = \(keyNumberOfParameter)"
    /// One switch's row with its details, as of the checkpoint.
    static let switchRow = """
      SELECT \(switchColumns) FROM \(switchSource) WHERE switch.key_id = \(keyNumberOfParameter)
      """
    static let insertSwitchIfAbsent = """
      INSERT INTO switches(\(switchRowColumns)) VALUES (?1, ?2, ?3, ?4) \
      ON CONFLICT(key_id) DO NOTHING
      """

    /// The newest log row is the revision; `meta` keeps it when pruning
    /// could empty the log. max() over the primary key is one descent.
    static let readRevision = """
      SELECT max(value, coalesce((SELECT max(revision) FROM changes), 0)) FROM meta \
      WHERE name = 'revision'
      """
    static let writeRevision = "UPDATE meta SET value = ?1 WHERE name = 'revision'"
    /// The log's newest row (0: the log is empty): one descent of the primary key.
    static let newestLogRevision = "SELECT coalesce(max(revision), 0) FROM changes"
    /// Switch rows as given, `rows` of them in one statement, whether each
    /// had one or not: row `r`'s columns are `?(4r+1)`...`?(4r+4)`. REPLACE
    /// deletes the row it conflicts with and inserts this one: a checkpoint
    /// writes a row for every switch changed since the last one, ~5.2k
    /// instructions a row one statement each (7.2k when the row grows, as a
    /// switch's first change does), ~3.7k (5.7k) forty or more a statement:
    /// each statement's start and halt cost ~1.5k (SQLite alone, callgrind,
    /// 1,000 rows of 10,000 a transaction). INSERT … ON CONFLICT DO UPDATE
    /// cost ~5.4k a row and an UPDATE ~5.2k (7.2k); the table keyed by the
    /// key's text, 18 columns, ~15k. The same row only because the columns
    /// named are every column of the table (a test holds them equal): a
    /// column left out would be reset.
    static func upsertSwitches(rows: Int) -> String {
      "INSERT OR REPLACE INTO switches(\(switchRowColumns)) VALUES "
        + parameterRows(rows, columns: switchRowParameters)
    }
    /// The parameters of one switch row in `upsertSwitches`.
    static let switchRowParameters = 4
    /// The rows of the upserts, largest first (`SwitchStore.checkpoint`): 90
    /// rows go in as 64, 16, 4, 4, 1 and 1.
    static let upsertSwitchesSizes = [64, 16, 4, 1]
    /// A switch's details at `?2`, when its row is written again at the
    /// revision it held with a State that holds no more.
    static let deleteSwitchDetails =
      "DELETE FROM switch_details WHERE key_id = ?1 AND revision = ?2"
    /// A switch's details, for a State that holds more than `checked`.
    static let upsertSwitchDetails = """
      INSERT OR REPLACE INTO switch_details(\(switchDetailColumns)) \
      VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17)
      """
    /// The revision the switch rows hold: changes after it are only in the log.
    static let readCheckpoint = "SELECT value FROM meta WHERE name = 'checkpoint'"
    static let writeCheckpoint = "UPDATE meta SET value = ?1 WHERE name = 'checkpoint'"
    /// Copies each key's newest change in (?1, ?2] to its switch row: the log's tail, grouped.
    static let checkpointRows = """
      INSERT OR REPLACE INTO switches(\(switchRowColumns))
        SELECT key_id, \(ChangeWhat.checkedSQL), revision, time FROM changes
        WHERE revision IN \(newestSwitchChanges)
      """
    /// And their details, for those that have them (with the defaults when
    /// only the State before held more: the same as none).
    static let checkpointDetailRows = """
      INSERT OR REPLACE INTO switch_details(\(switchDetailColumns))
        SELECT key_id, revision, s_read_only, s_read_only_reason, s_held_by, s_disabled,
          s_disabled_reason, s_disabled_by, s_invalid, s_invalid_reason, s_value_fixed,
          s_expires_at, s_read_only_until, s_disabled_until, s_pending_until, s_pending,
          s_expiry_by_admin
        FROM changes JOIN change_details USING (revision)
        WHERE revision IN \(newestSwitchChanges)
      """
    /// Each key's newest switch-level change in (?1, ?2].
    static let newestSwitchChanges = """
      (SELECT max(revision) FROM changes WHERE revision > ?1 AND revision <= ?2
       AND user IS NULL GROUP BY key_id)
      """
    /// Copies each user's newest value change in (?1, ?2] to its `user_values` row.
    static let checkpointUserRows = """
      INSERT INTO user_values(\(userValueColumns))
        SELECT \(keyOfRow), user, \(ChangeWhat.checkedSQL), revision, time, s_expires_at,
          coalesce(s_expiry_by_admin, 0), s_pending_until, s_pending
        FROM \(changeSource) WHERE revision IN
          (SELECT max(revision) FROM changes WHERE revision > ?1 AND revision <= ?2
           AND user IS NOT NULL GROUP BY key_id, user)
      ON CONFLICT(key, user) DO UPDATE SET \(userValueUpdates)
      """
    static let userValueColumns = """
      key, user, checked, revision, changed_at, expires_at, expiry_by_admin, pending_until, \
      pending
      """
    /// What a user's newer value replaces of a row (every column but its key and user).
    static let userValueUpdates = """
      checked = excluded.checked, revision = excluded.revision, \
      changed_at = excluded.changed_at, expires_at = excluded.expires_at, \
      expiry_by_admin = excluded.expiry_by_admin, pending_until = excluded.pending_until, \
      pending = excluded.pending
      """
    /// Every user's value but its deadlines (`loadUserDeadlines` adds them to the few that
    /// have one).
    static let loadUserValues = """
      SELECT key, user, checked, revision, changed_at FROM user_values ORDER BY key, user
      """
    /// The deadlines of the values that have one, through the partial index of migration 13
    /// (`INDEXED BY`: without it, an error, not a scan of every value).
    static let loadUserDeadlines = """
      SELECT key, user, expires_at, expiry_by_admin, pending_until, pending
      FROM user_values INDEXED BY user_values_with_deadlines
      WHERE expires_at IS NOT NULL OR pending_until IS NOT NULL
      """
    static let upsertUserValue = """
      INSERT INTO user_values(\(userValueColumns)) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)
      ON CONFLICT(key, user) DO UPDATE SET \(userValueUpdates)
      """
    /// The revision of a user's value as of the checkpoint.
    static let userValueRevision = "SELECT revision FROM user_values WHERE key = ?1 AND user = ?2"
    /// The newest change of a key and user (NULL: switch-level) in the log's tail (after the
    /// checkpoint): a bounded scan.
    static let newestInTail = """
      SELECT max(revision) FROM changes
      WHERE revision > ?1 AND key_id = (SELECT id FROM keys WHERE key = ?2) AND user IS ?3
      """

    /// `rows` changes' rows in one statement (migration 10's columns): row
    /// `r`'s parameters are `?(8r + 1)`...`?(8r + 8)`, the last its
    /// `key_previous`, the revision of the previous change of the same key
    /// and user (`bindChange`). A statement has a fixed cost
    /// that a row of its own does not (its cursor opened and sought from
    /// the root, its halt freeing it). `OR FAIL`: with SQLite's default
    /// (ABORT) a statement of several rows keeps a statement journal to undo
    /// its own rows if one fails, which cost a 4-row statement ~3k
    /// instructions; a failed commit rolls the whole transaction back
    /// anyway. Counted on SQLite 3.40 alone (migration 7's 12 columns,
    /// steps only), a row costs this much less than alone: with 2 rows a
    /// statement ~0.9k, 3 ~1.3k, 4 ~1.5k, 8 ~1.8k, 16 ~1.9k.
    static func insertChanges(rows: Int) -> String {
      "INSERT OR FAIL INTO changes(revision, key_id, time, what, actor, actor_pid, user, "
        + "key_previous) VALUES " + parameterRows(rows, columns: rowParameters)
    }
    /// The parameters of one change's row in `insertChanges`.
    static let rowParameters = 8
    /// The rows of the inserts, largest first (`SwitchStore.commitChanges`):
    /// a group of 13 goes in as 8, 4 and 1.
    static let insertChangesSizes = [16, 8, 4, 2, 1]
    /// The VALUES of a statement of `rows` rows of `columns` parameters:
    /// row `r`'s are `?(columns·r + 1)`...`?(columns·r + columns)`.
    static func parameterRows(_ rows: Int, columns: Int) -> String {
      (0..<rows).map { row in
        "(" + (1...columns).map { "?\(columns * row + $0)" }.joined(separator: ", ") + ")"
      }.joined(separator: ", ")
    }
    /// The rest of a change whose States are not both free and unfixed
    /// (`Change.hasDetails`): `?2`...`?16` its State's, `?17`...`?31` the previous one's.
    static let insertChangeDetails = """
      INSERT INTO change_details(revision, \
      s_read_only, s_read_only_reason, s_held_by, s_disabled, s_disabled_reason, \
      s_disabled_by, s_invalid, s_invalid_reason, s_value_fixed, s_expires_at, \
      s_read_only_until, s_disabled_until, s_pending_until, s_pending, s_expiry_by_admin, \
      p_read_only, p_read_only_reason, p_held_by, p_disabled, p_disabled_reason, \
      p_disabled_by, p_invalid, p_invalid_reason, p_value_fixed, p_expires_at, \
      p_read_only_until, p_disabled_until, p_pending_until, p_pending, p_expiry_by_admin) \
      VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, \
      ?18, ?19, ?20, ?21, ?22, ?23, ?24, ?25, ?26, ?27, ?28, ?29, ?30, ?31)
      """
    /// The revision of a key's newest change as of the checkpoint (0: none).
    static let switchRevision =
      "SELECT revision FROM switches WHERE key_id = \(keyNumberOfParameter)"
    static let insertMark = "INSERT INTO key_marks(key, revision) VALUES (?1, ?2)"
    /// min() over the INTEGER PRIMARY KEY is one b-tree descent, not a scan.
    static let oldestChange = "SELECT min(revision) FROM changes"
    /// A range on the primary key: O(log n + rows returned).
    static let changesRange = """
      SELECT \(changeColumns) FROM \(changeSource) WHERE revision > ?1 AND revision <= ?2
      ORDER BY revision LIMIT ?3
      """
    /// The primary key walked backwards from `before`.
    static let history = """
      SELECT \(changeColumns) FROM \(changeSource) WHERE revision < ?1
      ORDER BY revision DESC LIMIT ?2
      """
    /// One step of a key's history: a row by its revision, and the one before it of that key.
    static let changeAndPrevious = """
      SELECT \(changeColumns), key_previous FROM \(changeSource) WHERE revision = ?1
      """
    /// Where to start walking a key's history back to `before`: the oldest mark at or above it.
    static let markAtOrAbove = """
      SELECT revision FROM key_marks WHERE key = ?1 AND revision >= ?2 ORDER BY revision LIMIT 1
      """
    /// The newest revision that pruning may delete: the one just older than the newest `keep`.
    /// Walks `keep` rows of the primary key backwards, once per prune; it does not rely on the
    /// log being contiguous, so "never deletes the newest `keep`" holds whatever the log holds.
    static let pruneThreshold = """
      SELECT revision FROM changes ORDER BY revision DESC LIMIT 1 OFFSET ?1
      """
    static let pruneChunk = """
      DELETE FROM changes WHERE revision IN
        (SELECT revision FROM changes WHERE revision <= ?1 ORDER BY revision LIMIT ?2)
      """
    /// The details of the changes `pruneChunk` deletes next: run just before it, in its
    /// transaction, so that no change is left without its details.
    static let pruneDetailsChunk = """
      DELETE FROM change_details WHERE revision IN
        (SELECT revision FROM changes WHERE revision <= ?1 ORDER BY revision LIMIT ?2)
      """
    /// A scan of the marks (one per 64 changes), once per prune.
    static let pruneMarks = "DELETE FROM key_marks WHERE revision <= ?1"
  }

  let begin: SQLiteStatement
  let commit: SQLiteStatement
  let rollback: SQLiteStatement
  let loadSwitches: SQLiteStatement
  let hasSwitch: SQLiteStatement
  let switchRow: SQLiteStatement
  let insertSwitchIfAbsent: SQLiteStatement
  let readRevision: SQLiteStatement
  let newestLogRevision: SQLiteStatement
  let writeRevision: SQLiteStatement
  /// `SQL.upsertSwitches(rows:)` for each of `SQL.upsertSwitchesSizes`, in that order.
  let upsertSwitches: [SQLiteStatement]
  let upsertSwitchDetails: SQLiteStatement
  let deleteSwitchDetails: SQLiteStatement
  let readCheckpoint: SQLiteStatement
  let writeCheckpoint: SQLiteStatement
  let checkpointRows: SQLiteStatement
  let checkpointDetailRows: SQLiteStatement
  let checkpointUserRows: SQLiteStatement
  let loadUserValues: SQLiteStatement
  let loadUserDeadlines: SQLiteStatement
  let upsertUserValue: SQLiteStatement
  let userValueRevision: SQLiteStatement
  let newestInTail: SQLiteStatement
  let keyNumber: SQLiteStatement
  let insertKey: SQLiteStatement
  /// `SQL.insertChanges(rows:)` for each of `SQL.insertChangesSizes`, in that order.
  let insertChanges: [SQLiteStatement]
  let insertChangeDetails: SQLiteStatement
  let switchRevision: SQLiteStatement
  let insertMark: SQLiteStatement
  let oldestChange: SQLiteStatement
  let changesRange: SQLiteStatement
  let history: SQLiteStatement
  let changeAndPrevious: SQLiteStatement
  let markAtOrAbove: SQLiteStatement
  let pruneThreshold: SQLiteStatement
  let pruneChunk: SQLiteStatement
  let pruneDetailsChunk: SQLiteStatement
  let pruneMarks: SQLiteStatement

  init(_ connection: SQLiteConnection) throws(SQLiteError) {
    begin = try connection.prepareCached(SQL.begin)
    commit = try connection.prepareCached(SQL.commit)
    rollback = try connection.prepareCached(SQL.rollback)
    loadSwitches = try connection.prepareCached(SQL.loadSwitches)
    hasSwitch = try connection.prepareCached(SQL.hasSwitch)
    switchRow = try connection.prepareCached(SQL.switchRow)
    insertSwitchIfAbsent = try connection.prepareCached(SQL.insertSwitchIfAbsent)
    readRevision = try connection.prepareCached(SQL.readRevision)
    newestLogRevision = try connection.prepareCached(SQL.newestLogRevision)
    writeRevision = try connection.prepareCached(SQL.writeRevision)
    upsertSwitches = try Self.prepare(SQL.upsertSwitchesSizes, SQL.upsertSwitches, on: connection)
    upsertSwitchDetails = try connection.prepareCached(SQL.upsertSwitchDetails)
    deleteSwitchDetails = try connection.prepareCached(SQL.deleteSwitchDetails)
    readCheckpoint = try connection.prepareCached(SQL.readCheckpoint)
    writeCheckpoint = try connection.prepareCached(SQL.writeCheckpoint)
    checkpointRows = try connection.prepareCached(SQL.checkpointRows)
    checkpointDetailRows = try connection.prepareCached(SQL.checkpointDetailRows)
    checkpointUserRows = try connection.prepareCached(SQL.checkpointUserRows)
    loadUserValues = try connection.prepareCached(SQL.loadUserValues)
    loadUserDeadlines = try connection.prepareCached(SQL.loadUserDeadlines)
    upsertUserValue = try connection.prepareCached(SQL.upsertUserValue)
    userValueRevision = try connection.prepareCached(SQL.userValueRevision)
    newestInTail = try connection.prepareCached(SQL.newestInTail)
    keyNumber = try connection.prepareCached(SQL.keyNumber)
    insertKey = try connection.prepareCached(SQL.insertKey)
    insertChanges = try Self.prepare(SQL.insertChangesSizes, SQL.insertChanges, on: connection)
    insertChangeDetails = try connection.prepareCached(SQL.insertChangeDetails)
    switchRevision = try connection.prepareCached(SQL.switchRevision)
    insertMark = try connection.prepareCached(SQL.insertMark)
    oldestChange = try connection.prepareCached(SQL.oldestChange)
    changesRange = try connection.prepareCached(SQL.changesRange)
    history = try connection.prepareCached(SQL.history)
    changeAndPrevious = try connection.prepareCached(SQL.changeAndPrevious)
    markAtOrAbove = try connection.prepareCached(SQL.markAtOrAbove)
    pruneThreshold = try connection.prepareCached(SQL.pruneThreshold)
    pruneChunk = try connection.prepareCached(SQL.pruneChunk)
    pruneDetailsChunk = try connection.prepareCached(SQL.pruneDetailsChunk)
    pruneMarks = try connection.prepareCached(SQL.pruneMarks)
  }
}

// MARK: Binding and reading rows

extension Change {
  /// Whether this change has a `change_details` row: a State on either side that holds
  /// more than `checked` (a hold, a reason, a deadline, `invalid`, a fixed value).
  /// Nearly every toggle has none, and writes one row of 12 columns.
  var hasDetails: Bool { Self.hasDetails(state, previous) }

  /// The same of a change's two States (read in a change's array: a
  /// change's own property copied it out of the array, callgrind).
  static func hasDetails(_ state: borrowing SwitchState, _ previous: borrowing SwitchState) -> Bool
  {
    state.holdsDetails || previous.holdsDetails
  }
}

extension StoreStatements {
  /// A multi-row statement of each of `sizes` rows, in that order.
  fileprivate static func prepare(
    _ sizes: [Int], _ sql: (_ rows: Int) -> String, on connection: SQLiteConnection
  ) throws(SQLiteError) -> [SQLiteStatement] {
    var statements: [SQLiteStatement] = []
    for rows in sizes { statements.append(try connection.prepareCached(sql(rows))) }
    return statements
  }
}

extension SwitchState {
  /// Whether it holds more than `checked` (a hold, a reason, a deadline,
  /// `invalid`, a fixed value): what a `change_details` or `switch_details`
  /// row keeps.
  var holdsDetails: Bool { !isFree || valueFixed }
}

extension SQLiteStatement {
  /// Binds a switch row to `?(4·row+1)`...`?(4·row+4)` (`SQL.switchRowColumns`;
  /// row 0 of a statement: `?1`...`?4`).
  func bindSwitch(
    keyID: Int64, checked: Bool, revision: Int64, changedAt: Int64?, at row: Int32 = 0
  ) throws(SQLiteError) {
    let at = row * Int32(StoreStatements.SQL.switchRowParameters)
    try bind(keyID, at: at + 1)
    try bind(checked, at: at + 2)
    try bind(revision, at: at + 3)
    try bind(changedAt, at: at + 4)
  }

  /// Binds a switch's details row to `?1`...`?17` (`SQL.switchDetailColumns`).
  func bindSwitchDetails(keyID: Int64, state: SwitchState, revision: Int64) throws(SQLiteError) {
    try bind(keyID, at: 1)
    try bind(revision, at: 2)
    try bindDetails(state, from: 3)
  }

  /// Binds `expiresAt`, `readOnlyUntil`, `disabledUntil`, `pendingUntil` and `pending`
  /// (migration 6), and `expiryByAdministrator` (migration 12), to `?first`...`?(first + 5)`.
  private func bindDeadlines(_ state: SwitchState, from first: Int32) throws(SQLiteError) {
    try bind(state.expiresAt, at: first)
    try bind(state.readOnlyUntil, at: first + 1)
    try bind(state.disabledUntil, at: first + 2)
    try bind(state.pendingUntil, at: first + 3)
    try bind(state.pending?.storageText, at: first + 4)
    try bind(state.expiryByAdministrator, at: first + 5)
  }

  /// Reads what `bindDeadlines` wrote, starting at column `first`, its
  /// administrator's flag at `byAdministrator` (added after the others).
  private func readDeadlines(
    into state: inout SwitchState, from first: Int32, byAdministrator: Int32
  ) throws(SQLiteError) {
    state.expiresAt = optionalInt64(at: first)
    // After `expiresAt`: without it the flag is not kept.
    state.expiryByAdministrator = bool(at: byAdministrator)
    state.readOnlyUntil = optionalInt64(at: first + 1)
    state.disabledUntil = optionalInt64(at: first + 2)
    state.pendingUntil = optionalInt64(at: first + 3)
    state.pending = try optionalTriedChange(at: first + 4)
  }

  /// The tried change stored at `column` (`TriedChange.storageText`); nil for NULL.
  private func optionalTriedChange(at column: Int32) throws(SQLiteError) -> TriedChange? {
    guard let text = optionalText(at: column) else { return nil }
    guard let tried = TriedChange(storageText: text) else {
      throw .corrupt("a tried change is unreadable: '\(text)'", context: "`\(sql)` on \(path)")
    }
    return tried
  }

  /// Binds a `user_values` row to `?1`...`?9` (`SQL.userValueColumns`).
  func bindUserValue(key: String, user: UInt32, _ value: UserValue) throws(SQLiteError) {
    try bind(key, at: 1)
    try bind(Int64(user), at: 2)
    try bind(value.checked, at: 3)
    try bind(value.revision, at: 4)
    try bind(value.changedAt, at: 5)
    try bind(value.expiresAt, at: 6)
    try bind(value.expiryByAdministrator, at: 7)
    try bind(value.pendingUntil, at: 8)
    try bind(value.pending?.storageText, at: 9)
  }

  /// Reads a row of `SQL.loadUserValues` but for its key (the caller,
  /// loading many rows, compares the key's bytes and makes a String only
  /// when it changes): a value with no deadlines.
  func readUserValue() throws(SQLiteError) -> (user: UInt32, value: UserValue) {
    (
      try readUser(),
      UserValue(checked: bool(at: 2), revision: int64(at: 3), changedAt: int64(at: 4))
    )
  }

  /// Reads a row of `SQL.loadUserDeadlines` into `value`, its row's value
  /// as `readUserValue` read it.
  func readUserDeadlines(into value: UserValue) throws(SQLiteError) -> UserValue {
    UserValue(
      checked: value.checked, revision: value.revision, changedAt: value.changedAt,
      expiresAt: optionalInt64(at: 2), expiryByAdministrator: bool(at: 3),
      pendingUntil: optionalInt64(at: 4), pending: try optionalTriedChange(at: 5))
  }

  /// The uid in column 1 of a `user_values` row.
  func readUser() throws(SQLiteError) -> UInt32 {
    guard let user = UInt32(exactly: int64(at: 1)) else {
      throw .corrupt("a user value has a uid out of range", context: "`\(sql)` on \(path)")
    }
    return user
  }

  /// Binds `changes[index]` as row `row` of an `insertChanges` statement,
  /// its key as `keyID` (its number in `keys`). The change is read in its
  /// array, field by field (a change passed alone was copied out of it,
  /// callgrind).
  /// `revisionFollows`: the log's rowids run up to the revision before
  /// this change's, so its revision is bound NULL and SQLite gives the
  /// row the next rowid (`SwitchStore.rowidIsNextRevision`).
  func bindChange(
    _ changes: [Change], _ index: Int, keyID: Int64, keyPrevious: Int64?, at row: Int32,
    revisionFollows: Bool
  ) throws(SQLiteError) {
    let at = row * Int32(StoreStatements.SQL.rowParameters)
    if revisionFollows {
      try bindNull(at: at + 1)
    } else {
      try bind(changes[index].revision, at: at + 1)
    }
    try bind(keyID, at: at + 2)
    try bind(changes[index].time, at: at + 3)
    try bind(
      ChangeWhat.of(
        cause: changes[index].cause, source: changes[index].actor.storageSource,
        checked: changes[index].state.checked, previousChecked: changes[index].previous.checked),
      at: at + 4)
    if case .peer(let uid, let gid, let pid) = changes[index].actor {
      try bind(ActorIDs.of(uid: uid, gid: gid), at: at + 5)
      try bind(Int64(pid), at: at + 6)
    } else {
      // Both NULL is how the log says "a policy file did it", or, with
      // cause `reconcile`, switchd applying stored values, or with `external`
      // or `drift`, the system switchd reads back (`Actor.configuration`).
      // Bindings outlive a reset: the previous row's actor must not stay.
      try bindNull(at: at + 5)
      try bindNull(at: at + 6)
    }
    try bind(changes[index].user.map { Int64($0) }, at: at + 7)
    try bind(keyPrevious, at: at + 8)
  }

  /// Binds a change's details to `insertChangeDetails`'s `?1`...`?31`.
  func bindChangeDetails(_ change: Change) throws(SQLiteError) {
    try bind(change.revision, at: 1)
    try bindDetails(change.state, from: 2)
    try bindDetails(change.previous, from: 17)
  }

  /// Binds what a State holds besides `checked` to `?first`...`?(first + 14)`.
  private func bindDetails(_ state: SwitchState, from first: Int32) throws(SQLiteError) {
    try bind(state.readOnly, at: first)
    try bind(state.readOnlyReason, at: first + 1)
    try bind(state.heldBy?.storageName, at: first + 2)
    try bind(state.disabled, at: first + 3)
    try bind(state.disabledReason, at: first + 4)
    try bind(state.disabledBy?.storageName, at: first + 5)
    try bind(state.invalid, at: first + 6)
    try bind(state.invalidReason, at: first + 7)
    try bind(state.valueFixed, at: first + 8)
    try bindDeadlines(state, from: first + 9)
  }

  /// Reads a row selected with `SQL.switchColumns`.
  func readSwitch() throws(SQLiteError) -> SwitchRecord {
    let key = text(at: 0)
    var state = try readState(from: 1, invalidFrom: 10, row: "switch \(key)")
    state.valueFixed = bool(at: 12)
    try readDeadlines(into: &state, from: 13, byAdministrator: 18)
    let revision = int64(at: 8)
    // A row at revision 0 may hold the time its switch was declared
    // (`SwitchStore.insertNew`): a switch that never changed has no time.
    return SwitchRecord(
      key: key, state: state, revision: revision,
      changedAt: revision == 0 ? nil : optionalInt64(at: 9))
  }

  /// Reads a row selected with `SQL.changeColumns`.
  func readChange() throws(SQLiteError) -> Change {
    let revision = int64(at: 0)
    guard let cause = Cause(storageCode: int64(at: 2)) else {
      throw .corrupt(
        "change \(revision) has an unknown cause \(int64(at: 2))", context: "`\(sql)` on \(path)")
    }
    let actor: Actor
    switch (optionalInt64(at: 4), optionalInt64(at: 5), optionalInt64(at: 6)) {
    case (nil, nil, nil):
      guard let stored = Actor.stored(source: int64(at: 28), cause: cause) else {
        throw .corrupt(
          "change \(revision) has an unknown actor source \(int64(at: 28))",
          context: "`\(sql)` on \(path)")
      }
      actor = stored
    case (let uid?, let gid?, let pid?):
      guard let uid = UInt32(exactly: uid), let gid = UInt32(exactly: gid),
        let pid = Int32(exactly: pid)
      else {
        throw .corrupt(
          "change \(revision) has an actor out of range", context: "`\(sql)` on \(path)")
      }
      actor = .peer(uid: uid, gid: gid, pid: pid)
    default:
      throw .corrupt("change \(revision) has a partial actor", context: "`\(sql)` on \(path)")
    }
    var user: UInt32?
    if let uid = optionalInt64(at: 25) {
      guard let uid = UInt32(exactly: uid) else {
        throw .corrupt("change \(revision) has a user out of range", context: "`\(sql)` on \(path)")
      }
      user = uid
    }
    var state = try readState(from: 7, invalidFrom: 21, row: "change \(revision)")
    state.valueFixed = bool(at: 26)
    try readDeadlines(into: &state, from: 29, byAdministrator: 39)
    var previous = try readState(from: 14, invalidFrom: 23, row: "change \(revision)")
    previous.valueFixed = bool(at: 27)
    try readDeadlines(into: &previous, from: 34, byAdministrator: 40)
    return Change(
      revision: revision, time: int64(at: 3), key: text(at: 1), cause: cause, actor: actor,
      state: state, previous: previous, user: user)
  }

  /// Reads the seven State columns starting at column `first`.
  private func readState(
    from first: Int32, invalidFrom: Int32, row: @autoclosure () -> String
  ) throws(SQLiteError) -> SwitchState {
    SwitchState(
      checked: bool(at: first), readOnly: bool(at: first + 1),
      readOnlyReason: optionalText(at: first + 2),
      heldBy: try optionalText(at: first + 3).map { (raw) throws(SQLiteError) in
        try decode(Holder.init(storageName:), raw, row: row(), column: "held_by")
      },
      disabled: bool(at: first + 4), disabledReason: optionalText(at: first + 5),
      disabledBy: try optionalText(at: first + 6).map { (raw) throws(SQLiteError) in
        try decode(Holder.init(storageName:), raw, row: row(), column: "disabled_by")
      },
      invalid: bool(at: invalidFrom), invalidReason: optionalText(at: invalidFrom + 1))
  }

  /// A stored name that this build does not know: the file was damaged or edited by hand
  /// (a newer switchd that added names would have raised `user_version`).
  /// `row` names the row for the error only: built per row read, its text would cost
  /// more than the decoding.
  private func decode<T>(
    _ parse: (String) -> T?, _ raw: String, row: @autoclosure () -> String, column: String
  ) throws(SQLiteError) -> T {
    guard let value = parse(raw) else {
      throw .corrupt(
        "\(row()) has an unknown \(column) '\(raw)'", context: "`\(sql)` on \(path)")
    }
    return value
  }
}
