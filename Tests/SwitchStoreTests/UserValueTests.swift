import CSQLite
import SwitchCore
import SwitchTestSupport
import Testing

@testable import SwitchStore

/// Per-user values (schema 3): a user's change is a log row with its `user`, chained per key
/// and user; `user_values` holds them as of the checkpoint; a schema-2 file keeps its values.
@Suite struct UserValueTests {
  /// A change of `user`'s own value of `key`.
  static func userChange(
    _ revision: Int64, key: String = "email", user: UInt32, checked: Bool
  ) -> Change {
    var change = sampleChange(revision, key: key, checked: checked)
    change.user = user
    change.actor = .peer(uid: user, gid: user, pid: 7)
    return change
  }

  /// A switch-level change (a lock that fixes the value) of `key`.
  static func lockChange(_ revision: Int64, key: String = "email", fixed: Bool) -> Change {
    var change = sampleChange(revision, key: key, checked: false, cause: .lock)
    change.state.readOnly = true
    change.state.heldBy = .admin
    change.state.valueFixed = fixed
    change.previous = SwitchState(checked: true)
    return change
  }

  @Test func userValuesAreLoadedWithAndWithoutACheckpoint() throws {
    try withTemporaryDirectory { directory in
      let path = directory + "/s.db"
      let store = try SwitchStore(path: path)
      try store.insertNew([SwitchRecord(key: "email", state: SwitchState(checked: true))])
      try store.commit([
        Self.userChange(1, user: 1000, checked: false),
        Self.userChange(2, user: 1001, checked: true),
        Self.lockChange(3, fixed: true),
        Self.userChange(4, user: 1000, checked: true),
      ])
      // Not checkpointed yet: the values come from the log's tail (as after kill -9).
      let expected: UserValues = [
        "email": [
          1000: UserValue(checked: true, revision: 4, changedAt: sampleChange(4).time),
          1001: UserValue(checked: true, revision: 2, changedAt: sampleChange(2).time),
        ]
      ]
      #expect(try store.loadUserValues() == expected)
      let record = try #require(try store.loadSwitches().first)
      #expect(record.revision == 3 && record.state.valueFixed && record.state.readOnly)
      try store.checkpointFromLog()
      store.close()
      let reopened = try SwitchStore(path: path)
      defer { reopened.close() }
      #expect(try reopened.loadUserValues() == expected)
      #expect(try reopened.loadSwitches().first?.state.valueFixed == true)
    }
  }

  /// A user's timed value (rule 21) and tried change (rule 20): kept in
  /// the log's row and, after the checkpoint, in `user_values`.
  @Test func aUsersTimerIsKeptWithTheValue() throws {
    try withTemporaryDirectory { directory in
      let path = directory + "/s.db"
      let store = try SwitchStore(path: path)
      try store.insertNew([SwitchRecord(key: "email", state: SwitchState(checked: true))])
      var timed = Self.userChange(1, user: 1000, checked: false)
      timed.state.expiresAt = 1_800_000_000_000
      // An administrator set it (acting as the user): kept with the deadline.
      timed.state.expiryByAdministrator = true
      // And a user's tried change (rule 20), with its maker and boot deadline.
      var tried = Self.userChange(2, user: 1001, checked: false)
      let trial = TriedChange(
        maker: .peer(uid: 1001, gid: 1001, pid: 5), makerIsAdministrator: false,
        bootDeadline: 35_000, bootID: "boot-a", revertOnDisconnect: true)
      tried.state.pendingUntil = 1_800_000_030_000
      tried.state.pending = trial
      try store.commit([timed, tried])
      let expected: UserValues = [
        "email": [
          1000: UserValue(
            checked: false, revision: 1, changedAt: sampleChange(1).time,
            expiresAt: 1_800_000_000_000, expiryByAdministrator: true),
          1001: UserValue(
            checked: false, revision: 2, changedAt: sampleChange(2).time,
            pendingUntil: 1_800_000_030_000, pending: trial),
        ]
      ]
      #expect(try store.loadUserValues() == expected)
      try store.checkpointFromLog()
      // A value with none, after the checkpoint: in the log's tail.
      try store.commit([Self.userChange(3, user: 1002, checked: false)])
      store.close()
      let reopened = try SwitchStore(path: path)
      defer { reopened.close() }
      let loaded = try reopened.loadUserValuesAndDeadlines()
      #expect(loaded.values["email"]?[1000] == expected["email"]?[1000])
      #expect(loaded.values["email"]?[1001] == expected["email"]?[1001])
      #expect(loaded.values["email"]?[1002]?.hasDeadlines == false)
      // The two with deadlines, from their rows (through migration 13's
      // index); not the value without.
      #expect(loaded.withDeadlines.map(\.user).sorted() == [1000, 1001])
      #expect(loaded.withDeadlines.allSatisfy { $0.key.string == "email" })
    }
  }

