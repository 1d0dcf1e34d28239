import Glibc
import SwitchTestSupport
import Testing

/// One daemon per database (issue 11 item 2), and what switchctl says when
/// a daemon left its socket behind.
@Suite struct OneDaemonPerDatabaseTests {
  @Test func aSecondDaemonOnTheSameDatabaseRefusesAndTouchesNothing() throws {
    let daemon = try DaemonFixture()
    defer { daemon.stop() }
    #expect(daemon.ctl(["off", "wifi"]).status == 0)
    let files = ["", "-wal", "-shm"].map { daemon.databasePath + $0 }
    let before = files.map { try? readWholeFileBytes($0) }

    let secondSocket = daemon.directory + "/second.sock"
    let second = runProcess([
      Products.path("switchd"), "--config", daemon.configDirectory, "--socket", secondSocket,
      "--database", daemon.databasePath,
    ])
    #expect(second.status != 0)
    #expect(
      second.stderr.contains("in use by process \(daemon.pid)"), "stderr: \(second.stderr)")
    let unchanged = files.map { try? readWholeFileBytes($0) } == before
    #expect(unchanged, "the second daemon changed the database's files")
    #expect(access(secondSocket, F_OK) != 0, "the second daemon bound its socket")

    // The first still serves reads and writes.
    let get = daemon.ctl(["get", "wifi"])
    #expect(get.status == 0 && get.stdout.contains("off"), "\(get)")
    #expect(daemon.ctl(["on", "wifi"]).status == 0)
    // Checking the configuration needs no lock.
    let check = runProcess([Products.path("switchd"), "--check-config", daemon.configDirectory])
    #expect(check.status == 0, "\(check)")
  }

  /// The database is the daemon's alone while it runs (SQLite's unix-excl
  /// VFS, which spares each commit its file locks): another process that
  /// opens it is told it is locked, while the daemon's own log reader reads
  /// on; once the daemon has stopped, anyone may read it.
  @Test func anotherProcessCannotOpenTheDatabaseWhileTheDaemonRuns() throws {
    guard Durability.Python.path != nil else {
      print("skipped: no python3 to open the database from another process")
      return
    }
    let daemon = try DaemonFixture()
    defer { daemon.stop() }
    #expect(daemon.ctl(["off", "wifi"]).status == 0)
    let during = Durability.Python.readWithoutWaiting(daemon.databasePath)
    #expect(during.stdout == "locked\n", "\(during)")
    let history = try daemon.client().result("history", #"{"key":"wifi"}"#)
    #expect(history["entries"]?.arrayValue?.count == 1, "\(history.jsonText)")
    #expect(daemon.stop() == 0)
    let after = Durability.Python.readWithoutWaiting(daemon.databasePath)
    #expect(after.stdout == "1\n", "\(after)")
  }

  @Test func aDaemonKilledLeavesAStaleSocketThatSwitchctlNames() throws {
    let daemon = try DaemonFixture()
    defer { daemon.stop() }
    daemon.crash()
    #expect(access(daemon.socketPath, F_OK) == 0, "SIGKILL leaves the socket file")
    let result = daemon.ctl(["get", "wifi"])
    #expect(result.status == 7)
    #expect(result.stderr.contains("stale socket"), "stderr: \(result.stderr)")
    #expect(result.stderr.contains("start it with"), "stderr: \(result.stderr)")
    // The kernel dropped the killed daemon's lock: a new one starts.
    try daemon.start()
    #expect(daemon.ctl(["get", "wifi"]).status == 0)
  }
}

/// Directories someone else made are not trusted (issue 11 item 4).
@Suite struct UntrustedDirectoryTests {
  @Test(.enabled(if: getuid() == 0, "needs root to give a directory to another user (chown)"))
  func aDatabaseDirectoryUnderAnotherUsersDirectoryIsRefused() throws {
    let daemon = try DaemonFixture(start: false)
    let foreign = daemon.directory + "/foreign"
    mkdir(foreign, 0o755)
    #expect(chown(foreign, 65534, 65534) == 0)
    let result = runProcess([
      Products.path("switchd"), "--config", daemon.configDirectory, "--socket", daemon.socketPath,
      "--database", foreign + "/state/switches.db",
    ])
    #expect(result.status == 1)
    #expect(
      result.stderr.contains("refusing to use \(foreign): it is owned by uid 65534, not 0"),
      "stderr: \(result.stderr)")
    #expect(access(foreign + "/state", F_OK) != 0, "nothing was created inside it")
  }
}
