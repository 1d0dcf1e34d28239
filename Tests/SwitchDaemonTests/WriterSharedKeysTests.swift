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
}
