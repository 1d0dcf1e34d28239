import Glibc
import SwitchProtocol
import SwitchTestSupport
import Testing

/// CONFIG.md "Files switchd trusts", tried as an administrator's accident
/// and a local attacker would: FIFOs, links, folders others may write to,
/// files of other users, with the real binaries.
@Suite struct TrustedFilesEndToEndTests {
  /// `switchd --check-config` on the fixture's directory (bounded: a hang fails it).
  static func checkConfig(_ daemon: DaemonFixture) -> ProcessResult {
    runProcess([Products.path("switchd"), "--check-config", daemon.configDirectory], timeout: 60)
  }

  /// The errors a `reload` is refused with (`InvalidConfig`).
  static func reloadErrors(_ client: RPCClient) throws -> [String] {
    let error = try client.error("reload")
    expectErrorObject(error, -32010, "InvalidConfig")
    return (error["data"]?["errors"]?.arrayValue ?? []).compactMap(\.stringValue)
  }

  @Test func aFIFOInPolicyDIsAnErrorNamingItAndHangsNothing() throws {
    let daemon = try DaemonFixture()
    let fifo = daemon.configDirectory + "/policy.d/x.conf"
    #expect(mkfifo(fifo, 0o644) == 0)
    chmod(fifo, 0o644)

    let check = Self.checkConfig(daemon)
    #expect(check.status == 1, "\(check.stdout)\(check.stderr)")
    #expect(check.stdout.contains("policy.d/x.conf: is a FIFO (named pipe), not a regular file"))

    // `reload` is answered and refused; the running configuration stays and
    // writes go on.
    let client = try daemon.client()
    let errors = try Self.reloadErrors(client)
    #expect(errors.count == 1 && errors[0].contains("policy.d/x.conf: is a FIFO"), "\(errors)")
    #expect(try client.result("toggle", keyParam("wifi"))["changed"]?.boolValue == true)

    // SIGHUP as well; then SIGTERM stops it cleanly.
    daemon.signal(SIGHUP)
    let refused = try pollUntil {
      try client.result("status")["lastReload"]?["time"]?.stringValue != nil
    }
    #expect(refused)
    #expect(try client.result("status")["lastReload"]?["result"]?.stringValue == "refused")
    #expect(try client.result("get", keyParam("wifi"))["checked"]?.boolValue == false)
    client.close()
    #expect(daemon.stop() == 0)

    // A daemon started with it says why and does not start.
    #expect(try daemon.startExpectingRefusal() == .exited(1))
    #expect(daemon.log.contains("policy.d/x.conf: is a FIFO"), "\(daemon.log)")
  }

  /// A hidden `.conf` is not read (an editor's `.#name.conf` lock, a
  /// dangling symlink, must not fail the configuration), but it is named
  /// and counted: a hold written there does not vanish without a word.
  @Test func aHiddenConfFileIsNotReadAndCheckConfigSaysSo() throws {
    let daemon = try DaemonFixture(policies: [".50-hidden.conf": "[wifi]\nReadOnly=yes\n"])
    #expect(
      symlink("root@host.1234:1700000000", daemon.configDirectory + "/policy.d/.#50-corp.conf") == 0
    )

