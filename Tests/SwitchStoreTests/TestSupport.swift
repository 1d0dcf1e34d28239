import CSQLite
import SwitchCore

@testable import SwitchStore

/// A new database at `path` as the release before per-user values and apply commands wrote
/// it (schema 2, empty), open for a test to fill before a current store migrates it.
func schemaTwoDatabase(at path: String) throws -> SQLiteConnection {
  let old = try SQLiteConnection(path: path, flags: SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE)
  try old.execute(Schema.changeLog.sql)
  try old.execute(Schema.keyChains.sql)
  try old.execute("PRAGMA user_version = 2")
  return old
}

/// The StoreError that `body` throws, or nil when it returns.
func storeError(_ body: () throws(StoreError) -> Void) -> StoreError? {
  do {
    try body()
    return nil
  } catch {
    return error
  }
}

extension StoreError {
  /// The primary SQLite code of a `.sqlite` error.
  var sqliteCode: Int32? {
    if case .sqlite(let error) = self { return error.code }
    return nil
  }

  var isDamaged: Bool {
    if case .damaged = self { return true }
    return false
  }
}

// MARK: Sample values

/// States that together cover every field, nil and non-nil reasons, and each Holder in both
/// `heldBy` and `disabledBy`.
let sampleStates: [SwitchState] = [
  SwitchState(checked: true),
  SwitchState(checked: false),
  SwitchState(checked: false, readOnly: true, readOnlyReason: "Held by IT.", heldBy: .policy),
  SwitchState(
    checked: true, readOnly: true, readOnlyReason: nil, heldBy: .admin, disabled: true,
    disabledReason: "Off: ünïcødé ✓ 🚫", disabledBy: .dependency),
  SwitchState(
    checked: false, readOnly: true, readOnlyReason: "", heldBy: .dependency, disabled: true,
    disabledReason: "embedded\u{0}nul", disabledBy: .policy),
  SwitchState(checked: true, disabled: true, disabledReason: nil, disabledBy: .admin),
  SwitchState(checked: true, invalid: true, invalidReason: "rfkill: cannot open /dev/rfkill"),
  SwitchState(checked: false, invalid: true, invalidReason: nil),
  // Timed by an administrator, and a tried change of one (migration 12).
  SwitchState(checked: false, expiresAt: 1_790_000_500_000, expiryByAdministrator: true),
  SwitchState(
    checked: true, pendingUntil: 1_790_000_030_000,
    pending: TriedChange(
      maker: .peer(uid: 0, gid: 0, pid: 9), makerIsAdministrator: true, bootDeadline: 35_000,
      bootID: "boot-a", revertOnDisconnect: false)),
]

/// A change of `key` at `revision`, with its time derived from the revision.
func sampleChange(
  _ revision: Int64, key: String = "wifi", checked: Bool = true, cause: Cause = .set,
  actor: Actor = .peer(uid: 1000, gid: 1000, pid: 4321)
) -> Change {
  Change(
    revision: revision, time: 1_790_000_000_000 + revision, key: key, cause: cause,
    actor: actor, state: SwitchState(checked: checked), previous: SwitchState(checked: !checked))
}

/// Commits revisions `range`, one commit each, cycling through `keys`.
func commitEach(_ store: SwitchStore, _ range: ClosedRange<Int64>, keys: [String] = ["wifi"])
  throws
{
  for revision in range {
    let key = keys[Int(revision - range.lowerBound) % keys.count]
    try store.commit([sampleChange(revision, key: key, checked: revision % 2 == 0)])
  }
}
