/// The database schema as named forward migrations, one per feature, versioned with
/// `PRAGMA user_version`.
///
/// `migrations[n]` takes a database from version n to n + 1; a new database (version 0) runs
/// them all. Never edit a migration that has shipped: append a new one. Each is its SQL
/// written out whole, a table's columns repeated from the one before it: text shared
/// between two migrations would let an edit of one change what the other did. A database
/// whose version is above `currentVersion` was written by a newer switchd and is refused.
struct Migration: Sendable {
  /// What the migration brings, for a person reading the list.
  let name: String
  let sql: String
  /// A query that finds the migration already in the file (a count above 0), for the one
  /// migration that older builds shipped inside another (see `userValues`).
  var foundBy: String? = nil
}

enum Schema {
  static let migrations: [Migration] = [
    changeLog, keyChains, applyCommands, userValues, systemActors, deadlines, compactLog,
    packedLog, packedActor, keyNumbers, numberedSwitches, undoMakers, userDeadlines,
  ]

  /// 1: switches, the change log, and the global revision.
  static let changeLog = Migration(
    name: "switches and their change log",
    sql: """
      CREATE TABLE switches (
        key TEXT PRIMARY KEY,
        checked INTEGER NOT NULL,
        read_only INTEGER NOT NULL,
        read_only_reason TEXT,
        held_by TEXT,
        disabled INTEGER NOT NULL,
        disabled_reason TEXT,
        disabled_by TEXT,
        revision INTEGER NOT NULL,
        changed_at INTEGER
      ) WITHOUT ROWID;
      CREATE TABLE changes (
        revision INTEGER PRIMARY KEY,
        key TEXT NOT NULL,
        cause TEXT NOT NULL,
        time INTEGER NOT NULL,
        actor_uid INTEGER,
        actor_gid INTEGER,
        actor_pid INTEGER,
        s_checked INTEGER NOT NULL,
        s_read_only INTEGER NOT NULL,
        s_read_only_reason TEXT,
        s_held_by TEXT,
        s_disabled INTEGER NOT NULL,
        s_disabled_reason TEXT,
        s_disabled_by TEXT,
        p_checked INTEGER NOT NULL,
        p_read_only INTEGER NOT NULL,
        p_read_only_reason TEXT,
        p_held_by TEXT,
        p_disabled INTEGER NOT NULL,
        p_disabled_reason TEXT,
        p_disabled_by TEXT
      );
      CREATE INDEX changes_by_key ON changes(key, revision);
      -- The global revision lives here, not in max(changes.revision): pruning may empty the log.
      CREATE TABLE meta (name TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;
      INSERT INTO meta(name, value) VALUES ('revision', 0);
      """)

  /// 2: a commit appends to the log and nothing else. `changes_by_key` put one entry per key
  /// into a different page of the index, so a commit of writes to 8 keys wrote ~8 more pages
  /// to the WAL. Instead each log row points to the previous change of its key, and every
  /// 64th change of a key (and its first after each start) is entered in `key_marks`, a
  /// sparse index that bounds the walk for an arbitrary `before`. The switch rows are copied
  /// from the log now and then (`meta.checkpoint`: the revision they hold), not per commit.
  static let keyChains = Migration(
    name: "key chains and checkpointed switch rows",
    sql: """
      ALTER TABLE changes ADD COLUMN key_previous INTEGER;
      WITH chain AS (
        SELECT revision, lag(revision) OVER (PARTITION BY key ORDER BY revision) AS previous
        FROM changes
      )
      UPDATE changes SET key_previous = chain.previous FROM chain
      WHERE changes.revision = chain.revision;
      CREATE TABLE key_marks (
        key TEXT NOT NULL,
        revision INTEGER NOT NULL,
        PRIMARY KEY (key, revision)
      ) WITHOUT ROWID;
      INSERT INTO key_marks(key, revision)
        SELECT key, revision FROM (
          SELECT key, revision, row_number() OVER (PARTITION BY key ORDER BY revision) AS n
          FROM changes
        ) WHERE n % 64 = 1;
      DROP INDEX changes_by_key;
      INSERT INTO meta(name, value)
        SELECT 'checkpoint', max(value, coalesce((SELECT max(revision) FROM changes), 0))
        FROM meta WHERE name = 'revision';
      """)

