import Glibc
import SwitchProtocol
import SwitchSystem
import SwitchTestSupport
import Testing

/// Issue 21 item 5 against the real binaries: `switchctl backup FILE` (for
/// administrators, consistent while writes go on, written by switchctl with
/// the caller's own rights), the restore procedure of docs/configuration.md,
/// and watchers resuming beyond the restored revision.
@Suite struct BackupEndToEndTests {
  /// `switchctl --json backup PATH` as root; the daemon's result.
  static func backUp(_ daemon: DaemonFixture, to path: String) throws -> (
    revision: Int64, bytes: Int64
  ) {
    let run = daemon.ctl(["--json", "backup", path])
    guard run.status == 0, let result = try? JSONParser.parse(run.stdout, maxDepth: 8),
      let revision = result["revision"]?.int64Value, let bytes = result["bytes"]?.int64Value
    else { throw FixtureError("backup failed (\(run.status)): \(run.stdout) \(run.stderr)") }
    return (revision, bytes)
  }

  static func revision(_ daemon: DaemonFixture) throws -> Int64 {
    try daemon.client().result("status")["revision"]?.int64Value ?? -1
  }

  @Test func backupsWhileWritesGoOnAreConsistentAndAStoppedDaemonStartsFromOne() throws {
    let daemon = try DaemonFixture()
    let stop = BackupSupport.StopFlag()
    let socket = daemon.socketPath
    let toggler = TestThread { BackupSupport.toggleUntilStopped(socket, stop) }
    defer {
      stop.raised.store(true, ordering: .relaxed)
      _ = toggler.join()
    }
    #expect(try pollUntil(seconds: 30) { try Self.revision(daemon) >= 20 })

    var taken: [(path: String, revision: Int64)] = []
    for n in 1...3 {
      let path = daemon.directory + "/backup-\(n).db"
      let (revision, bytes) = try Self.backUp(daemon, to: path)
      taken.append((path, revision))
      var status = stat()
      #expect(stat(path, &status) == 0 && Int64(status.st_size) == bytes)
      #expect(status.st_mode & 0o777 == 0o600)
      #expect(Durability.Python.integrityCheck(path) == "ok")
      // As of one commit: exactly revisions 1…R, and wifi as the R-th toggle left it.
      let logged = BackupSupport.loggedRevisions(path)
      #expect(Durability.consecutiveRunProblem(logged, from: 1, to: revision) == nil, "\(path)")
      #expect(
        BackupSupport.loggedValue(path, key: "wifi")
          == (BackupSupport.wifiAfterToggles(revision) ? "1" : "0"))
    }
    // The toggles went on past the last copy.
    let last = taken[taken.count - 1]
    #expect(try pollUntil(seconds: 30) { try Self.revision(daemon) > last.revision + 5 })
    stop.raised.store(true, ordering: .relaxed)
    #expect(toggler.join() > 0)
    let reached = try Self.revision(daemon)
    // The copy was made beside the database and is gone.
    #expect(
      BackupSupport.names(in: daemon.directory + "/state").filter { $0.hasSuffix(".backup") }
        .isEmpty)

    #expect(daemon.stop() == 0)
    try BackupSupport.restore(daemon, from: last.path)
    try daemon.start()
    let client = try daemon.client()
    // Numbered on above what was announced: the restore is revision
    // reached + 1, and no number a client saw names another change.
    let restored = reached + 1
    #expect(try client.result("status")["revision"]?.int64Value == restored)
    let wifi = try client.result("get", keyParam("wifi"))
    #expect(wifi["checked"]?.boolValue == BackupSupport.wifiAfterToggles(last.revision))
    #expect(wifi["revision"]?.int64Value == last.revision)
    let newest = try client.result("history", #"{"limit":1}"#)["entries"]?.arrayValue?.first
    #expect(newest?["revision"]?.int64Value == last.revision)

    // A watcher that had seen the lost revisions, or any before the
    // restore, must read again: HistoryCompacted, from the restore on.
    for since in [reached, last.revision, 1] {
      let error = try client.error("watch", "{\"since\":\(since)}")
      expectErrorObject(error, -32009, "HistoryCompacted")
      #expect(error["data"]?["oldest"]?.int64Value == restored + 1)
    }
    _ = try client.result("watch", "{\"since\":\(restored)}")
    // The counter goes on from the restore.
    let toggled = try client.result("toggle", keyParam("wifi"))
    #expect(toggled["switch"]?["revision"]?.int64Value == restored + 1)
    client.close()

    // And so it stays across a restart: the floor is in the database.
    #expect(daemon.stop() == 0)
    try daemon.start()
    let again = try daemon.client()
    #expect(try again.result("status")["revision"]?.int64Value == restored + 1)
    expectErrorObject(
      try again.error("watch", "{\"since\":\(reached)}"), -32009, "HistoryCompacted")
    _ = try again.result("watch", "{\"since\":\(restored)}")
    let replayed = try again.nextEvent()
    #expect(replayed["revision"]?.int64Value == restored + 1)
  }

  /// `switchctl watch` and the docs' Python client follow a daemon across a
  /// restore to an older revision: told `HistoryCompacted` on resuming,
  /// each watches again from the current revision instead of exiting, and
  /// prints the next change, numbered above the revisions they had seen.
  @Test func watchersStartAgainFromTheRestoredRevision() throws {
    guard let python = Durability.Python.path else {
      Issue.record("python3 is needed for the docs' example client")
      return
    }
    let daemon = try DaemonFixture()
    for _ in 0..<3 { #expect(daemon.ctl(["toggle", "wifi"]).status == 0) }
    let backup = daemon.directory + "/backup.db"
    #expect(try Self.backUp(daemon, to: backup).revision == 3)
    for _ in 0..<2 { #expect(daemon.ctl(["toggle", "wifi"]).status == 0) }

    let watchLog = daemon.directory + "/watch.log"
    let pythonLog = daemon.directory + "/python.log"
    let clientPath = daemon.directory + "/client.py"
    try writeWholeFile(clientPath, try BackupSupport.documentedPythonClient())
    let watch = try Child(
      [Products.path("switchctl"), "--socket", daemon.socketPath, "--json", "watch", "wifi"],
      logPath: watchLog)
    let documented = try Child([python, clientPath, daemon.socketPath, "wifi"], logPath: pythonLog)
    func bothWatch() throws -> Bool {
      try daemon.client().result("status")["watches"]?.int64Value == 2
    }
    #expect(try pollUntil(seconds: 30, bothWatch))
    for _ in 0..<2 { #expect(daemon.ctl(["toggle", "wifi"]).status == 0) }
    func printed(_ line: String, in log: String) -> Bool {
      ((try? readWholeFile(log)) ?? "").split(separator: "\n").contains { $0.contains(line) }
    }
    #expect(pollUntil(seconds: 30) { printed("7 wifi: off (toggle)", in: pythonLog) })
    #expect(pollUntil(seconds: 30) { printed(#""revision":7,"#, in: watchLog) })

    #expect(daemon.stop() == 0)
    try BackupSupport.restore(daemon, from: backup)
    try daemon.start()
    #expect(
      try pollUntil(seconds: 30, bothWatch),
      "both watch again: \((try? readWholeFile(pythonLog)) ?? "")")
    #expect(daemon.ctl(["toggle", "wifi"]).status == 0)
    // The restore is revision 8 (7 was announced), this toggle 9.
    #expect(pollUntil(seconds: 30) { printed("9 wifi: on (toggle)", in: pythonLog) })
    #expect(pollUntil(seconds: 30) { printed(#""revision":9,"#, in: watchLog) })
    #expect(
      printed(
        "switchd no longer has the changes after revision 7 where this watch was "
          + "(its oldest is 9)", in: watchLog))
    #expect(!watch.hasExited && !documented.hasExited)
  }

  /// A database replaced together with its lock file (so switchd cannot
  /// tell what it had announced) comes back at a lower revision: `switchctl
  /// watch`, resuming beyond it, is told `InvalidParams` with
  /// `data.revision`, says so, and watches on from the current revision.
  @Test func aWatcherFollowsADatabaseReplacedWithItsLockFile() throws {
    let daemon = try DaemonFixture()
    for _ in 0..<3 { #expect(daemon.ctl(["toggle", "wifi"]).status == 0) }
    let watchLog = daemon.directory + "/watch.log"
    let watch = try Child(
      [Products.path("switchctl"), "--socket", daemon.socketPath, "--json", "watch", "wifi"],
      logPath: watchLog)
    #expect(
      try pollUntil(seconds: 30) {
        try daemon.client().result("status")["watches"]?.int64Value == 1
      })
    #expect(daemon.ctl(["toggle", "wifi"]).status == 0)
    func printed(_ line: String) -> Bool {
      ((try? readWholeFile(watchLog)) ?? "").contains(line)
    }
    #expect(pollUntil(seconds: 30) { printed(#""revision":4,"#) })
    #expect(daemon.stop() == 0)
    for suffix in ["", "-wal", "-shm", ".lock"] { unlink(daemon.databasePath + suffix) }
    try daemon.start()
    #expect(
      try pollUntil(seconds: 30) {
        try daemon.client().result("status")["watches"]?.int64Value == 1
      })
    #expect(daemon.ctl(["toggle", "wifi"]).status == 0)
    #expect(pollUntil(seconds: 30) { printed(#""revision":1,"#) })
    #expect(printed("switchd is at revision 0, behind revision 4 where this watch was"))
    #expect(!watch.hasExited)
  }

  @Test(.needsRoot("switchctl runs as a user who administers nothing, through setpriv"))
  func onlyAdministratorsBackUp() throws {
    let daemon = try DaemonFixture()
    #expect(daemon.ctl(["toggle", "wifi"]).status == 0)
    let own = daemon.directory + "/user"
    mkdir(own, 0o700)
    chmod(own, 0o700)  // not the umask's: another test may narrow it while it binds
    chown(own, humanUID, humanUID)
    let target = own + "/backup.db"
    let refused = daemon.ctl(["backup", target], asUser: humanUID)
    #expect(refused.status == 6, "\(refused.stderr)")
    #expect(refused.stderr.contains("You may not call backup"), "\(refused.stderr)")
    #expect(access(target, F_OK) != 0, "the file switchctl created stays behind")

    // The method is refused before its params are looked at.
    let relay = try UserRelay(daemon)
    let user = try relay.client()
    expectErrorObject(
      try user.error("backup", #"{"path":"/etc/shadow"}"#), -32004, "PermissionDenied")
    let root = try daemon.client()
    let invalid = try root.error("backup", #"{"path":"/etc/shadow"}"#)
    expectErrorObject(invalid, -32602, "InvalidParams")
    #expect(invalid["data"]?["param"]?.stringValue == "path")
  }

  /// An administrator who is not root backs up into a directory only root
  /// may write: switchctl cannot create the file, says so, and nothing is
  /// created. Into their own directory it works, and the file is theirs:
  /// switchctl wrote it, not the daemon (which runs as root).
  @Test(.needsRoot("it creates a group (groupadd) and runs switchctl as another uid"))
  func theDaemonNeverWritesWhereTheCallerCouldNot() throws {
    let admins = try switchdTestGroup("switchd-test-admins")
    let daemon = try DaemonFixture(daemonConf: "[Daemon]\nAdminGroup=switchd-test-admins\n")
    #expect(daemon.ctl(["toggle", "wifi"]).status == 0)
    let asMember =
      ["/usr/bin/setpriv", "--reuid=\(systemUID)", "--regid=\(systemUID)", "--groups=\(admins)"]
      + [Products.path("switchctl"), "--socket", daemon.socketPath, "backup"]

    let locked = daemon.directory + "/locked"
    mkdir(locked, 0o755)
    chmod(locked, 0o755)
    let refused = runProcess(asMember + [locked + "/backup.db"])
    #expect(refused.status == 1, "\(refused.stderr)")
    #expect(
      refused.stderr == "switchctl: cannot create \(locked)/backup.db: Permission denied\n")
    #expect(BackupSupport.names(in: locked).isEmpty)

    let own = daemon.directory + "/member"
    mkdir(own, 0o700)
    chmod(own, 0o700)  // not the umask's: another test may narrow it while it binds
    chown(own, systemUID, systemUID)
    let made = runProcess(asMember + [own + "/backup.db"])
    #expect(made.status == 0, "\(made.stderr)")
    #expect(made.stdout.hasPrefix("backup of revision 1 written to \(own)/backup.db ("))
    var status = stat()
    #expect(stat(own + "/backup.db", &status) == 0)
    #expect(status.st_uid == systemUID && status.st_mode & 0o777 == 0o600)
    #expect(Durability.Python.integrityCheck(own + "/backup.db") == "ok")
    #expect(BackupSupport.loggedRevisions(own + "/backup.db") == [1])
  }

  /// The daemon reads with `recv`, so descriptors a client sends with its
  /// requests, `backup` included, never stay open in the daemon; the copy
  /// it passes is not kept either, also when its client leaves without
  /// reading it. (SQLite's descriptors of the database are left out of the
  /// count: SQLite decides when it closes those.)
  @Test func descriptorsAreNeitherKeptFromClientsNorLeftBehind() throws {
    let daemon = try DaemonFixture()
    let fd = try connectUnixSocket(daemon.socketPath)
    let client = RPCClient(connected: fd)
    _ = try client.result("toggle", keyParam("wifi"))
    let baseline = BackupSupport.descriptors(of: daemon)
    #expect(baseline["socket", default: 0] >= 2, "the listener and this client")

    func sendPassing(_ line: String, count: Int) throws {
      var stray: [Int32] = []
      for _ in 0..<count { stray.append(open("/dev/null", O_RDONLY | O_CLOEXEC)) }
      defer { for descriptor in stray { close(descriptor) } }
      let bytes = Array(line.utf8)
      let sent = bytes.withUnsafeBytes {
        DescriptorPassing.send(fd, $0, passing: stray, flags: Int32(MSG_NOSIGNAL))
      }
      guard sent == bytes.count else { throw FixtureError("send failed: errno \(errno)") }
    }
    for id in 1...64 {
      try sendPassing(
        #"{"jsonrpc":"2.0","id":\#(id),"method":"status"}"# + "\n",
        count: DescriptorPassing.maxPerMessage)
      #expect(try client.readJSON()["result"] != nil)
    }
    try sendPassing(#"{"jsonrpc":"2.0","id":99,"method":"backup"}"# + "\n", count: 4)
    #expect(try client.readJSON()["result"]?["revision"]?.int64Value == 1)
    // The daemon closes its copy right after the send that passed it.
    #expect(pollUntil { BackupSupport.descriptors(of: daemon) == baseline })

    // A client that half-closes after asking, and leaves without reading:
    // the daemon answers, passes the copy, closes the connection, keeps nothing.
    let leaving = try connectUnixSocket(daemon.socketPath)
    _ = sendAll(leaving, Array(#"{"jsonrpc":"2.0","id":1,"method":"backup"}"#.utf8 + [10]))
    shutdown(leaving, Int32(SHUT_WR))
    #expect(
      pollUntil {
        daemon.log.split(separator: "\n").filter { $0.contains("a backup of revision") }.count == 2
      })
    close(leaving)
    #expect(pollUntil { BackupSupport.descriptors(of: daemon) == baseline })
    #expect(!BackupSupport.names(in: daemon.directory + "/state").contains("switches.db.backup"))
    // And a backup is still served after it.
    #expect(try client.result("backup")["revision"]?.int64Value == 1)
  }
}
