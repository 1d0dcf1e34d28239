import CSQLite
import Glibc
import SwitchCore
import Testing

@testable import SwitchStore

/// A fresh directory under /tmp for one test, removed (with its files) when `body` returns.
func withTemporaryDirectory<T>(_ body: (String) throws -> T) throws -> T {
  var template = Array("/tmp/switchstore-test-XXXXXX".utf8CString)
  guard let created = mkdtemp(&template) else {
    throw TestFailure("mkdtemp failed: errno \(errno)")
  }
  let directory = String(cString: created)
  defer { removeDirectory(directory) }
  return try body(directory)
}

/// A new database at `path` as the release before per-user values and apply commands wrote
/// it (schema 2, empty), open for a test to fill before a current store migrates it.
func schemaTwoDatabase(at path: String) throws -> SQLiteConnection {
  let old = try SQLiteConnection(path: path, flags: SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE)
  try old.execute(Schema.changeLog.sql)
  try old.execute(Schema.keyChains.sql)
  try old.execute("PRAGMA user_version = 2")
  return old
}

/// Removes a flat directory: the store only ever creates files (db, -wal, -shm) in it.
private func removeDirectory(_ path: String) {
  if let handle = opendir(path) {
    while let entry = readdir(handle) {
      let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
        String(cString: raw.bindMemory(to: CChar.self).baseAddress!)
      }
      if name == "." || name == ".." { continue }
      unlink(path + "/" + name)
    }
    closedir(handle)
  }
  rmdir(path)
}

struct TestFailure: Error, CustomStringConvertible {
  var description: String
  init(_ description: String) { self.description = description }
}

func writeFile(_ path: String, _ bytes: [UInt8]) throws {
  let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
  guard fd >= 0 else { throw TestFailure("open \(path): errno \(errno)") }
  defer { close(fd) }
  try bytes.withUnsafeBytes { buffer in
    var offset = 0
    while offset < buffer.count {
      let written = write(fd, buffer.baseAddress! + offset, buffer.count - offset)
      guard written > 0 else { throw TestFailure("write \(path): errno \(errno)") }
      offset += written
    }
  }
}

/// Overwrites `bytes.count` bytes at `offset` in place.
func patchFile(_ path: String, at offset: Int, _ bytes: [UInt8]) throws {
  let fd = open(path, O_WRONLY | O_CLOEXEC)
  guard fd >= 0 else { throw TestFailure("open \(path): errno \(errno)") }
  defer { close(fd) }
  let written = bytes.withUnsafeBytes { pwrite(fd, $0.baseAddress!, $0.count, off_t(offset)) }
  guard written == bytes.count else { throw TestFailure("pwrite \(path): errno \(errno)") }
}

func readFile(_ path: String) throws -> [UInt8] {
  let fd = open(path, O_RDONLY | O_CLOEXEC)
  guard fd >= 0 else { throw TestFailure("open \(path): errno \(errno)") }
  defer { close(fd) }
  var result: [UInt8] = []
  var chunk = [UInt8](repeating: 0, count: 65536)
  while true {
    let count = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress!, $0.count) }
    guard count >= 0 else { throw TestFailure("read \(path): errno \(errno)") }
    if count == 0 { return result }
    result += chunk[0..<count]
  }
}

func fileExists(_ path: String) -> Bool {
  access(path, F_OK) == 0
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