  /// 3: apply commands and dependencies. `invalid`/`invalid_reason`: whether a switch's apply
  /// command could not make its value real, and why; kept in the switch rows and in both
  /// States of each logged change (rows and changes written before hold a valid switch). The
  /// log may now hold the causes 'apply', 'reconcile' and 'dependency', which an older switchd
  /// would read as damage: the version keeps it from opening the file.
  static let applyCommands = Migration(
    name: "apply commands: invalid and its reason",
    sql: """
      ALTER TABLE switches ADD COLUMN invalid INTEGER NOT NULL DEFAULT 0;
      ALTER TABLE switches ADD COLUMN invalid_reason TEXT;
      ALTER TABLE changes ADD COLUMN s_invalid INTEGER NOT NULL DEFAULT 0;
      ALTER TABLE changes ADD COLUMN s_invalid_reason TEXT;
      ALTER TABLE changes ADD COLUMN p_invalid INTEGER NOT NULL DEFAULT 0;
      ALTER TABLE changes ADD COLUMN p_invalid_reason TEXT;
      """)

  /// 4: per-user values of user-scope switches. A change of one user's value is a log row
  /// with its `user`; `key_previous` then chains the changes of that key and user, so a key's
  /// switch-level chain (user NULL) is unchanged and a user's chain is short. `user_values`
  /// holds each user's value as of `meta.checkpoint`, like `switches`. `value_fixed`: a hold
  /// fixes the value of a user-scope switch for every user.
  ///
  /// Builds before 2026-12 shipped this inside migration 3, so a version-3 file of theirs
  /// already has it: `foundBy` sees the column and the step only moves the version on.
  static let userValues = Migration(
    name: "per-user values",
    sql: """
      ALTER TABLE changes ADD COLUMN user INTEGER;
      ALTER TABLE changes ADD COLUMN s_value_fixed INTEGER NOT NULL DEFAULT 0;
      ALTER TABLE changes ADD COLUMN p_value_fixed INTEGER NOT NULL DEFAULT 0;
      ALTER TABLE switches ADD COLUMN value_fixed INTEGER NOT NULL DEFAULT 0;
      CREATE TABLE user_values (
        key TEXT NOT NULL,
        user INTEGER NOT NULL,
        checked INTEGER NOT NULL,
        revision INTEGER NOT NULL,
        changed_at INTEGER NOT NULL,
        PRIMARY KEY (key, user)
      ) WITHOUT ROWID;
      """,
    foundBy: "SELECT count(*) FROM pragma_table_info('changes') WHERE name = 'user'")

  /// 5: who made a change without ids. Null ids were told apart by the cause alone (a
  /// policy, switchd's reconcile); a change the system made (a value adopted, a drift, and
  /// the dependents that follow them, SEMANTICS.md rule 19) has causes a policy has too
  /// (`dependency`), so `actor_source` says `system` for it (NULL: by the cause, as before).
  static let systemActors = Migration(
    name: "the system as an actor",
    sql: """
      ALTER TABLE changes ADD COLUMN actor_source TEXT;
      """)

  /// 6: switches in time (SEMANTICS.md rules 20–22). A timed value's end, an
  /// administrator's hold's end and a tried change (`pending`: its maker and its deadline on
  /// the boot clock of its boot, `TriedChange.storageText`) are part of the State, so they are kept where the State is:
  /// in the switch rows and in both States of each logged change. Every deadline is data:
  /// a start finds the passed ones in the rows and carries them out. The log may now hold
  /// the causes 'expiry', 'confirm' and 'revert' and the actor source 'timer'.
  static let deadlines = Migration(
    name: "deadlines: timed values and holds",
    sql: """
      ALTER TABLE switches ADD COLUMN expires_at INTEGER;
      ALTER TABLE switches ADD COLUMN read_only_until INTEGER;
      ALTER TABLE switches ADD COLUMN disabled_until INTEGER;
      ALTER TABLE changes ADD COLUMN s_expires_at INTEGER;
      ALTER TABLE changes ADD COLUMN s_read_only_until INTEGER;
      ALTER TABLE changes ADD COLUMN s_disabled_until INTEGER;
      ALTER TABLE changes ADD COLUMN p_expires_at INTEGER;
      ALTER TABLE changes ADD COLUMN p_read_only_until INTEGER;
      ALTER TABLE changes ADD COLUMN p_disabled_until INTEGER;
      ALTER TABLE switches ADD COLUMN pending_until INTEGER;
      ALTER TABLE switches ADD COLUMN pending TEXT;
      ALTER TABLE changes ADD COLUMN s_pending_until INTEGER;
      ALTER TABLE changes ADD COLUMN s_pending TEXT;
      ALTER TABLE changes ADD COLUMN p_pending_until INTEGER;
      ALTER TABLE changes ADD COLUMN p_pending TEXT;
      ALTER TABLE user_values ADD COLUMN expires_at INTEGER;
      """)

