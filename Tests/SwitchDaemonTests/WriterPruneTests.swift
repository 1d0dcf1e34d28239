import Glibc
import SwitchCore
import SwitchProtocol
import SwitchStore
import SwitchTestSupport
import Testing

@testable import SwitchDaemon

/// The writer prunes the log when it holds more rows than
/// `HistoryRetention` by a margin. A restore from a backup leaves a gap in
/// the revisions (`SwitchStore.markRestored`), so the span of revisions
/// kept is no measure of the rows: measured so, the writer pruned (and
/// checkpointed, with their syncs) after every commit.
@Suite struct WriterPruneTests {
  @Test func aRestoresGapInTheRevisionsIsNoReasonToPrune() throws {
    try withTemporaryDirectory { directory in
      let config = directory + "/config"
      mkdir(config, 0o755)
      mkdir(config + "/switches.d", 0o755)
      try writeWholeFile(config + "/switchd.conf", "[Daemon]\nAdminGroup=\nHistoryRetention=5\n")
      try writeWholeFile(config + "/switches.d/10-test.conf", "[wifi]\nLabel=Wi-Fi\nDefault=on\n")
      let catalog = try #require(ConfigLoader.load(directory: config).catalog)
      let path = directory + "/switches.db"
      func started() throws -> Writer {
        try Writer.start(
          databasePath: path, configDirectory: config, catalog: catalog,
          access: AccessRules(daemonUID: getuid()), log: Log(), jobs: BlockingQueue<WriterJob>())
      }
      // Three toggles, as a backup of revision 3 would hold them.
      do {
        let writer = try started()
        let jobs = BlockingQueue<WriterJob>()
        let caller = Caller(actor: .peer(uid: 0, gid: 0, pid: 1), isAdmin: true, mayWrite: true)
        for slot in UInt64(1)...3 {
          let ticket = Ticket(
            connection: 16, slot: slot, part: 0, id: .number(JSONNumber(Int64(slot))))
          jobs.push(.write(ticket, key: "wifi", .toggle(ifRevision: nil), caller))
        }
        jobs.push(.stop)
        writer.run(jobs: jobs) { _ in }
      }
      // Restored under a switchd that had announced revision 99.
      do {
        let store = try SwitchStore(path: path)
        defer { store.close() }
        try store.markRestored(at: 100)
      }
      let writer = try started()
      #expect(writer.revision == 100)
      #expect(writer.oldestRetained == 1)
      // Three rows against a retention of 5: nothing to prune, though the
      // revisions kept span 1...100.
      #expect(writer.prune() == nil)
      writer.store.close()
    }
  }
}
