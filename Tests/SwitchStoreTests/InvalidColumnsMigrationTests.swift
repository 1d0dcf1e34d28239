import CSQLite
import SwitchCore
import SwitchTestSupport
import Testing

@testable import SwitchStore

/// The migration that stores `invalid` and `invalidReason` (apply commands).
@Suite struct InvalidColumnsMigrationTests {
  @Test func aSchemaTwoDatabaseOpensWithItsValuesAndValidSwitches() throws {
    try withTemporaryDirectory { directory in
      let path = directory + "/s.db"
      let old = try schemaTwoDatabase(at: path)
      try old.execute(
        """
        INSERT INTO switches(key, checked, read_only, read_only_reason, held_by, disabled,
          revision, changed_at)
        VALUES ('wifi', 1, 1, 'Held by IT.', 'policy', 0, 1, 100);
        INSERT INTO changes(revision, key, cause, time, s_checked, s_read_only, s_read_only_reason,
          s_held_by, s_disabled, p_checked, p_read_only, p_disabled)
        VALUES (1, 'wifi', 'policy', 100, 1, 1, 'Held by IT.', 'policy', 0, 0, 0, 0);
        INSERT INTO changes(revision, key, cause, time, actor_uid, actor_gid, actor_pid,
          s_checked, s_read_only, s_disabled, p_checked, p_read_only, p_disabled)
        VALUES (2, 'bt', 'toggle', 200, 1000, 1000, 7, 1, 0, 0, 0, 0, 0);
        UPDATE meta SET value = 1 WHERE name = 'checkpoint';
        """)
      old.close()

      let store = try SwitchStore(path: path)
      defer { store.close() }
      #expect(try Schema.version(of: store.connection) == Schema.currentVersion)
      let held = SwitchState(
        checked: true, readOnly: true, readOnlyReason: "Held by IT.", heldBy: .policy)
      #expect(
        try store.loadSwitches() == [
          SwitchRecord(key: "bt", state: SwitchState(checked: true), revision: 2, changedAt: 200),
          SwitchRecord(key: "wifi", state: held, revision: 1, changedAt: 100),
        ])
      let log = try store.changes(after: 0, upTo: .max, limit: 10)
      #expect(log.map(\.state) == [held, SwitchState(checked: true)])
      #expect(log.map(\.actor) == [.policy, .peer(uid: 1000, gid: 1000, pid: 7)])

      // The new columns take what a change says, in the log and at the checkpoint.
      let broken = held.applied(failure: "rfkill: no radio")
      try store.commit([
        Change(
          revision: 3, time: 300, key: "wifi", cause: .reconcile, actor: .reconcile,
          state: broken, previous: held)
      ])
      try store.checkpointFromLog()
      let reloaded = try store.loadSwitches().first { $0.key == "wifi" }
      #expect(reloaded?.state == broken)
      let last = try store.changes(after: 2, upTo: .max, limit: 10)
      #expect(last.first?.actor == .reconcile)
      #expect(last.first?.fields == [.invalid, .invalidReason])
    }
  }
}