  /// The log's tail, read after the rows, names every value it leaves
  /// with deadlines, and only those.
  @Test func theTailNamesItsValuesWithDeadlines() throws {
    try withTemporaryDirectory { directory in
      let store = try SwitchStore(path: directory + "/s.db")
      defer { store.close() }
      try store.insertNew([SwitchRecord(key: "email", state: SwitchState(checked: true))])
      var timed = Self.userChange(1, user: 1000, checked: false)
      timed.state.expiresAt = 1_800_000_000_000
      try store.commit([timed, Self.userChange(2, user: 1001, checked: false)])
      let loaded = try store.loadUserValuesAndDeadlines()
      #expect(loaded.withDeadlines.map(\.user) == [1000])
      #expect(loaded.values["email"]?[1000]?.expiresAt == 1_800_000_000_000)
    }
  }

  @Test func chainsAreKeptPerKeyAndUser() throws {
    try withTemporaryDirectory { directory in
      let store = try SwitchStore(path: directory + "/s.db")
      defer { store.close() }
      try store.commit([
        Self.userChange(1, user: 1000, checked: false),
        Self.userChange(2, user: 1001, checked: false),
        Self.lockChange(3, fixed: false),
        Self.userChange(4, user: 1000, checked: true),
      ])
      try store.commit([
        Self.userChange(5, user: 1001, checked: true), sampleChange(6, key: "email"),
      ])
      #expect(try store.history(key: "email", before: nil, limit: 10).map(\.revision) == [6, 3])
      #expect(
        try store.userHistory(key: "email", user: 1000, before: nil, limit: 10, newest: 4)
          .map(\.revision) == [4, 1])
      #expect(
        try store.userHistory(key: "email", user: 1001, before: 5, limit: 10, newest: 5)
          .map(\.revision) == [2])
      #expect(
        try store.userHistory(key: "email", user: 1001, before: nil, limit: 10, newest: 5)
          .allSatisfy { $0.user == 1001 })
      // Every row but another user's, newest first.
      #expect(
        try store.history(before: nil, limit: 10) { $0.user == nil || $0.user == 1000 }
          .map(\.revision) == [6, 4, 3, 1])
    }
  }

  @Test func aUsersValueAsOfAnyRevisionWithItsTimers() throws {
    try withTemporaryDirectory { directory in
      let store = try SwitchStore(path: directory + "/s.db")
      defer { store.close() }
      // Their value at 4 is timed: a view of the lock at 5 shows the timer too.
      var timed = Self.userChange(4, user: 1000, checked: true)
      timed.state.expiresAt = 3_600_000
      // Their change at 6 found the value at 4, timer and all, as the writer writes it.
      var untimed = Self.userChange(6, user: 1000, checked: false)
      untimed.previous = timed.state
      try store.commit([
        Self.lockChange(1, fixed: false),
        Self.userChange(2, user: 1000, checked: false),
        Self.lockChange(3, fixed: false),
        timed,
        Self.lockChange(5, fixed: false),
        untimed,
      ])
      let head = UserValue(checked: false, revision: 6, changedAt: 0)
      func value(at revision: Int64) throws -> SeenOwnValue? {
        try store.userValue(key: "email", user: 1000, at: revision, head: head)
      }
      #expect(try value(at: 1) == nil)
      #expect(try value(at: 3)?.checked == false)
      #expect(try value(at: 3)?.expiresAt == nil)
      #expect(try value(at: 5)?.checked == true)
      #expect(try value(at: 5)?.expiresAt == 3_600_000)
      #expect(try value(at: 6) == SeenOwnValue(head))
      #expect(try store.userValue(key: "email", user: 1001, at: 5, head: nil) == nil)
      // Once the older rows are pruned, the oldest retained row tells what it replaced.
      _ = try store.prune(keep: 1)
      #expect(try value(at: 5)?.checked == true)
      #expect(try value(at: 5)?.expiresAt == 3_600_000)
    }
  }

  /// The switch as of any revision, for a user's change under a hold that
  /// fixes the value: its newest switch-level change at or before it (from
  /// the key's mark above it, past many), else what the oldest retained one after it replaced.
  @Test func aSwitchsStateAsOfAnyRevision() throws {
    try withTemporaryDirectory { directory in
      let store = try SwitchStore(path: directory + "/s.db")
      defer { store.close() }
      #expect(try store.switchState(key: "email", at: 1) == nil)
      var changes = [
        Self.lockChange(1, fixed: true), Self.userChange(2, user: 1000, checked: true),
      ]
      // Enough switch-level changes after it for marks (`markSpacing`) to be used.
      for revision in Int64(3)...300 {
        var unlock = Self.lockChange(revision, fixed: revision % 2 == 1)
        unlock.state.checked = revision % 4 == 1
        changes.append(unlock)
      }
      try store.commit(changes)
      #expect(try store.switchState(key: "email", at: 2)?.valueFixed == true)
      #expect(try store.switchState(key: "email", at: 2)?.checked == false)
      #expect(try store.switchState(key: "email", at: 101)?.checked == true)
      #expect(try store.switchState(key: "email", at: 102)?.valueFixed == false)
      #expect(try store.switchState(key: "email", at: 500)?.checked == false)
      #expect(try store.switchState(key: "other", at: 500) == nil)
      // Pruned below: what the oldest retained change replaced.
      _ = try store.prune(keep: 10)
      #expect(try store.switchState(key: "email", at: 2)?.checked == true)
      #expect(try store.switchState(key: "email", at: 297)?.checked == true)
    }
  }

  /// With no switch-level change of it left in the log, the switch's row
  /// (as of the checkpoint) is its State after its newest one.
  @Test func aSwitchsStateFromItsRowWhenTheLogHasNoChangeOfIt() throws {
    try withTemporaryDirectory { directory in
      let store = try SwitchStore(path: directory + "/s.db")
      defer { store.close() }
      try store.insertNew([SwitchRecord(key: "email", state: SwitchState(checked: true))])
      var lock = Self.lockChange(1, fixed: true)
      lock.state.checked = false
      try store.commit([lock, Self.userChange(2, user: 1000, checked: true)])
      _ = try store.prune(keep: 1)
      let state = try store.switchState(key: "email", at: 2)
      #expect(state?.valueFixed == true && state?.checked == false && state?.readOnly == true)
    }
  }

  /// A database written by the current release (schema 2) opens, migrates, and keeps its values
  /// and history; new user rows then chain apart from the migrated key chains.
  @Test func schemaTwoIsMigratedKeepingItsValues() throws {
    try withTemporaryDirectory { directory in
      let path = directory + "/s.db"
      let old = try schemaTwoDatabase(at: path)
      try old.execute(
        """
        INSERT INTO switches(key, checked, read_only, disabled, revision, changed_at)
          VALUES ('wifi', 0, 0, 0, 1, 100), ('email', 1, 1, 0, 2, 200);
        UPDATE switches SET held_by = 'admin' WHERE key = 'email';
        INSERT INTO changes(revision, key, cause, time, s_checked, s_read_only, s_disabled,
          p_checked, p_read_only, p_disabled, key_previous)
        VALUES (1, 'wifi', 'set', 100, 0, 0, 0, 1, 0, 0, NULL),
          (2, 'email', 'lock', 200, 1, 1, 0, 1, 0, 0, NULL),
          (3, 'wifi', 'toggle', 300, 1, 0, 0, 0, 0, 0, 1);
        UPDATE meta SET value = 2 WHERE name = 'checkpoint';
        """)
      old.close()

      let store = try SwitchStore(path: path)
      defer { store.close() }
      #expect(try store.connection.textRows("PRAGMA user_version") == ["\(Schema.currentVersion)"])
      let records = try store.loadSwitches()
      #expect(records.map(\.key) == ["email", "wifi"])
      #expect(records[1].state.checked == true && records[1].revision == 3)
      #expect(records[0].state.heldBy == .admin && !records[0].state.valueFixed)
      #expect(try store.loadUserValues().isEmpty)
      #expect(try store.history(key: "wifi", before: nil, limit: 10).map(\.revision) == [3, 1])
      #expect(try store.changes(after: 0, upTo: 10, limit: 10).allSatisfy { $0.user == nil })
      try store.commit([Self.userChange(4, key: "email", user: 1000, checked: false)])
      try store.commit([sampleChange(5, key: "email")])
      #expect(try store.history(key: "email", before: nil, limit: 10).map(\.revision) == [5, 2])
      #expect(try store.loadUserValues()["email"]?[1000]?.checked == false)
    }
  }
}

