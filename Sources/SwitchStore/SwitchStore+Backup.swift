extension SwitchStore {
  /// Writes a consistent copy of the whole database to `path` with `VACUUM INTO`: one read
  /// transaction, so the copy is the database as of one commit however many commits land
  /// meanwhile, and (WAL) the writer is never blocked by it. Works on a `.readOnly` store.
  ///
  /// `path` must not exist or be an empty file; the copy is a plain rollback-journal file of
  /// the same schema that a store opens as any other. SQLite does not sync it: whoever keeps
  /// the copy syncs it.
  public func backup(into path: String) throws(StoreError) {
    do throws(SQLiteError) {
      // A reader is query-only (SwitchStore.vfs), which VACUUM INTO's
      // writing of the copy would trip over: lifted for the copy alone.
      if mode == .readOnly {
        try connection.execute("PRAGMA query_only=0")
      }
      defer {
        if mode == .readOnly { try? connection.execute("PRAGMA query_only=1") }
      }
      let statement = try connection.prepareOnce("VACUUM INTO ?1")
      defer { statement.reset() }
      try statement.bind(path, at: 1)
      try statement.run()
    } catch {
      throw StoreError(error, path: self.path)
    }
  }
}
