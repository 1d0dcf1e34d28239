import Glibc
import SwitchProtocol
import SwitchTestSupport
import Testing

/// Storage faults for real: a full filesystem under a running daemon, and
/// database files it must refuse at start (damaged, or from a newer schema)
/// without touching them.
@Suite struct DurabilityStorageFaultTests {
  // MARK: Disk full

  /// The database lives on a 1 MiB tmpfs that is then filled to the last
  /// page. Writes fail with `StorageFailure` and change nothing — not the
  /// state, not the revision, not history, no event — while reads go on;
  /// once space is freed the next write takes the next revision.
  @Test(
    .enabled(
      if: Durability.Tmpfs.isMountable,
      "mounting a tmpfs needs root (CAP_SYS_ADMIN); in CI run this suite in a privileged container"
    ))
  func aFullDiskFailsWritesWithStorageFailureAndChangesNothing() throws {
    let daemon = try DaemonFixture(start: false)
    let state = daemon.directory + "/state"
    mkdir(state, 0o755)
    guard Durability.Tmpfs.mount(at: state, size: "1m") else {
      Issue.record("mounting a tmpfs at \(state) failed although the probe succeeded")
      return
    }
    defer {
      daemon.stop()
      Durability.lazyUnmount(state)
    }
    let (watcher, client) = try startWithThreeChanges(daemon)
    let filler = Durability.Tmpfs.fill(state)
    #expect(fileExists(filler))

    // The WAL may still have room in pages it already holds: write until a
    // commit needs a page it cannot get (bounded).
    var committed: Int64 = 3
    var wifiChecked = true  // on by default, toggled twice
    var failure: JSONValue?
    for _ in 0..<200 {
      let response = try client.call("toggle", #"{"key":"wifi"}"#)
      if let error = response["error"] {
        failure = error
        break
      }
      let revision = response["result"]?["switch"]?["revision"]?.int64Value
      #expect(revision == committed + 1)
      committed = revision ?? committed + 1
      wifiChecked.toggle()
      #expect(response["result"]?["switch"]?["checked"]?.boolValue == wifiChecked)
    }
    guard let failure else {
      Issue.record("200 writes on a full filesystem all succeeded")
      return
    }
    #expect(failure["code"]?.int64Value == -32007, "\(failure.jsonText)")
    #expect(failure["data"]?["name"]?.stringValue == "StorageFailure")
    #expect(failure["message"]?.stringValue?.isEmpty == false)

    // Nothing changed, and reads are served.
    func expectUnchanged(_ why: String) throws {
      let wifi = try client.result("get", #"{"key":"wifi"}"#)
      #expect(wifi["revision"]?.int64Value == committed, "\(why)")
      #expect(wifi["checked"]?.boolValue == wifiChecked, "\(why)")
      #expect(try client.result("status")["revision"]?.int64Value == committed, "\(why)")
      #expect(try client.result("list")["revision"]?.int64Value == committed, "\(why)")
      let log = try Durability.fullHistory(client)
      #expect(Durability.revisions(log) == Array(1...committed), "\(why)")
    }
    try expectUnchanged("after the first failure")

    // Other writes fail the same way, one by one and as one pipelined group.
    // Each is followed by a call whose answer depends on the failed one
    // having left no trace in the daemon's copy of the switch.
    let reason = String(repeating: "r", count: 1000)
    let refusedThenProbe: [(String, String, String, String)] = [
      (
        "set", "{\"key\":\"wifi\",\"checked\":\(!wifiChecked)}",
        "set", "{\"key\":\"wifi\",\"checked\":\(wifiChecked)}"
      ),
      (
        "lock", "{\"key\":\"email.marketing\",\"reason\":\"\(reason)\"}",
        "unlock", #"{"key":"email.marketing"}"#
      ),
      ("disable", #"{"key":"notifications.mail"}"#, "enable", #"{"key":"notifications.mail"}"#),
    ]
    for (method, params, probe, probeParams) in refusedThenProbe {
      let error = try client.error(method, params)
      #expect(error["code"]?.int64Value == -32007, "\(method): \(error.jsonText)")
      #expect(error["data"]?["name"]?.stringValue == "StorageFailure")
      // Changes nothing, so needs no commit: succeeds even on a full disk.
      let unchanged = try client.call(probe, probeParams)
      #expect(
        unchanged["result"]?["changed"]?.boolValue == false,
        "\(probe) after a failed \(method): \(unchanged.jsonText)")
    }
    // A switch whose disabling failed is still writable (the write fails
    // for want of space, not with Disabled).
    let notDisabled = try client.error("toggle", #"{"key":"notifications.mail"}"#)
    #expect(notDisabled["data"]?["name"]?.stringValue == "StorageFailure")
    var group = ""
    for id in 1...3 {
      group += Durability.requestLine(id: 1000 + Int64(id), "toggle", #"{"key":"wifi"}"#)
    }
    group += Durability.requestLine(
      id: 1004, "set", "{\"key\":\"wifi\",\"checked\":\(!wifiChecked)}")
    try client.send(raw: group)
    for id in 1...4 {
      let answer = try client.readJSON()
      #expect(answer["id"]?.int64Value == 1000 + Int64(id))
      #expect(answer["error"]?["code"]?.int64Value == -32007, "\(answer.jsonText)")
    }
    let same = try client.result("set", "{\"key\":\"wifi\",\"checked\":\(wifiChecked)}")
    #expect(same["changed"]?.boolValue == false)
    try expectUnchanged("after more failed writes")

    // No event for what did not commit: the watcher's next line is its answer.
    #expect(try watcher.result("status")["revision"]?.int64Value == committed)
    let events = watcher.notifications.map { $0["params"]?["revision"]?.int64Value ?? -1 }
    #expect(events == Array(1...committed))
    watcher.notifications.removeAll()

    // Space again: the next write takes the next revision, and is seen once.
    unlink(filler)
    let next = try client.result("toggle", #"{"key":"wifi"}"#)
    #expect(next["switch"]?["revision"]?.int64Value == committed + 1)
    let event = try watcher.nextEvent()
    #expect(event["revision"]?.int64Value == committed + 1)
    // The log says the fault is over, as it said when it began.
    #expect(daemon.log.contains("writes are stored again, after "), "\(daemon.log)")
    #expect(Durability.revisions(try Durability.fullHistory(client)) == Array(1...committed + 1))

    // And it is on disk: after a restart, and to SQLite's own check.
    #expect(daemon.stop() == 0)
    #expect(Durability.Python.integrityCheck(daemon.databasePath) == "ok")
    try daemon.start()
    let after = try daemon.client().result("get", #"{"key":"wifi"}"#)
    #expect(after["revision"]?.int64Value == committed + 1)
    #expect(after["checked"]?.boolValue == !wifiChecked)
  }

  /// Starts `daemon` on its mounted state directory and commits revisions 1–3 (wifi,
  /// bluetooth, wifi); returns a client watching everything since before them, and a client.
  private func startWithThreeChanges(_ daemon: DaemonFixture) throws -> (
    watcher: RPCClient, client: RPCClient
  ) {
    try daemon.start()
    let watcher = try daemon.client()
    _ = try watcher.result("watch")
    let client = try daemon.client()
    for key in ["wifi", "bluetooth", "wifi"] {
      _ = try client.result("toggle", "{\"key\":\"\(key)\"}")
    }
    return (watcher, client)
  }

  // MARK: Read-only filesystem

  /// The filesystem under the database turns read-only while switchd runs
  /// (an ext4 error with `errors=remount-ro`, as a failing disk causes): files
  /// already open for writing cannot be written either. Writes fail with
  /// `StorageFailure` and change nothing; reads go on. Once the operator has
  /// repaired the filesystem and restarted switchd, every acknowledged write
  /// is there and the next one takes the next revision.
  @Test(
    .enabled(
      if: Durability.LoopExt4.isMountable,
      "needs root, a loop device, mkfs.ext4/e2fsck and ext4's trigger_fs_error in sysfs"))
  func aFilesystemTurningReadOnlyFailsWritesAndChangesNothing() throws {
    let daemon = try DaemonFixture(start: false)
    let state = daemon.directory + "/state"
    let image = daemon.directory + "/state.img"
    mkdir(state, 0o755)
    guard Durability.LoopExt4.create(image, megabytes: 8),
      Durability.LoopExt4.mount(image, at: state)
    else {
      Issue.record("could not make and mount an ext4 image although the probe could")
      return
    }
    defer {
      daemon.stop()
      Durability.LoopExt4.unmount(state, lazily: true)
    }
    let (watcher, client) = try startWithThreeChanges(daemon)
    #expect(Durability.LoopExt4.forceReadOnly(state))

    for (method, params) in [
      ("toggle", #"{"key":"wifi"}"#), ("set", #"{"key":"bluetooth","checked":false}"#),
      ("disable", #"{"key":"notifications.mail","reason":"maintenance"}"#),
    ] {
      let error = try client.error(method, params)
      #expect(error["code"]?.int64Value == -32007, "\(method): \(error.jsonText)")
      #expect(error["data"]?["name"]?.stringValue == "StorageFailure")
    }
    // The failed ones left no trace: a no-op is still a no-op, and the switch
    // whose disabling failed is not disabled.
    let same = try client.result("set", #"{"key":"wifi","checked":true}"#)
    #expect(same["changed"]?.boolValue == false)
    let notDisabled = try client.error("toggle", #"{"key":"notifications.mail"}"#)
    #expect(notDisabled["data"]?["name"]?.stringValue == "StorageFailure")
    let wifi = try client.result("get", #"{"key":"wifi"}"#)
    #expect(wifi["revision"]?.int64Value == 3)
    #expect(wifi["checked"]?.boolValue == true)
    #expect(try client.result("get", #"{"key":"notifications.mail"}"#)["disabled"] == .bool(false))
    #expect(try client.result("status")["revision"]?.int64Value == 3)
    #expect(Durability.revisions(try Durability.fullHistory(client)) == [1, 2, 3])
    #expect(try watcher.result("status")["revision"]?.int64Value == 3)
    #expect(watcher.notifications.map { $0["params"]?["revision"]?.int64Value ?? -1 } == [1, 2, 3])

    #expect(daemon.stop() == 0)
    #expect(Durability.LoopExt4.repairAndRemount(image, at: state))
    try daemon.start()
    let after = try daemon.client()
    let restarted = try after.result("get", #"{"key":"wifi"}"#)
    #expect(restarted["revision"]?.int64Value == 3)
    #expect(restarted["checked"]?.boolValue == true)
    let next = try after.result("toggle", #"{"key":"wifi"}"#)
    #expect(next["switch"]?["revision"]?.int64Value == 4)
    #expect(Durability.revisions(try Durability.fullHistory(after)) == [1, 2, 3, 4])
    #expect(daemon.stop() == 0)
    #expect(Durability.Python.integrityCheck(daemon.databasePath) == "ok")
  }

  // MARK: Refused at start

  enum Damage: String, CaseIterable, Sendable {
    /// Random bytes where the database was: not a database at all.
    case garbage
    /// A real database whose second page (a table's root) is random bytes.
    case secondPage
    /// A real database cut to half its length.
    case truncated
    /// As `secondPage`, in a database in rollback-journal mode (as a
    /// restored backup or a copy made by another tool may be).
    case secondPageOfRollbackJournalDatabase
    /// The count of fragmented bytes in a b-tree page's header made wrong
    /// (the first after page 1: page 2 may hold the overflow of the
    /// schema's text): every query still reads the file, only SQLite's
    /// quick_check sees it (switchd runs it alongside the load of a WAL file).
    case fragmentCountOfABTreePage
    /// A column of a table renamed in the schema's text (a byte of the text
    /// changed, or an edit by hand): the file reads, quick_check passes,
    /// and switchd's statements do not prepare.
    case columnNameInTheSchema
    /// An index of the schema renamed in its text: switchd's statement that
    /// reads through it (`INDEXED BY`) does not prepare.
    case indexNameInTheSchema
    /// As `columnNameInTheSchema`, in a file of the version before this
    /// build's: its migration does not touch that table and runs cleanly,
    /// and is rolled back when this build's statements then do not prepare
    /// (the file keeps its version and its bytes).
    case columnNameInTheSchemaOfAnOlderVersion
  }

  /// A damaged database is never silently replaced or repaired: switchd
  /// exits non-zero, its log names the file and says what to do, and the
  /// file keeps its exact bytes.
  @Test(arguments: Damage.allCases)
  func aDamagedDatabaseIsRefusedAtStartAndLeftAsItWas(_ damage: Damage) throws {
    let daemon = try DaemonFixture()
    try Self.writeSomeHistory(daemon)
    let path = daemon.databasePath
    guard var bytes = try? readWholeFileBytes(path), bytes.count >= 4 * 4096 else {
      Issue.record("the database is missing or too small to damage")
      return
    }
    let pageSize = Int(bytes[16]) << 8 | Int(bytes[17])
    switch damage {
    case .garbage:
      try writeWholeFile(path, Durability.randomBytes(bytes.count))
    case .secondPage:
      try patchFile(path, at: pageSize, Durability.randomBytes(pageSize))
    case .truncated:
      try writeWholeFile(path, Array(bytes[0..<(bytes.count / pageSize / 2 * pageSize)]))
    case .secondPageOfRollbackJournalDatabase:
      let converted = Durability.Python.execute(path, "PRAGMA journal_mode=DELETE;")
      #expect(converted.status == 0, "\(converted.stderr)")
      bytes = (try? readWholeFileBytes(path)) ?? []
      #expect(bytes.count > 19 && bytes[18] == 1 && bytes[19] == 1, "not in rollback mode")
      try patchFile(path, at: pageSize, Durability.randomBytes(pageSize))
    case .fragmentCountOfABTreePage:
      // Byte 7 of a b-tree page's header; its byte 0 is the page's type
      // (2, 5, 10 or 13; page 1's header starts at 100).
      let page = try #require(
        (1..<(bytes.count / pageSize)).first { [2, 5, 10, 13].contains(bytes[$0 * pageSize]) })
      try patchFile(path, at: page * pageSize + 7, [bytes[page * pageSize + 7] &+ 9])
    case .columnNameInTheSchema:
      let edited = Durability.Python.execute(
        path,
        """
        PRAGMA writable_schema = ON;
        UPDATE sqlite_schema SET sql = replace(sql, 'p_read_only ', 'p_read_onlx ')
          WHERE name = 'change_details';
        """)
      #expect(edited.status == 0, "\(edited.stderr)")
    case .indexNameInTheSchema:
      let edited = Durability.Python.execute(
        path,
        """
        PRAGMA writable_schema = ON;
        UPDATE sqlite_schema SET name = 'user_values_with_deadlinex',
          sql = replace(sql, 'user_values_with_deadlines', 'user_values_with_deadlinex')
          WHERE name = 'user_values_with_deadlines';
        """)
      #expect(edited.status == 0, "\(edited.stderr)")
    case .columnNameInTheSchemaOfAnOlderVersion:
      // Schema 12: migration 13 adds only this index, on `user_values`.
      let edited = Durability.Python.execute(
        path,
        """
        DROP INDEX user_values_with_deadlines;
        PRAGMA user_version = 12;
        PRAGMA writable_schema = ON;
        UPDATE sqlite_schema SET sql = replace(sql, 'p_read_only ', 'p_read_onlx ')
          WHERE name = 'change_details';
        """)
      #expect(edited.status == 0, "\(edited.stderr)")
    }
    let before = try? readWholeFileBytes(path)
    let (outcome, log) = try Self.startRefused(daemon)
    #expect(outcome != .served, "switchd served a damaged database")
    if case .exited(let status) = outcome {
      #expect((1...125).contains(status), "status \(status)")
    }
    #expect(log.contains(path), "the log does not name the file: \(log)")
    let advice = ["move it aside", "restore", "backup", "delete", "remove"]
    #expect(advice.contains { log.lowercased().contains($0) }, "no advice in: \(log)")
    let changed = Durability.byteDifferences(before, try? readWholeFileBytes(path))
    #expect(changed == nil, "switchd changed the damaged file: \(changed ?? "")")
  }

  /// A database written by a newer schema (`user_version` 99) is refused,
  /// not downgraded nor migrated: the file keeps its bytes and its version.
  @Test func aDatabaseFromANewerSchemaIsRefusedNotDowngraded() throws {
    let daemon = try DaemonFixture()
    try Self.writeSomeHistory(daemon)
    let path = daemon.databasePath
    let bumped = Durability.Python.execute(path, "PRAGMA user_version=99;")
    #expect(bumped.status == 0, "\(bumped.stderr)")
    let before = try? readWholeFileBytes(path)
    let (outcome, log) = try Self.startRefused(daemon)
    #expect(outcome != .served, "switchd served a database from a newer schema")
    if case .exited(let status) = outcome {
      #expect((1...125).contains(status), "status \(status)")
    }
    #expect(log.contains(path), "the log does not name the file: \(log)")
    #expect(log.contains("99"), "the log does not say which version it found: \(log)")
    let changed = Durability.byteDifferences(before, try? readWholeFileBytes(path))
    #expect(changed == nil, "switchd changed the newer database: \(changed ?? "")")
    #expect(Durability.Python.readOnlyQuery(path, "PRAGMA user_version").stdout == "99\n")
  }

  /// The database renamed away while switchd runs: the next write is
  /// refused, not committed into the file nobody will open again, and so is
  /// every one after it, while reads go on. The loop reads the folder's
  /// watch, not the writer (`FolderWatch`): the rename's event is queued
  /// before the request is sent, so the loop flags it before it hands the
  /// request to the writer.
  @Test func aDatabaseRenamedWhileServingRefusesTheNextWrite() throws {
    let daemon = try DaemonFixture()
    let client = try daemon.client()
    _ = try client.result("toggle", "{\"key\":\"wifi\"}")
    let path = daemon.databasePath
    #expect(rename(path, path + ".moved") == 0)
    for _ in 1...2 {
      let error = try client.error("toggle", "{\"key\":\"wifi\"}")
      let message = error.jsonText
      #expect(message.contains("renamed"), "\(message)")
    }
    #expect(try client.result("get", "{\"key\":\"wifi\"}")["checked"] == .bool(false))
    rename(path + ".moved", path)
  }

  // MARK: Helpers

  /// A few hundred changes, so the file has several pages; then a clean stop
  /// and a checkpoint, so the main file holds everything and no WAL is left.
  static func writeSomeHistory(_ daemon: DaemonFixture) throws {
    let client = try daemon.client()
    let keys = ["wifi", "bluetooth", "notifications.chat", "notifications.mail"]
    var text = ""
    for id in 1...300 {
      text += Durability.requestLine(
        id: Int64(id), "toggle", "{\"key\":\"\(keys[id % keys.count])\"}")
    }
    try client.send(raw: text)
    for _ in 1...300 { _ = try client.readJSON() }
    #expect(daemon.stop() == 0)
    if fileExists(daemon.databasePath + "-wal") {
      let checkpoint = Durability.Python.execute(
        daemon.databasePath, "PRAGMA wal_checkpoint(TRUNCATE);")
      #expect(checkpoint.status == 0, "\(checkpoint.stderr)")
    }
    unlink(daemon.databasePath + "-wal")
    unlink(daemon.databasePath + "-shm")
  }

  /// Starts switchd expecting a refusal; returns how it ended and what it
  /// logged this time.
  static func startRefused(_ daemon: DaemonFixture) throws -> (Durability.StartOutcome, String) {
    let earlier = daemon.log.utf8.count
    let outcome = try daemon.startExpectingRefusal()
    return (outcome, String(decoding: daemon.log.utf8.dropFirst(earlier), as: UTF8.self))
  }
}
