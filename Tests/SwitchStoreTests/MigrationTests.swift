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

  /// The store opened on `path` once `old` (the file at its old version) is
  /// closed: migrated to the current version.
  func migrated(_ old: SQLiteConnection, at path: String) throws -> SwitchStore {
    old.close()
    let store = try SwitchStore(path: path)
    #expect(try Schema.version(of: store.connection) == Schema.currentVersion)
    return store
  }

  /// A file at `version` with `sql` run on it, then opened (so migrated to
  /// the current version) for `body`, and closed.
  func migrating(
    from version: Int, _ sql: String, _ body: (SwitchStore) throws -> Void
  ) throws {
    try withTemporaryDirectory { directory in
      let path = directory + "/s.db"
      let store = try migrated(try database(at: path, version: version, extraSQL: sql), at: path)
      defer { store.close() }
      try body(store)
    }
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
      let store = try migrated(old, at: path)
      defer { store.close() }
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
      let store = try migrated(old, at: path)
      defer { store.close() }
      #expect(try store.loadUserValues()["email"]?[1000]?.checked == false)
    }
  }

  /// Schema 6 to 7 (the compact log): every change reads back as it was written, the held
  /// ones with their reasons, deadlines and fixed values; only they keep a details row;
  /// the chain, the checkpoint and pruning go on from the migrated log.
  @Test func schemaSixMovesTheRareColumnsToDetails() throws {
    try withTemporaryDirectory { directory in
      let path = directory + "/s.db"
      let old = try database(
        at: path, version: 6,
        extraSQL: """
          INSERT INTO switches(key, checked, read_only, disabled, revision, changed_at)
            VALUES ('wifi', 1, 0, 0, 0, NULL), ('email', 1, 0, 0, 0, NULL);
          INSERT INTO changes(revision, key, cause, time, actor_uid, actor_gid, actor_pid,
            s_checked, s_read_only, s_disabled, p_checked, p_read_only, p_disabled,
            key_previous)
          VALUES (1, 'wifi', 'toggle', 100, 1000, 1000, 7, 0, 0, 0, 1, 0, 0, NULL);
          INSERT INTO changes(revision, key, cause, time, s_checked, s_read_only,
            s_read_only_reason, s_held_by, s_disabled, p_checked, p_read_only, p_disabled,
            s_value_fixed, s_read_only_until, key_previous, actor_source)
          VALUES (2, 'email', 'lock', 200, 1, 1, 'exam', 'admin', 0, 1, 0, 0, 1, 900,
            NULL, NULL);
          INSERT INTO changes(revision, key, cause, time, s_checked, s_read_only, s_disabled,
            s_disabled_reason, s_disabled_by, p_checked, p_read_only, p_disabled,
            s_invalid, s_invalid_reason, key_previous, actor_source)
          VALUES (3, 'wifi', 'dependency', 300, 0, 0, 1, 'Airplane mode is on',
            'dependency', 0, 0, 0, 1, 'no radio', 1, 'system');
          INSERT INTO changes(revision, key, cause, time, user, s_checked, s_read_only,
            s_disabled, p_checked, p_read_only, p_disabled, s_expires_at, key_previous)
          VALUES (4, 'email', 'set', 400, 1000, 0, 0, 0, 1, 0, 0, 5000, NULL);
          UPDATE meta SET value = 4 WHERE name = 'revision';
          """)
      let store = try migrated(old, at: path)
      defer { store.close() }
      let changes = try store.changes(after: 0, upTo: 4, limit: 10)
      #expect(changes.map(\.revision) == [1, 2, 3, 4])
      #expect(changes[0].actor == .peer(uid: 1000, gid: 1000, pid: 7))
      #expect(changes[0].state == SwitchState(checked: false))
      #expect(
        changes[1].state
          == SwitchState(
            checked: true, readOnly: true, readOnlyReason: "exam", heldBy: .admin,
            valueFixed: true, readOnlyUntil: 900))
      #expect(changes[2].state.disabledBy == .dependency)
      #expect(changes[2].state.disabledReason == "Airplane mode is on")
      #expect(changes[2].state.invalidReason == "no radio")
      #expect(changes[2].previous == SwitchState(checked: false))
      #expect(changes[3].user == 1000)
      #expect(changes[3].state.expiresAt == 5000)
      #expect(
        try store.connection.textRows("SELECT revision FROM change_details ORDER BY revision")
          == ["2", "3", "4"])
      // Migration 7's 12 columns, 9 after migration 8 (`schemaSevenPacksTheLog`),
      // 8 after migration 9 (`schemaEightPacksTheActorIDs`).
      #expect(
        try store.connection.textRows("SELECT count(*) FROM pragma_table_info('changes')") == ["8"]
      )
      #expect(try store.history(key: "wifi", before: nil, limit: 10).map(\.revision) == [3, 1])
      try store.commit([sampleChange(5, key: "wifi", checked: true)])
      #expect(try store.history(key: "wifi", before: nil, limit: 10).map(\.revision) == [5, 3, 1])
      try store.checkpointFromLog()
      #expect(try store.loadSwitches().first { $0.key == "email" }?.state.readOnlyReason == "exam")
      // Pruning takes the details of the changes it deletes, and only those.
      #expect(try store.prune(keep: 2) == 3)
      #expect(try store.connection.textRows("SELECT revision FROM change_details") == ["4"])
    }
  }

  /// Schema 7 to 8 (the packed log): every cause, each actor (ids, a
  /// policy file, the system, a deadline) and each pair of values reads back
  /// as it was written, and the chain goes on from the migrated log.
  @Test func schemaSevenPacksTheLog() throws {
    try withTemporaryDirectory { directory in
      let path = directory + "/s.db"
      var rows: [String] = []
      var expected: [(cause: Cause, actor: Actor, checked: Bool, previous: Bool)] = []
      for (index, cause) in Cause.allCases.enumerated() {
        let revision = index + 1
        let checked = index % 2 == 0
        let previous = index % 4 < 2
        let (ids, source, actor): (String, String, Actor) =
          switch index % 4 {
          case 0:
            ("1000, 100, \(revision)", "NULL", .peer(uid: 1000, gid: 100, pid: Int32(revision)))
          case 1: ("NULL, NULL, NULL", "NULL", Actor.configuration(cause))
          case 2: ("NULL, NULL, NULL", "'system'", .system)
          default: ("NULL, NULL, NULL", "'timer'", .timer)
          }
        rows.append(
          "(\(revision), 'k\(index % 3)', '\(Self.storedName(cause))', \(revision * 10), \(ids), "
            + "\(source), NULL, \(checked ? 1 : 0), \(previous ? 1 : 0), NULL)")
        expected.append((cause, actor, checked, previous))
      }
      let old = try database(
        at: path, version: 7,
        extraSQL: """
          INSERT INTO changes(revision, key, cause, time, actor_uid, actor_gid, actor_pid,
            actor_source, user, s_checked, p_checked, key_previous)
          VALUES \(rows.joined(separator: ", "));
          UPDATE meta SET value = \(rows.count) WHERE name = 'revision';
          """)
      let store = try migrated(old, at: path)
      defer { store.close() }
      let changes = try store.changes(after: 0, upTo: Int64(rows.count), limit: 100)
      #expect(changes.count == expected.count)
      for (change, want) in zip(changes, expected) {
        #expect(change.cause == want.cause)
        #expect(change.actor == want.actor)
        #expect(change.state == SwitchState(checked: want.checked))
        #expect(change.previous == SwitchState(checked: want.previous))
        #expect(change.time == change.revision * 10)
      }
      let next = Int64(rows.count + 1)
      try store.commit([sampleChange(next, key: "k0", checked: true)])
      #expect(try store.changes(after: next - 1, upTo: next, limit: 1).first?.state.checked == true)
    }
  }

  /// Schema 8 to 9 (uid and gid in one column): ids at both ends of 32
  /// bits, root's zeros and rows without ids read back as they were
  /// written, a key's chain goes on, and a new row's ids are packed.
  @Test func schemaEightPacksTheActorIDs() throws {
    try withTemporaryDirectory { directory in
      let path = directory + "/s.db"
      let top = Int64(UInt32.max)
      let what = ChangeWhat.of(cause: .set, source: 0, checked: true, previousChecked: false)
      let system = ChangeWhat.of(cause: .drift, source: 1, checked: false, previousChecked: true)
      let old = try database(
        at: path, version: 8,
        extraSQL: """
          INSERT INTO changes(revision, key, time, what, actor_uid, actor_gid, actor_pid, user,
            key_previous)
          VALUES (1, 'wifi', 10, \(what), 1000, \(top), 77, NULL, NULL),
            (2, 'wifi', 20, \(what), \(top), 0, 4194304, NULL, 1),
            (3, 'email', 30, \(what), 0, 0, 1, 1000, NULL),
            (4, 'wifi', 40, \(system), NULL, NULL, NULL, NULL, 2);
          UPDATE meta SET value = 4 WHERE name = 'revision';
          """)
      let store = try migrated(old, at: path)
      defer { store.close() }
      let changes = try store.changes(after: 0, upTo: 4, limit: 10)
      #expect(
        changes.map(\.actor) == [
          .peer(uid: 1000, gid: UInt32.max, pid: 77),
          .peer(uid: UInt32.max, gid: 0, pid: 4_194_304),
          .peer(uid: 0, gid: 0, pid: 1), .system,
        ])
      #expect(changes[2].user == 1000)
      #expect(changes.map(\.time) == [10, 20, 30, 40])
      #expect(try store.history(key: "wifi", before: nil, limit: 10).map(\.revision) == [4, 2, 1])
      let next = sampleChange(5, key: "wifi", actor: .peer(uid: 4_000_000_000, gid: 5, pid: 9))
      try store.commit([next])
      #expect(try store.changes(after: 4, upTo: 5, limit: 1).first?.actor == next.actor)
      #expect(
        try store.history(key: "wifi", before: nil, limit: 10).map(\.revision) == [5, 4, 2, 1])
      #expect(
        try store.connection.textRows("SELECT actor FROM changes WHERE revision = 5")
          == ["\(ActorIDs.of(uid: 4_000_000_000, gid: 5))"])
    }
  }

  /// Schema 9 to 10 (keys by number): each key numbered once, every row,
  /// each key's chain, the checkpoint of switches and of users' values
  /// read as before, and a new key gets a number of its own.
  @Test func schemaNineNumbersTheKeys() throws {
    try withTemporaryDirectory { directory in
      let path = directory + "/s.db"
      let on = ChangeWhat.of(cause: .set, source: 0, checked: true, previousChecked: false)
      let off = ChangeWhat.of(cause: .set, source: 0, checked: false, previousChecked: true)
      let actor = ActorIDs.of(uid: 1000, gid: 1000)
      let old = try database(
        at: path, version: 9,
        extraSQL: """
          INSERT INTO changes(revision, key, time, what, actor, actor_pid, user, key_previous)
          VALUES (1, 'wifi', 10, \(on), \(actor), 7, NULL, NULL),
            (2, 'email', 20, \(off), \(actor), 7, 1000, NULL),
            (3, 'wifi', 30, \(off), \(actor), 7, NULL, 1),
            (4, 'bluetooth', 40, \(on), \(actor), 7, NULL, NULL);
          UPDATE meta SET value = 4 WHERE name = 'revision';
          """)
      let store = try migrated(old, at: path)
      defer { store.close() }
      #expect(
        try store.connection.textRows("SELECT key FROM keys ORDER BY id")
          == ["bluetooth", "email", "wifi"])
      let changes = try store.changes(after: 0, upTo: 4, limit: 10)
      #expect(changes.map(\.key) == ["wifi", "email", "wifi", "bluetooth"])
      #expect(changes.map(\.state.checked) == [true, false, false, true])
      #expect(try store.history(key: "wifi", before: nil, limit: 10).map(\.revision) == [3, 1])
      try store.commit([sampleChange(5, key: "wifi", checked: true), sampleChange(6, key: "nfc")])
      #expect(try store.history(key: "wifi", before: nil, limit: 10).map(\.revision) == [5, 3, 1])
      #expect(try store.connection.textRows("SELECT id FROM keys WHERE key = 'nfc'") == ["4"])
      try store.checkpointFromLog()
      let switches = try store.loadSwitches()
      #expect(switches.map(\.key) == ["bluetooth", "nfc", "wifi"])
      #expect(switches.map(\.revision) == [4, 6, 5])
      #expect(try store.loadUserValues()["email"]?[1000]?.checked == false)
    }
  }

  /// Schema 10 to 11 (switch rows by key number): every switch reads back
  /// as it was, its key numbered (a key the log named keeps its number), and
  /// only the switches that hold more than `checked` have a details row.
  @Test func schemaTenNumbersTheSwitchRows() throws {
    try withTemporaryDirectory { directory in
      let path = directory + "/s.db"
      let old = try database(
        at: path, version: 10,
        extraSQL: """
          INSERT INTO keys(key) VALUES ('wifi');
          INSERT INTO switches(key, checked, read_only, read_only_reason, held_by, disabled,
            disabled_reason, disabled_by, revision, changed_at, invalid, invalid_reason,
            value_fixed, expires_at, read_only_until, disabled_until)
          VALUES ('wifi', 1, 0, NULL, NULL, 0, NULL, NULL, 4, 400, 0, NULL, 0, NULL, NULL, NULL),
            ('email', 0, 1, 'exam', 'admin', 0, NULL, NULL, 2, 200, 0, NULL, 1, NULL, 900, NULL),
            ('nfc', 0, 0, NULL, NULL, 1, 'Airplane mode is on', 'dependency', 0, NULL, 1,
              'no radio', 0, 5000, NULL, 7000);
          UPDATE switches SET pending_until = 9000, pending = '1000 1000 7 9000 1 boot-a'
            WHERE key = 'email';
          UPDATE meta SET value = 4 WHERE name IN ('revision', 'checkpoint');
          """)
      let store = try migrated(old, at: path)
      defer { store.close() }
      #expect(
        try store.connection.textRows("SELECT key FROM keys ORDER BY id")
          == ["wifi", "email", "nfc"])
      #expect(
        try store.loadSwitches()
          == [
            SwitchRecord(
              key: "email",
              state: SwitchState(
                checked: false, readOnly: true, readOnlyReason: "exam", heldBy: .admin,
                valueFixed: true, readOnlyUntil: 900, pendingUntil: 9000,
                pending: TriedChange(
                  maker: .peer(uid: 1000, gid: 1000, pid: 7), makerIsAdministrator: false,
                  bootDeadline: 9000,
                  bootID: "boot-a", revertOnDisconnect: true)),
              revision: 2, changedAt: 200),
            SwitchRecord(
              key: "nfc",
              state: SwitchState(
                checked: false, disabled: true, disabledReason: "Airplane mode is on",
                disabledBy: .dependency, invalid: true, invalidReason: "no radio",
                expiresAt: 5000, disabledUntil: 7000)),
            SwitchRecord(
              key: "wifi", state: SwitchState(checked: true), revision: 4, changedAt: 400),
          ])
      #expect(
        try store.connection.textRows(
          "SELECT key_id || ' ' || revision FROM switch_details ORDER BY key_id")
          == ["2 2", "3 0"])
      #expect(
        try store.connection.textRows("SELECT name FROM pragma_table_info('switches')")
          == ["key_id", "checked", "revision", "changed_at"])
    }
  }

  /// A cause this build does not know is not guessed at: the migration
  /// fails, and the file stays as it was, at version 7.
  @Test func anUnknownCauseStopsTheMigration() throws {
    try withTemporaryDirectory { directory in
      let path = directory + "/s.db"
      let old = try database(
        at: path, version: 7,
        extraSQL: """
          INSERT INTO changes(revision, key, cause, time, s_checked, p_checked)
          VALUES (1, 'wifi', 'teleport', 100, 1, 0);
          """)
      old.close()
      #expect(throws: StoreError.self) { try SwitchStore(path: path).close() }
      let reopened = try SQLiteConnection(path: path, flags: SQLITE_OPEN_READONLY)
      defer { reopened.close() }
      #expect(try Schema.version(of: reopened) == 7)
      #expect(try reopened.textRows("SELECT cause FROM changes") == ["teleport"])
    }
  }

  /// A file of an older version whose schema text lacks a column: damage,
  /// found whether a migration's statement or this build's names it, and
  /// the file stays at its version (the migrations are rolled back).
  @Test(arguments: [
    // Migration 7 moves the rare columns to details: it reads `s_invalid_reason`.
    (version: 6, table: "changes", column: "s_invalid_reason"),
    // Migration 13 adds an index only: this build's statements read it.
    (version: 12, table: "change_details", column: "p_read_only"),
  ])
  func anOlderFileWhoseSchemaLacksAColumnIsRefusedAsDamagedUnmigrated(
    version: Int, table: String, column: String
  ) throws {
    try withTemporaryDirectory { directory in
      let path = directory + "/s.db"
      let old = try database(
        at: path, version: version,
        extraSQL: """
          PRAGMA writable_schema = ON;
          UPDATE sqlite_schema SET sql = replace(sql, '\(column) ', 'renamed_column ')
            WHERE name = '\(table)';
          """)
      old.close()
      let error = storeError { () throws(StoreError) in try SwitchStore(path: path).close() }
      guard case .damaged(_, let detail)? = error else {
        Issue.record("expected .damaged, got \(String(describing: error))")
        return
      }
      #expect(detail.contains("version \(version)"), "\(detail)")
      #expect(detail.contains(column), "\(detail)")
      let reopened = try SQLiteConnection(path: path, flags: SQLITE_OPEN_READONLY)
      defer { reopened.close() }
      #expect(try Schema.version(of: reopened) == Int32(version))
    }
  }

  /// A missing column is damage in a file that had a schema, and switchd's
  /// own fault in a new one (version 0): there it is reported as it came,
  /// without advice to delete the file.
  @Test func aMissingColumnIsDamageOnlyInAFileThatHadASchema() {
    let missing = SQLiteError(
      extendedCode: SQLITE_ERROR, message: "no such column: s_checked", context: "preparing")
    guard
      case .damaged(let path, let detail) = SwitchStore.schemaFault(
        missing, path: "/x/s.db", version: 3)
    else {
      Issue.record("a file of version 3 lacking a column is not damaged")
      return
    }
    #expect(path == "/x/s.db" && detail.contains("version 3"), "\(detail)")
    if case .damaged = SwitchStore.schemaFault(missing, path: "/x/s.db", version: 0) {
      Issue.record("a new file's failing statement was called damage")
    }
    let busy = SQLiteError(extendedCode: SQLITE_BUSY, message: "database is locked", context: "")
    if case .damaged = SwitchStore.schemaFault(busy, path: "/x/s.db", version: 3) {
      Issue.record("a busy file was called damage")
    }
  }

  /// How schema 7 and earlier name each cause (migration 8 maps these).
  static func storedName(_ cause: Cause) -> String {
    switch cause {
    case .set: "set"
    case .toggle: "toggle"
    case .reset: "reset"
    case .lock: "lock"
    case .unlock: "unlock"
    case .disable: "disable"
    case .enable: "enable"
    case .policy: "policy"
    case .dependency: "dependency"
    case .apply: "apply"
    case .reconcile: "reconcile"
    case .external: "external"
    case .drift: "drift"
    case .expiry: "expiry"
    case .confirm: "confirm"
    case .revert: "revert"
    }
  }

  /// Schema 11 to 12 (who made a timed value): a timer, a tried change and
  /// a user's timer of before read as a non-administrator's (the hold
  /// wins, as it did), in the rows and in the log; the columns are there.
  @Test func schemaElevenKeepsItsTimersAsANonAdministrators() throws {
    try migrating(
      from: 11,
      """
      INSERT INTO keys(key) VALUES ('wifi'), ('email');
      INSERT INTO switches(key_id, checked, revision, changed_at) VALUES (1, 0, 2, 200);
      INSERT INTO switch_details(key_id, revision, expires_at, pending_until, pending)
        VALUES (1, 2, 5000, 9000, '1000 1000 7 9000 1 boot-a');
      INSERT INTO changes(revision, key_id, time, what, actor, actor_pid, user, key_previous)
        VALUES (3, 2, 300, 1 | (1 << 13), 1000 | (1000 << 32), 7, 1000, NULL);
      INSERT INTO change_details(revision, s_expires_at) VALUES (3, 6000);
      INSERT INTO user_values(key, user, checked, revision, changed_at, expires_at)
        VALUES ('email', 1001, 0, 1, 100, 7000);
      UPDATE meta SET value = 3 WHERE name = 'revision';
      UPDATE meta SET value = 2 WHERE name = 'checkpoint';
      """
    ) { store in
      let wifi = try #require(try store.loadSwitches().first { $0.key == "wifi" })
      #expect(wifi.state.expiresAt == 5000 && !wifi.state.expiryByAdministrator)
      #expect(wifi.state.pending?.makerIsAdministrator == false)
      #expect(wifi.state.pending?.bootID == "boot-a")
      let change = try #require(try store.changes(after: 2, upTo: 3, limit: 1).first)
      #expect(change.state.expiresAt == 6000 && !change.state.expiryByAdministrator)
      let values = try store.loadUserValues()["email"]
      #expect(values?[1001]?.expiresAt == 7000 && values?[1001]?.expiryByAdministrator == false)
      #expect(values?[1000]?.expiresAt == 6000 && values?[1000]?.expiryByAdministrator == false)
      for (table, column) in [
        ("switch_details", "expiry_by_admin"), ("change_details", "s_expiry_by_admin"),
        ("change_details", "p_expiry_by_admin"), ("user_values", "expiry_by_admin"),
        ("user_values", "pending_until"), ("user_values", "pending"),
      ] {
        #expect(
          try store.connection.textRows(
            "SELECT count(*) FROM pragma_table_info('\(table)') WHERE name = '\(column)'")
            == ["1"], "\(table).\(column)")
      }
    }
  }
}
