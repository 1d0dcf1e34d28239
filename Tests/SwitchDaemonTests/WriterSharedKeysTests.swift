import Glibc
import SwitchCore
import Testing

@testable import SwitchDaemon

/// The writer holds a declared long key as the catalog's String
/// (`KeyInterner`), from the start and through a reload that reads the
/// same files again, so that a decoded request's key (the catalog's too)
/// finds its tables' entries by its first word.
@Suite struct WriterSharedKeysTests {
  static let switches =
    "[notifications.chat]\nLabel=Chat\nDefault=on\n\n"
    + "[notifications.mail]\nLabel=Mail\nDefault=on\nScope=user\n"

  static func storage(_ text: String) -> UnsafeRawPointer? {
    text.utf8.withContiguousStorageIfAvailable { UnsafeRawPointer($0.baseAddress) } ?? nil
  }

  @Test func aReloadKeepsTheRunningConfigurationsStrings() throws {
    let harness = try WriterHarness(switches: Self.switches)
    let writer = harness.writer
    let chat = try #require(writer.catalog.switches["notifications.chat"]).key
    #expect(
      Self.storage(try #require(writer.records["notifications.chat"]).key) == Self.storage(chat))
    // The same files, read again: Strings of their own, until the writer
    // makes the next configuration share the running one's.
    let read = try #require(ConfigLoader.load(directory: harness.directory + "/config").catalog)
    #expect(
      Self.storage(try #require(read.switches["notifications.chat"]).key) != Self.storage(chat))
    _ = writer.reload(nil, .valid(read, AccessRules(daemonUID: getuid())))
    let next = try #require(writer.catalog.switches["notifications.chat"]).key
    #expect(Self.storage(next) == Self.storage(chat))
    #expect(
      Self.storage(writer.catalog.sharedKeys.shared("notifications.mail"))
        == Self.storage(try #require(writer.records["notifications.mail"]).key))
    _ = try harness.run([])  // stops the writer
  }

  @Test func aRestartLoadsTheStoredKeysAsTheCatalogsStrings() throws {
    let harness = try WriterHarness(switches: Self.switches)
    // A system switch's change and a user's own value (the harness writes as uid 1000).
    let writes: [WriterHarness.Write] = [
      .init(key: "notifications.chat", operation: .toggle(ifRevision: nil)),
      .init(key: "notifications.mail", operation: .toggle(ifRevision: nil)),
    ]
    let outcomes = try harness.run([WriterHarness.Step(writes: writes)])
    #expect(outcomes.first?.changes.count == 2)
    // Started again on the stored file, under the files read anew: the
    // records and the users' values hold the new catalog's Strings.
    let catalog = try #require(ConfigLoader.load(directory: harness.directory + "/config").catalog)
    let restarted = try Writer.start(
      databasePath: harness.directory + "/switches.db",
      configDirectory: harness.directory + "/config",
      catalog: catalog, access: AccessRules(daemonUID: getuid()), log: Log(),
      jobs: BlockingQueue<WriterJob>())
    let chat = try #require(catalog.switches["notifications.chat"]).key
    let mail = try #require(catalog.switches["notifications.mail"]).key
    #expect(restarted.records["notifications.chat"]?.state.checked == false)
    #expect(
      Self.storage(try #require(restarted.records["notifications.chat"]).key) == Self.storage(chat))
    #expect(restarted.users.values["notifications.mail"]?[1000]?.checked == false)
    #expect(
      restarted.users.values.keys.filter { $0 == "notifications.mail" }.map(Self.storage)
        == [Self.storage(mail)])
    let jobs = BlockingQueue<WriterJob>()
    jobs.push(.stop)
    restarted.run(jobs: jobs) { _ in }
  }
}