  /// 7: a log row holds what nearly every change has, and the rest is kept apart. A
  /// toggle's row had 40 columns, 26 of them NULL or 0 (holds, reasons, deadlines), and
  /// SQLite spends an instruction sequence on each column of each row it inserts: ~7.6k
  /// instructions a toggle, a fifth of switchd's (issue 26, callgrind). `changes` keeps 12
  /// columns; a change with a hold, a reason, a deadline or a fixed value on either side
  /// also has a row in `change_details` with the same revision (`SQL.insertChangeDetails`),
  /// which a read joins (`StoreStatements.SQL.changeSource`); a missing one reads as
  /// the defaults, which is what it would hold.
  static let compactLog = Migration(
    name: "a compact change log, its rare columns in change_details",
    sql: """
      CREATE TABLE change_details (
        revision INTEGER PRIMARY KEY,
        s_read_only INTEGER NOT NULL DEFAULT 0,
        s_read_only_reason TEXT,
        s_held_by TEXT,
        s_disabled INTEGER NOT NULL DEFAULT 0,
        s_disabled_reason TEXT,
        s_disabled_by TEXT,
        p_read_only INTEGER NOT NULL DEFAULT 0,
        p_read_only_reason TEXT,
        p_held_by TEXT,
        p_disabled INTEGER NOT NULL DEFAULT 0,
        p_disabled_reason TEXT,
        p_disabled_by TEXT,
        s_invalid INTEGER NOT NULL DEFAULT 0,
        s_invalid_reason TEXT,
        p_invalid INTEGER NOT NULL DEFAULT 0,
        p_invalid_reason TEXT,
        s_value_fixed INTEGER NOT NULL DEFAULT 0,
        p_value_fixed INTEGER NOT NULL DEFAULT 0,
        s_expires_at INTEGER,
        s_read_only_until INTEGER,
        s_disabled_until INTEGER,
        s_pending_until INTEGER,
        s_pending TEXT,
        p_expires_at INTEGER,
        p_read_only_until INTEGER,
        p_disabled_until INTEGER,
        p_pending_until INTEGER,
        p_pending TEXT
      );
      INSERT INTO change_details
        SELECT revision, s_read_only, s_read_only_reason, s_held_by, s_disabled,
          s_disabled_reason, s_disabled_by, p_read_only, p_read_only_reason, p_held_by,
          p_disabled, p_disabled_reason, p_disabled_by, s_invalid, s_invalid_reason,
          p_invalid, p_invalid_reason, s_value_fixed, p_value_fixed, s_expires_at,
          s_read_only_until, s_disabled_until, s_pending_until, s_pending, p_expires_at,
          p_read_only_until, p_disabled_until, p_pending_until, p_pending
        FROM changes
        WHERE s_read_only OR s_disabled OR p_read_only OR p_disabled OR s_invalid
          OR p_invalid OR s_value_fixed OR p_value_fixed
          OR coalesce(s_read_only_reason, s_held_by, s_disabled_reason, s_disabled_by,
            p_read_only_reason, p_held_by, p_disabled_reason, p_disabled_by,
            s_invalid_reason, p_invalid_reason, s_expires_at, s_read_only_until,
            s_disabled_until, s_pending_until, s_pending, p_expires_at, p_read_only_until,
            p_disabled_until, p_pending_until, p_pending) IS NOT NULL;
      CREATE TABLE compact_changes (
        revision INTEGER PRIMARY KEY,
        key TEXT NOT NULL,
        cause TEXT NOT NULL,
        time INTEGER NOT NULL,
        actor_uid INTEGER,
        actor_gid INTEGER,
        actor_pid INTEGER,
        actor_source TEXT,
        user INTEGER,
        s_checked INTEGER NOT NULL,
        p_checked INTEGER NOT NULL,
        key_previous INTEGER
      );
      INSERT INTO compact_changes
        SELECT revision, key, cause, time, actor_uid, actor_gid, actor_pid, actor_source, user,
          s_checked, p_checked, key_previous
        FROM changes;
      DROP TABLE changes;
      ALTER TABLE compact_changes RENAME TO changes;
      """)

