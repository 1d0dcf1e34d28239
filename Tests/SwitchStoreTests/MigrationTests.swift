import CSQLite
import SwitchCore
import SwitchTestSupport
import Testing

@testable import SwitchStore

/// Each named migration from the schema before it (schema 1 and 2: KeyHistoryTests,
/// InvalidColumnsMigrationTests; a new file runs them all: OpeningTests).
@Suite struct MigrationTests {
  /// A file at `version`, made by running the named migrations up to it.
  func database(at path: String, version: Int, extraSQL: String = "") throws -> SQLiteConnection {
    let old = try SQLiteConnection(path: path, flags: SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE)
    for migration in Schema.migrations.prefix(version) { try old.execute(migration.sql) }
    if !extraSQL.isEmpty { try old.execute(extraSQL) }
    try old.execute("PRAGMA user_version = \(version)")
    return old
  }

  @Test func theMigrationsAreNamedOncePerFeature() {
    let names = Schema.migrations.map(\.name)
    #expect(names.count == Int(Schema.currentVersion))
    #expect(Set(names).count == names.count)
    #expect(names.allSatisfy { !$0.isEmpty })
  }

  /// Schema 3 (apply commands) to 4 (per-user values): the old rows stay and users can
  /// have values.
  @Test func schemaThreeGainsPerUserValues() throws {
    try withTemporaryDirectory { directory in
      let path = directory + "/s.db"
      let old = try database(
        at: path, version: 3,
        extraSQL: """
          INSERT INTO changes(revision, key, cause, time, s_checked, s_read_only, s_disabled,
            p_checked, p_read_only, p_disabled, s_invalid, s_invalid_reason)
          VALUES (1, 'wifi', 'reconcile', 100, 1, 0, 0, 1, 0, 0, 1, 'no radio');
          """)
      old.close()
      let store = try SwitchStore(path: path)
      defer { store.close() }
      #expect(try Schema.version(of: store.connection) == Schema.currentVersion)
      #expect(try store.loadSwitches().first?.state.invalidReason == "no radio")
      let value = Change(
        revision: 2, time: 200, key: "email", cause: .set,
        actor: .peer(uid: 1000, gid: 1000, pid: 1), state: SwitchState(checked: false),
        previous: SwitchState(checked: true), user: 1000)
      try store.commit([value])
      try store.checkpointFromLog()
      #expect(try store.loadUserValues()["email"]?[1000]?.checked == false)
    }
  }

  /// Builds before the migrations were named shipped apply commands and per-user values
  /// as one migration 3: such a file already has what migration 4 adds.
  @Test func aVersionThreeFileWithPerUserValuesAlreadyIsOnlyMovedOn() throws {
    try withTemporaryDirectory { directory in
      let path = directory + "/s.db"
      let old = try database(
        at: path, version: 3,
        extraSQL: Schema.userValues.sql + "\n"
          + "INSERT INTO user_values(key, user, checked, revision, changed_at) "
          + "VALUES ('email', 1000, 0, 1, 100);")
      old.close()
      let store = try SwitchStore(path: path)
      defer { store.close() }
      #expect(try Schema.version(of: store.connection) == Schema.currentVersion)
      #expect(try store.loadUserValues()["email"]?[1000]?.checked == false)
    }
  }
}