/// A change between two free, unfixed States is one row of `changes` and
/// nothing in `change_details` (migration 7); read back it is the same change
/// as any other, whatever the row before it bound (bindings outlive a reset).
@Suite struct FreeChangeRowTests {
  @Test func freeAndHeldChangesReadBackAsWritten() throws {
    try withTemporaryDirectory { directory in
      let store = try SwitchStore(path: directory + "/s.db")
      defer { store.close() }
      try store.insertNew([SwitchRecord(key: "wifi", state: SwitchState(checked: true))])
      var held = sampleChange(2, checked: false, cause: .lock)
      held.state.readOnly = true
      held.state.heldBy = .admin
      held.state.readOnlyReason = "exam"
      held.state.readOnlyUntil = 1_800_000_000_000
      var mine = sampleChange(5, checked: true)
      mine.user = 1000
      var fixed = sampleChange(7, checked: true, cause: .policy, actor: .policy)
      fixed.previous.valueFixed = true
      let written = [
        sampleChange(1, checked: false),
        held,
        sampleChange(3, checked: true, cause: .expiry, actor: .timer),
        sampleChange(4, checked: false, cause: .policy, actor: .policy),
        mine,
        sampleChange(6, checked: false, actor: .peer(uid: 0, gid: 0, pid: 9)),
        fixed,
        sampleChange(8, checked: false),
      ]
      for change in written { try store.commit([change]) }
      #expect(try store.changes(after: 0, upTo: 8, limit: 10) == written)
      // Only the held change and the one a fixed value came from have details.
      #expect(
        try store.connection.textRows("SELECT revision FROM change_details ORDER BY revision")
          == ["2", "7"])
      #expect(try store.history(key: "wifi", before: nil, limit: 10).count == 7)
    }
  }
}