  /// 8: a log row in 9 columns: its cause, who made it when no ids say
  /// (`actor_source`) and both States' `checked` packed in one integer,
  /// `what` (`ChangeWhat`, StorageNames.swift). SQLite spends an instruction
  /// sequence on each column of each row it inserts, more for a text: 12
  /// columns to 9 took ~1k of a toggle's ~21k instructions (issue 26,
  /// callgrind; SQLite alone, 8-row inserts: 6.9k to 6.0k a row). A cause or
  /// source this build does not know maps to NULL, which `NOT NULL` refuses:
  /// the step fails rather than guess. (`|`, `&`, `<<` and `>>` bind
  /// alike in SQL, left to right: each part is in its own parentheses.)
  static let packedLog = Migration(
    name: "a packed change log: cause, source and both values in one column",
    sql: """
      CREATE TABLE packed_changes (
        revision INTEGER PRIMARY KEY,
        key TEXT NOT NULL,
        time INTEGER NOT NULL,
        what INTEGER NOT NULL,
        actor_uid INTEGER,
        actor_gid INTEGER,
        actor_pid INTEGER,
        user INTEGER,
        key_previous INTEGER
      );
      INSERT INTO packed_changes
        SELECT revision, key, time,
          (CASE cause
            WHEN 'set' THEN 1
            WHEN 'toggle' THEN 2
            WHEN 'reset' THEN 3
            WHEN 'lock' THEN 4
            WHEN 'unlock' THEN 5
            WHEN 'disable' THEN 6
            WHEN 'enable' THEN 7
            WHEN 'policy' THEN 8
            WHEN 'dependency' THEN 9
            WHEN 'apply' THEN 10
            WHEN 'reconcile' THEN 11
            WHEN 'external' THEN 12
            WHEN 'drift' THEN 13
            WHEN 'expiry' THEN 14
            WHEN 'confirm' THEN 15
            WHEN 'revert' THEN 16
          END)
          | ((CASE WHEN actor_source IS NULL THEN 0
            WHEN actor_source = 'system' THEN 1
            WHEN actor_source = 'timer' THEN 2 END) << 8)
          | ((s_checked != 0) << 12) | ((p_checked != 0) << 13),
          actor_uid, actor_gid, actor_pid, user, key_previous
        FROM changes;
      DROP TABLE changes;
      ALTER TABLE packed_changes RENAME TO changes;
      """)

  /// 9: a log row in 8 columns: the uid and gid of who made a change in
  /// one integer, `actor` (`ActorIDs`, StorageNames.swift; NULL when the
  /// ids are, as both were). One column less took ~0.2k of a toggle's
  /// ~18k instructions (issue 26, callgrind; SQLite alone, 8-row inserts:
  /// 6.0k to 5.8k a row). A uid or gid outside 32 bits, which no build
  /// wrote and a read refused, keeps its low 32 bits.
  static let packedActor = Migration(
    name: "the change log's actor uid and gid in one column",
    sql: """
      CREATE TABLE actor_changes (
        revision INTEGER PRIMARY KEY,
        key TEXT NOT NULL,
        time INTEGER NOT NULL,
        what INTEGER NOT NULL,
        actor INTEGER,
        actor_pid INTEGER,
        user INTEGER,
        key_previous INTEGER
      );
      INSERT INTO actor_changes
        SELECT revision, key, time, what,
          (actor_uid & 4294967295) | ((actor_gid & 4294967295) << 32),
          actor_pid, user, key_previous
        FROM changes;
      DROP TABLE changes;
      ALTER TABLE actor_changes RENAME TO changes;
      """)

