import Glibc
import SwitchTestSupport
import Testing

/// A database switchd may read but not write is refused at start, with a
/// sentence that says so: SQLite opened it read-only without a word, and
/// switchd said "serving" and refused every write (a lifecycle audit). Run
/// as uid 65534 through setpriv (root may write any file).
@Suite struct UnwritableDatabaseTests {
  static let asNobody = ["/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]

  /// Starts switchd as 65534, its socket in a folder of that uid; how it
  /// ended and what it logged this time.
  static func start(_ daemon: DaemonFixture, socket: String) throws -> (
    DaemonFixture.StartOutcome, String
  ) {
    let earlier = daemon.log.utf8.count
    let outcome = try daemon.startExpectingRefusal(socket: socket, through: asNobody)
    return (outcome, String(decoding: daemon.log.utf8.dropFirst(earlier), as: UTF8.self))
  }

  @Test(
    .needsRoot("switchd runs as another uid through setpriv"),
    .enabled(if: access("/usr/bin/setpriv", X_OK) == 0, "needs /usr/bin/setpriv"))
  func aDatabaseOrLogSwitchdMayNotWriteIsRefusedAtStart() throws {
    let daemon = try DaemonFixture()
    #expect(daemon.ctl(["toggle", "wifi"]).status == 0)
    #expect(daemon.stop() == 0)
    let state = daemon.directory + "/state"
    let run = daemon.directory + "/run"
    mkdir(run, 0o700)
    for path in [state, run] + (try directoryEntries(state)).map({ state + "/" + $0 }) {
      chown(path, 65534, 65534)
    }
    let socket = run + "/switchd.sock"
    let before = try readWholeFile(daemon.databasePath)

    chmod(daemon.databasePath, 0o400)
    let (readOnly, readOnlyLog) = try Self.start(daemon, socket: socket)
    #expect(readOnly == .exited(1), "\(readOnlyLog)")
    #expect(readOnlyLog.contains("switchd may read the file but not write it"), "\(readOnlyLog)")
    #expect(!fileExists(daemon.databasePath + "-wal"), "the refused start made a WAL")
    #expect(try readWholeFile(daemon.databasePath) == before)

    chmod(daemon.databasePath, 0o600)
    let wal = daemon.databasePath + "-wal"
    try writeWholeFile(wal, "")
    chown(wal, 65534, 65534)
    chmod(wal, 0o400)
    let (logReadOnly, logReadOnlyLog) = try Self.start(daemon, socket: socket)
    #expect(logReadOnly == .exited(1), "\(logReadOnlyLog)")
    #expect(
      logReadOnlyLog.contains("switchd may not write its write-ahead log"), "\(logReadOnlyLog)")

    // Both writable: the same start serves (the setup is not what refused).
    unlink(wal)
    let (writable, writableLog) = try Self.start(daemon, socket: socket)
    #expect(writable == .served, "\(writableLog)")
  }
}