    let check = Self.checkConfig(daemon)
    #expect(check.status == 0, "\(check.stdout)\(check.stderr)")
    // Named and counted; an editor's lock, which comes and goes, is not.
    #expect(check.stdout.contains("0 policies, 1 warning"), "\(check.stdout)")
    let warning =
      "policy.d/.50-hidden.conf: warning: a hidden file is not read; "
      + "rename it without the leading dot to use it"
    #expect(check.stdout.contains(warning), "\(check.stdout)")
    #expect(!check.stdout.contains(".#50-corp.conf"), "\(check.stdout)")
    // The running daemon reads it as --check-config did: wifi stays free.
    let client = try daemon.client()
    #expect(try client.result("get", keyParam("wifi"))["readOnly"]?.boolValue == false)
    #expect(try client.result("reload")["policies"]?.int64Value == 0)
  }

  /// A program the configuration runs as the daemon's user that others
  /// may change is warned of at `--check-config` and at start, naming it,
  /// the switch and the setting; the configuration stays valid.
  @Test func anApplyProgramOthersMayChangeIsWarnedOf() throws {
    let daemon = try DaemonFixture(start: false)
    let shared = daemon.directory + "/shared"
    mkdir(shared, 0o755)
    chmod(shared, 0o777)  // anyone may replace what is in it
    let program = shared + "/apply"
    try writeWholeFile(program, "#!/bin/sh\nexit 0\n")
    chmod(program, 0o755)
    let kept = daemon.directory + "/apply"
    try writeWholeFile(kept, "#!/bin/sh\nexit 0\n")
    chmod(kept, 0o755)
    try daemon.writeFile(
      "switches.d/20-programs.conf",
      "[shared-apply]\nLabel=S\nDefault=off\nExecApply=\(program) x\n"
        + "[writable-apply]\nLabel=W\nDefault=off\nExecApply=\(kept)\n")
    let clean = Self.checkConfig(daemon)
    #expect(clean.status == 0, "\(clean.stdout)")
    #expect(
      clean.stdout.contains("ExecApply= of [shared-apply] runs \(program)"), "\(clean.stdout)")
    #expect(clean.stdout.contains("its folder \(shared)"), "\(clean.stdout)")
    #expect(clean.stdout.contains("mode 0777"), "\(clean.stdout)")
    #expect(!clean.stdout.contains("[writable-apply]"), "\(clean.stdout)")

    chmod(kept, 0o757)
    let check = Self.checkConfig(daemon)
    #expect(check.status == 0, "\(check.stdout)")
    #expect(
      check.stdout.contains(
        "ExecApply= of [writable-apply] runs \(kept), but others may write to it (mode 0757)"),
      "\(check.stdout)")
    try daemon.start()
    #expect(daemon.log.contains("[writable-apply] runs \(kept)"), "\(daemon.log)")
    daemon.stop()

    // A safe program, named through a link that anyone may replace.
    chmod(kept, 0o755)
    let link = shared + "/link"
    #expect(symlink(kept, link) == 0)
    try daemon.writeFile(
      "switches.d/20-programs.conf", "[linked-apply]\nLabel=L\nDefault=off\nExecApply=\(link)\n")
    let linked = Self.checkConfig(daemon)
    #expect(
      linked.stdout.contains("ExecApply= of [linked-apply] runs \(link), but its folder \(shared)"),
      "\(linked.stdout)")
  }

  @Test func foldersAndFilesOthersMayWriteAreRefusedNamingOwnerAndMode() throws {
    let daemon = try DaemonFixture()
    let switchesD = daemon.configDirectory + "/switches.d"
    let owner = "uid \(getuid())"

    // A schema folder anyone may write to: a local user could drop in a
    // switch whose apply command runs as the daemon's user at the next reload.
    let marker = daemon.directory + "/evil-ran"
    try daemon.writeFile(
      "switches.d/99-evil.conf",
      "[evil]\nLabel=Evil\nDefault=off\nExecApply=/bin/touch \(marker)\n")
    chmod(switchesD, 0o777)
    let check = Self.checkConfig(daemon)
    #expect(check.status == 1)
    #expect(check.stdout.contains("switches.d: not trusted: owner \(owner)"), "\(check.stdout)")
    #expect(check.stdout.contains("mode 0777"), "\(check.stdout)")
    let client = try daemon.client()
    let errors = try Self.reloadErrors(client)
    #expect(errors.contains { $0.contains("switches.d: not trusted") && $0.contains("0777") })
    expectErrorObject(try client.error("get", keyParam("evil")), -32001, "UnknownSwitch")
    #expect(access(marker, F_OK) != 0, "the planted apply command ran")

    // Sticky does not make it safe (it does for /tmp's files, not for what is read).
    chmod(switchesD, 0o1777)
    #expect(try Self.reloadErrors(client).contains { $0.contains("mode 1777") })
    chmod(switchesD, 0o755)
    daemon.removeFile("switches.d/99-evil.conf")

    // A file its group may write to.
    chmod(switchesD + "/10-test.conf", 0o664)
    let groupWritable = Self.checkConfig(daemon)
    #expect(groupWritable.status == 1)
    #expect(
      groupWritable.stdout.contains("switches.d/10-test.conf: not trusted: owner \(owner)")
        && groupWritable.stdout.contains("mode 0664: its group may write to it"),
      "\(groupWritable.stdout)")
    chmod(switchesD + "/10-test.conf", 0o644)

    // The configuration directory itself.
    chmod(daemon.configDirectory, 0o757)
    #expect(try Self.reloadErrors(client).contains { $0.contains("config: not trusted") })
    chmod(daemon.configDirectory, 0o755)
    #expect(try client.result("reload")["switches"]?.int64Value == 5)
    client.close()

    // At start too.
    daemon.stop()
    chmod(daemon.configDirectory + "/policy.d", 0o777)
    #expect(try daemon.startExpectingRefusal() == .exited(1))
    #expect(daemon.log.contains("policy.d: not trusted"), "\(daemon.log)")
  }

  @Test(.needsRoot("chowns configuration files to another uid"))
  func filesOfAnotherUserAreRefused() throws {
    let daemon = try DaemonFixture()
    let file = daemon.configDirectory + "/switches.d/10-test.conf"
    #expect(chown(file, 65534, 65534) == 0)
    let check = Self.checkConfig(daemon)
    #expect(check.status == 1)
    #expect(
      check.stdout.contains("10-test.conf: not trusted: owner uid 65534"), "\(check.stdout)")
    #expect(check.stdout.contains("it is not owned by uid 0"), "\(check.stdout)")
    let client = try daemon.client()
    #expect(try Self.reloadErrors(client).contains { $0.contains("owner uid 65534") })
    #expect(chown(file, 0, 0) == 0)
    #expect(try client.result("reload")["switches"]?.int64Value == 5)
  }

  @Test(.needsRoot("a root-only file, read by switchctl as another uid"))
  func aLinkToARootOnlyFileLeaksNoLineToOtherUsers() throws {
    let daemon = try DaemonFixture()
    // Like /etc/shadow: root's, mode 0600 (it passes the ownership test, so
    // its lines may be quoted, but to administrators only).
    let secret = daemon.directory + "/shadow"
    try writeWholeFile(secret, "root:$6$secrethash:19000:0:99999:7:::\n")
    chmod(secret, 0o600)
    #expect(symlink(secret, daemon.configDirectory + "/policy.d/50-link.conf") == 0)

    let client = try daemon.client()
    let errors = try Self.reloadErrors(client)
    #expect(!errors.isEmpty)
    client.close()

    let asOther = daemon.ctl(["status"], asUser: 65534)
    #expect(asOther.status == 0, "\(asOther.stderr)")
    #expect(!asOther.stdout.contains("secrethash"), "\(asOther.stdout)")
    #expect(asOther.stdout.contains("refused (\(errors.count) error"), "\(asOther.stdout)")
    let json = daemon.ctl(["--json", "status"], asUser: 65534)
    #expect(!json.stdout.contains("secrethash"), "\(json.stdout)")
    let reload = try JSONParser.parse(json.stdout, maxDepth: 64)["lastReload"]
    #expect(reload?["errorCount"]?.int64Value == Int64(errors.count))
    #expect(reload?["errors"] == nil)

    // An administrator is shown them.
    #expect(daemon.ctl(["status"]).stdout.contains("50-link.conf"))

    // A link to something that is not a regular file is never opened.
    unlink(daemon.configDirectory + "/policy.d/50-link.conf")
    let fifo = daemon.directory + "/fifo"
    #expect(mkfifo(fifo, 0o600) == 0)
    #expect(symlink(fifo, daemon.configDirectory + "/policy.d/50-link.conf") == 0)
    let check = Self.checkConfig(daemon)
    #expect(
      check.stdout.contains("50-link.conf: is a symbolic link to a FIFO (named pipe)"),
      "\(check.stdout)")
  }

  @Test(.needsRoot("plants database files owned by another uid"))
  func databaseFilesOfAnotherUserAreRefusedAtStart() throws {
    let daemon = try DaemonFixture(start: false)
    // A sticky folder anyone may write to, as /tmp is, is refused itself:
    // others could plant files there under switchd's names.
    let state = daemon.directory + "/state"
    mkdir(state, 0o1777)
    chmod(state, 0o1777)
    #expect(try daemon.startExpectingRefusal() == .exited(1))
    #expect(
      daemon.log.contains("refusing to use \(state): others may write to it (mode 1777)"),
      "\(daemon.log)")
    // Files planted in the folder before it was made safe (by root here).
    chmod(state, 0o700)
    for suffix in ["", "-wal", "-shm", "-journal"] {
      let planted = daemon.databasePath + suffix
      try writeWholeFile(planted, "")
      chmod(planted, 0o666)
      #expect(chown(planted, 65534, 65534) == 0)
      #expect(try daemon.startExpectingRefusal() == .exited(1), "\(suffix)")
      #expect(
        daemon.log.contains("refusing to use \(planted): it is owned by uid 65534"),
        "\(daemon.log)")
      #expect((try? readWholeFileBytes(planted))?.isEmpty == true, "the planted file was written")
      for other in ["", "-wal", "-shm", "-journal"] where other != suffix {
        #expect(!fileExists(daemon.databasePath + other), "\(other) was created")
      }
      unlink(planted)
    }
    try daemon.start()
    var status = stat()
    #expect(stat(daemon.databasePath, &status) == 0 && status.st_uid == 0)
  }

  @Test func aDatabaseRemovedUnderTheDaemonRefusesWritesAndIsNoticedAtRestart() throws {
    let daemon = try DaemonFixture()
    let client = try daemon.client()
    for _ in 0..<3 { _ = try client.result("toggle", keyParam("wifi")) }
    // Held open, to see that the stop writes nothing into the removed
    // files (its checkpoint grew the WAL, an audit).
    let held = ["", "-wal"].map { open(daemon.databasePath + $0, O_RDONLY | O_CLOEXEC) }
    defer { for fd in held { close(fd) } }
    func sizes() -> [Int] {
      held.map { fd in
        var status = stat()
        return fstat(fd, &status) == 0 ? Int(status.st_size) : -1
      }
    }
    for suffix in ["", "-wal", "-shm"] { unlink(daemon.databasePath + suffix) }

    for _ in 0..<2 {
      let error = try client.error("toggle", keyParam("wifi"))
      expectErrorObject(error, -32007, "StorageFailure")
      #expect(
        error["message"]?.stringValue?.contains("the database file was removed or replaced")
          == true,
        "\(error.jsonText)")
      #expect(error["message"]?.stringValue?.contains("restart switchd") == true)
    }
    // Reads go on from memory, as of the last acknowledged write.
    let wifi = try client.result("get", keyParam("wifi"))
    #expect(wifi["checked"]?.boolValue == false && wifi["revision"]?.int64Value == 3)
    let said = daemon.log.split(separator: "\n").filter { $0.contains("removed or replaced") }
    #expect(said.count == 1, "\(said)")
    client.close()
    let before = sizes()
    #expect(daemon.stop() == 0)
    #expect(sizes() == before, "the stop wrote into the removed database")

    // Started again on what is now an empty database: the log says so,
    // and the revisions it announced are not used again.
    try daemon.start()
    #expect(daemon.log.contains("is at revision 0, but switchd announced revision 3 before"))
    #expect(try daemon.client().result("status")["revision"]?.int64Value == 4)
  }

  @Test func aDatabaseReplacedUnderTheDaemonRefusesWrites() throws {
    let daemon = try DaemonFixture()
    let client = try daemon.client()
    _ = try client.result("toggle", keyParam("wifi"))
    let copy = daemon.directory + "/state/copy.db"
    try writeWholeFile(copy, (try? readWholeFileBytes(daemon.databasePath)) ?? [])
    #expect(rename(copy, daemon.databasePath) == 0)
    expectErrorObject(try client.error("toggle", keyParam("wifi")), -32007, "StorageFailure")
    #expect(try client.result("get", keyParam("wifi"))["revision"]?.int64Value == 1)
  }
}