  /// 10: a log row names its key by number, `key_id`, the key's row in
  /// `keys`: SQLite bound and stored a key's text in every row (~0.3k of a
  /// toggle's ~18k instructions, callgrind). A read takes the text back
  /// from `keys` by its primary key (`StoreStatements.SQL.keyOfRow`);
  /// `keys` keeps every key a row named, pruned or not (a few bytes each).
  static let keyNumbers = Migration(
    name: "the change log's keys by number",
    sql: """
      CREATE TABLE keys (id INTEGER PRIMARY KEY, key TEXT NOT NULL UNIQUE);
      INSERT INTO keys(key) SELECT DISTINCT key FROM changes ORDER BY key;
      CREATE TABLE numbered_changes (
        revision INTEGER PRIMARY KEY,
        key_id INTEGER NOT NULL,
        time INTEGER NOT NULL,
        what INTEGER NOT NULL,
        actor INTEGER,
        actor_pid INTEGER,
        user INTEGER,
        key_previous INTEGER
      );
      INSERT INTO numbered_changes
        SELECT revision, (SELECT id FROM keys WHERE keys.key = changes.key), time, what, actor,
          actor_pid, user, key_previous
        FROM changes;
      DROP TABLE changes;
      ALTER TABLE numbered_changes RENAME TO changes;
      """)

  /// 11: a switch row by its key's number, holding what nearly every switch
  /// has (`checked`, its newest change's revision and time); the rest of a
  /// State that holds more (a hold, a reason, a deadline, `invalid`, a fixed
  /// value) is in `switch_details`, as the log keeps it (migration 7). A
  /// checkpoint writes a row of every switch changed since the last one: in
  /// the table keyed by the key's text, 18 columns, ~15.1k instructions a
  /// row; here ~5.0k, ~7.0k when the row grows (a switch's first change)
  /// (SQLite alone, callgrind, 1,000 rows of 10,000 a transaction).
  /// A row at revision 0 (a switch that never changed) has no time to
  /// show; since stop 52 a new one keeps the time its switch was declared
  /// there, so that its first change does not grow it (`insertNew`).
  ///
  /// A details row counts only with its switch row's `revision`
  /// (`StoreStatements.SQL.switchSource`): one left from an older State is
  /// passed over, so a State that no longer holds more writes nothing there
  /// (a row written again at its own revision deletes it), and each key
  /// keeps at most one.
  static let numberedSwitches = Migration(
    name: "switch rows by key number, their rare columns in switch_details",
    sql: """
      INSERT OR IGNORE INTO keys(key) SELECT key FROM switches ORDER BY key;
      CREATE TABLE numbered_switches (
        key_id INTEGER PRIMARY KEY,
        checked INTEGER NOT NULL,
        revision INTEGER NOT NULL,
        changed_at INTEGER
      );
      INSERT INTO numbered_switches
        SELECT (SELECT id FROM keys WHERE keys.key = switches.key), checked, revision, changed_at
        FROM switches;
      CREATE TABLE switch_details (
        key_id INTEGER PRIMARY KEY,
        revision INTEGER NOT NULL,
        read_only INTEGER NOT NULL DEFAULT 0,
        read_only_reason TEXT,
        held_by TEXT,
        disabled INTEGER NOT NULL DEFAULT 0,
        disabled_reason TEXT,
        disabled_by TEXT,
        invalid INTEGER NOT NULL DEFAULT 0,
        invalid_reason TEXT,
        value_fixed INTEGER NOT NULL DEFAULT 0,
        expires_at INTEGER,
        read_only_until INTEGER,
        disabled_until INTEGER,
        pending_until INTEGER,
        pending TEXT
      );
      INSERT INTO switch_details
        SELECT (SELECT id FROM keys WHERE keys.key = switches.key), revision, read_only,
          read_only_reason, held_by, disabled, disabled_reason, disabled_by, invalid,
          invalid_reason, value_fixed, expires_at, read_only_until, disabled_until,
          pending_until, pending
        FROM switches
        WHERE read_only OR disabled OR invalid OR value_fixed
          OR coalesce(read_only_reason, held_by, disabled_reason, disabled_by, invalid_reason,
            expires_at, read_only_until, disabled_until, pending_until, pending) IS NOT NULL;
      DROP TABLE switches;
      ALTER TABLE numbered_switches RENAME TO switches;
      """)

