import CSQLite
import SwitchCore

// Reading: loading the switches and values at start, the log for history and replays.
extension SwitchStore {
  /// Every stored switch (declared or not) as of the newest change, sorted by key: the rows,
  /// then the changes after the checkpoint applied to them. A declared long key is
  /// `keys`' String (`KeyInterner`), in the records and in the log's chains.
  public func loadSwitches(sharing keys: KeyInterner = KeyInterner()) throws(StoreError)
    -> [SwitchRecord]
  {
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
      var loaded: [SwitchRecord] = []
      loaded.reserveCapacity(records.count)
      for var record in records.values {
        record.hashedKey = keys.shared(record.hashedKey)
        // The writer's chains start where the file ends (see `chains`).
        let chain = ChainKey(hashedKey: record.hashedKey, user: nil)
        if chains[chain] == nil {
          chains[chain] = openedChain(newest: record.revision)
        }
        loaded.append(record)
      }
      tailChainsLoaded.switches = true
      return loaded.sorted { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }
    }
  }

  /// Every user's own value of every key, as of the newest change: the rows, then the
  /// changes after the checkpoint applied to them. A declared long key is `keys`' String.
  public func loadUserValues(sharing keys: KeyInterner = KeyInterner()) throws(StoreError)
    -> UserValues
  {
    try loadUserValuesAndDeadlines(sharing: keys).values
  }

  /// `loadUserValues`, and which of the values may have deadlines (a timed value or a tried
  /// change; the value loaded says): a superset of those that have one, since a newer value
  /// of the log's tail may have replaced a row's. So whoever arms their timers need not read
  /// a million values to find a few.
  public func loadUserValuesAndDeadlines(sharing keys: KeyInterner = KeyInterner())
    throws(StoreError) -> (values: UserValues, withDeadlines: [(key: HashedKey, user: UInt32)])
  {
    try run { () throws(SQLiteError) in
      var values: UserValues = [:]
      var withDeadlines: [(key: HashedKey, user: UInt32)] = []
      let statement = statements.loadUserValues
      defer { statement.reset() }
      // Rows come in primary-key order, a key's users together: each key is
      // made a String and hashed once, its bytes compared on the rows after
      // it, and its table reserved at the size of the key's before it (with
      // a million values, a String per row, and tables grown by doubling,
      // were half the start-up's instructions, callgrind).
      var key: String?
      var keyBytes: [UInt8] = []
      var users = UserValueTable()
      while try statement.step() {
        if key == nil || !statement.text(at: 0, equals: keyBytes) {
          if let key { values[key] = users }
          let next = statement.text(at: 0)
          keyBytes = Array(next.utf8)
          key = keys.shared(next)
          let size = users.count
          users = [:]
          users.reserveCapacity(size)
        }
        let (user, value) = try statement.readUserValue()
        users[user] = value
      }
      if let key { values[key] = users }
      let deadlines = statements.loadUserDeadlines
      defer { deadlines.reset() }
      while try deadlines.step() {
        let key = HashedKey(keys.shared(deadlines.text(at: 0)))
        let user = try deadlines.readUser()
        // The writer is the file's only writer (`LockFile`), not yet writing: the row is there.
        guard let value = values[key]?[user] else { continue }
        values[key]?[user] = try deadlines.readUserDeadlines(into: value)
        withDeadlines.append((key, user))
      }
      // The chains of the tail's users (each newest last); any other user's chain is looked
      // up on its first commit (`startChain`), from its row: there may be millions.
      var tailChains: [ChainKey: Int64] = [:]
      try forEachChangeAfterCheckpoint { change in
        if let user = change.user {
          let key = keys.shared(change.hashedKey)
          let value = change.userValue
          values[key, default: [:]][user] = value
          if value.hasDeadlines { withDeadlines.append((key, user)) }
          tailChains[ChainKey(hashedKey: key, user: user)] = change.revision
        }
      }
      for (chain, newest) in tailChains where chains[chain] == nil {
        chains[chain] = openedChain(newest: newest)
      }
      tailChainsLoaded.users = true
      return (values, withDeadlines)
    }
  }

  func forEachChangeAfterCheckpoint(_ body: (Change) -> Void) throws(SQLiteError) {
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
  func history(of key: String, newest: Int64, before: Int64?, limit: Int)
    throws(SQLiteError) -> [Change]
  {
    var start: Int64?
    if let before { start = try markAtOrAbove(key: key, revision: before) }
    if start == nil && newest > 0 { start = newest }
    return try walkChain(from: start, before: before, limit: limit)
  }

  /// The changes of one chain (`key_previous`) from `start` down, below `before`, at most `limit`.
  func walkChain(from start: Int64?, before: Int64?, limit: Int) throws(SQLiteError)
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

  /// What `user` had set of `key` just after revision `at`, with its timers (nil: nothing),
  /// given their current value `head` (the newest in their chain). Walks their chain down
  /// from the head to `at`: a row after `at` that is the oldest retained tells the value
  /// before it.
  public func userValue(
    key: String, user: UInt32, at revision: Int64, head: UserValue?
  ) throws(StoreError) -> SeenOwnValue? {
    guard let head else { return nil }
    if head.revision <= revision { return SeenOwnValue(head) }
    return try run { () throws(SQLiteError) in
      let found = try chainAt(revision, from: head.revision)
      if let atOrBefore = found.atOrBefore { return SeenOwnValue(userState: atOrBefore.state) }
      // Their first change after `at`: what it replaced is what they read at `at` (the
      // default, when they had never set it, which is what nil means to a viewer too).
      guard let oldestAfter = found.oldestAfter, found.olderPruned else { return nil }
      return SeenOwnValue(userState: oldestAfter.previous)
    }
  }

  /// The switch-level State of `key` just after revision `at` (a revision the log holds):
  /// its newest change at or before `at`, else what its oldest retained change after `at`
  /// replaced, else its row (no change of it is left in the log, or it never changed: the
  /// row, as of the checkpoint, is the State after its newest change, which is before
  /// `at`); nil for a key the store does not have. The walk starts at the key's mark just
  /// above `at` (`markSpacing` rows at most), else at its newest change.
  public func switchState(key: String, at revision: Int64) throws(StoreError) -> SwitchState? {
    try run { () throws(SQLiteError) in
      var start = try markAtOrAbove(key: key, revision: revision + 1)
      if start == nil {
        let newest = try newestRevision(of: ChainKey(key: key))
        if newest > 0 { start = newest }
      }
      if let start {
        let found = try chainAt(revision, from: start)
        if let state = found.atOrBefore?.state ?? found.oldestAfter?.previous { return state }
      }
      let row = statements.switchRow
      defer { row.reset() }
      try row.bind(key, at: 1)
      return try row.step() ? try row.readSwitch().state : nil
    }
  }

  /// Walks a chain down from `start` to the first change at or before `revision`, or to
  /// where it ends (its first change, or the first row pruned: `olderPruned`).
  private func chainAt(_ revision: Int64, from start: Int64) throws(SQLiteError) -> (
    atOrBefore: Change?, oldestAfter: Change?, olderPruned: Bool
  ) {
    var next: Int64? = start
    var oldestAfter: Change?
    let statement = statements.changeAndPrevious
    while let current = next {
      defer { statement.reset() }
      try statement.bind(current, at: 1)
      guard try statement.step() else { break }
      let change = try statement.readChange()
      if change.revision <= revision { return (change, oldestAfter, false) }
      oldestAfter = change
      next = statement.optionalInt64(at: StoreStatements.SQL.keyPreviousColumn)
    }
    return (nil, oldestAfter, next != nil)
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
}
