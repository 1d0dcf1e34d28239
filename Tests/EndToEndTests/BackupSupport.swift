import Glibc
import SwitchProtocol
import SwitchSystem
import SwitchTestSupport
import Synchronization
import Testing

/// Helpers for BackupEndToEndTests: the restore procedure of
/// docs/configuration.md, what a backup file holds (read with python3's
/// sqlite3), a writer that toggles until told to stop, the descriptors a
/// process holds, and the docs' example client.
enum BackupSupport {
  /// docs/configuration.md "Backup and restore", on a stopped daemon:
  /// replace the database with the backup, remove the stale `-wal`/`-shm`.
  static func restore(_ daemon: DaemonFixture, from backup: String) throws {
    guard let bytes = try? readWholeFileBytes(backup) else {
      throw FixtureError("cannot read \(backup)")
    }
    try writeWholeFile(daemon.databasePath, bytes)
    unlink(daemon.databasePath + "-wal")
    unlink(daemon.databasePath + "-shm")
  }

  /// The revisions of a database's change log, ascending.
  static func loggedRevisions(_ database: String) -> [Int64] {
    let result = Durability.Python.readOnlyQuery(
      database,
      "SELECT coalesce(group_concat(revision), '') FROM (SELECT revision FROM changes ORDER BY revision)"
    )
    return result.stdout.split(whereSeparator: { $0 == "," || $0 == "\n" }).compactMap {
      Int64($0)
    }
  }

  /// A database's value of `key` as of its newest change (1 on, 0 off):
  /// bit 12 of its `what` (schema migration 8); rows name keys by number
  /// (migration 10).
  static func loggedValue(_ database: String, key: String) -> String {
    let result = Durability.Python.readOnlyQuery(
      database,
      "SELECT (what >> 12) & 1 FROM changes WHERE key_id = "
        + "(SELECT id FROM keys WHERE key = '\(key)') ORDER BY revision DESC LIMIT 1")
    return result.stdout.split(separator: "\n").first.map(String.init) ?? result.stderr
  }

  /// wifi (`Default=on`) after `revision` toggles of it and nothing else.
  static func wifiAfterToggles(_ revision: Int64) -> Bool { revision % 2 == 0 }

  /// The descriptors process `pid` has open, as their /proc links say
  /// (`socket:[…]`, a path), except those of `ignoring` (paths): SQLite
  /// closes a descriptor of its own files when it sees fit (one it closed
  /// while another connection held locks waits for them to end).
  static func openDescriptors(of pid: pid_t, ignoring: [String] = []) -> [String] {
    let directory = "/proc/\(pid)/fd"
    var links: [String] = []
    for name in names(in: directory) {
      var target = [CChar](repeating: 0, count: 4096)
      let n = readlink(directory + "/" + name, &target, target.count - 1)
      guard n > 0 else { continue }
      let link = String(decoding: target[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
      if !ignoring.contains(link) { links.append(link) }
    }
    return links.sorted()
  }

  /// How many descriptors of each kind the daemon has open, but those
  /// SQLite keeps of its database files.
  static func descriptors(of daemon: DaemonFixture) -> [String: Int] {
    let path = daemon.databasePath
    var kinds: [String: Int] = [:]
    for link in openDescriptors(of: daemon.pid, ignoring: [path, path + "-wal", path + "-shm"]) {
      kinds[link.hasPrefix("socket:") ? "socket" : link, default: 0] += 1
    }
    return kinds
  }

  /// The names in a directory, `.` and `..` left out.
  static func names(in path: String) -> [String] {
    guard let directory = opendir(path) else { return [] }
    defer { closedir(directory) }
    var names: [String] = []
    while let entry = readdir(directory) {
      let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
        String(cString: raw.bindMemory(to: CChar.self).baseAddress!)
      }
      if name != "." && name != ".." { names.append(name) }
    }
    return names.sorted()
  }

  final class StopFlag: Sendable {
    let raised = Atomic<Bool>(false)
  }

  /// Toggles wifi on its own connection until `stop` is raised; the
  /// number of toggles answered.
  static func toggleUntilStopped(_ socketPath: String, _ stop: StopFlag) -> Int {
    guard let client = try? RPCClient(socketPath: socketPath) else { return 0 }
    var count = 0
    while !stop.raised.load(ordering: .relaxed) {
      guard (try? client.result("toggle", keyParam("wifi"))) != nil else { break }
      count += 1
    }
    return count
  }

  /// The example client of docs/protocol.md ("A small Python client"), as
  /// the page has it: the test runs what the documentation tells people to run.
  static func documentedPythonClient() throws -> String {
    var path = #filePath
    for _ in 0..<3 { path = String(path[..<path.lastIndex(of: "/")!]) }
    let page = try readWholeFile(path + "/docs/protocol.md")
    guard let section = page.firstRange(of: "## A small Python client") else {
      throw FixtureError("docs/protocol.md has no Python client")
    }
    let after = page[section.upperBound...]
    guard let start = after.firstRange(of: "```python\n") else {
      throw FixtureError("docs/protocol.md has no Python block")
    }
    let body = after[start.upperBound...]
    guard let end = body.firstRange(of: "\n```") else {
      throw FixtureError("docs/protocol.md's Python block does not end")
    }
    return String(body[..<end.lowerBound]) + "\n"
  }
}