  /// 12: whether an administrator made a timed value (`expiry_by_admin`,
  /// beside each `expires_at`): its end is judged as a write by its maker
  /// would be, and an administrator writes through a hold that does not fix
  /// the value (SEMANTICS.md, after rule 22). A tried change keeps it in
  /// `pending`'s text (a seventh field; six, as older builds wrote: not an
  /// administrator). A value timed before this migration reads as a
  /// non-administrator's: the hold wins, as it did. And a user's own value
  /// may be tried (rule 20): `user_values` keeps its `pending_until` and
  /// `pending`, as a switch's details do (the log has them already).
  static let undoMakers = Migration(
    name: "who made a timed value, and users' tried changes",
    sql: """
      ALTER TABLE switch_details ADD COLUMN expiry_by_admin INTEGER NOT NULL DEFAULT 0;
      ALTER TABLE change_details ADD COLUMN s_expiry_by_admin INTEGER NOT NULL DEFAULT 0;
      ALTER TABLE change_details ADD COLUMN p_expiry_by_admin INTEGER NOT NULL DEFAULT 0;
      ALTER TABLE user_values ADD COLUMN expiry_by_admin INTEGER NOT NULL DEFAULT 0;
      ALTER TABLE user_values ADD COLUMN pending_until INTEGER;
      ALTER TABLE user_values ADD COLUMN pending TEXT;
      """)

  /// 13: the users' values that have deadlines, indexed apart: the start reads five columns of
  /// every value (key, user, value, revision, time) and the deadlines of only these (with a
  /// million values, loading them took 2.6G instructions, 1.6G so, callgrind). The index's
  /// WHERE is `SQL.loadUserDeadlines`'s, which must say the same for SQLite to use it.
  static let userDeadlines = Migration(
    name: "users' values with deadlines indexed",
    sql: """
      CREATE INDEX user_values_with_deadlines ON user_values(key, user)
        WHERE expires_at IS NOT NULL OR pending_until IS NOT NULL;
      """)

  /// The schema version this build writes and reads.
  static var currentVersion: Int32 { Int32(migrations.count) }

  /// The database's schema version.
  static func version(of connection: SQLiteConnection) throws(SQLiteError) -> Int32 {
    let rows = try connection.textRows("PRAGMA user_version")
    return rows.first.flatMap { Int32($0) } ?? 0
  }

  /// Brings the database up to `currentVersion` in one IMMEDIATE transaction.
  ///
  /// The version is read again under the write lock, so two processes opening the same new file
  /// cannot both run migration 1. Returns the version found, for the caller's newer-schema check
  /// (this function refuses nothing and does not go backwards). When it migrates, `verify`
  /// runs on the migrated schema before the commit: what it throws rolls the migrations back,
  /// so a file refused after migrating is left as it was.
  @discardableResult
  static func migrate(
    _ connection: SQLiteConnection, verify: () throws(SQLiteError) -> Void = {}
  ) throws(SQLiteError) -> Int32 {
    try connection.execute("BEGIN IMMEDIATE")
    do throws(SQLiteError) {
      let found = try version(of: connection)
      if found < currentVersion {
        for (index, migration) in migrations.enumerated().dropFirst(Int(found)) {
          if let query = migration.foundBy, try connection.textRows(query).first != "0" {
            continue
          }
          do throws(SQLiteError) {
            try connection.execute(migration.sql)
          } catch {
            var failed = error
            failed.context = "migration \(index + 1) (\(migration.name)): \(error.context)"
            throw failed
          }
        }
        // PRAGMA takes no bound parameters; the value is our own integer, not input.
        try connection.execute("PRAGMA user_version = \(currentVersion)")
        try verify()
      }
      try connection.execute("COMMIT")
      return found
    } catch {
      if connection.isInTransaction { try? connection.execute("ROLLBACK") }
      throw error
    }
  }
}
