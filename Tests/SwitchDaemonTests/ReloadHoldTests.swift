import Glibc
import SwitchCore
import SwitchSystem
import SwitchTestSupport
import Testing

@testable import SwitchDaemon

/// What a reload whose commands run first holds while they run.
@Suite struct ReloadHoldTests {
  /// A switch whose command the reload changes is held with the ones its
  /// policies change: the reload runs its new command once it commits, and
  /// a write of it meanwhile would run the old one beside it (a review:
  /// two commands of one switch at once).
  @Test func aSwitchWhoseCommandChangesIsHeldWhileTheReloadsCommandsRun() throws {
    // No command at start: the writer starts none (this harness does not
    // run the pool's results); the reload brings them.
    let harness = try WriterHarness(
      switches:
        "[fan]\nLabel=Fan\nDefault=off\n\n[radio]\nLabel=Radio\nDefault=off\n\n"
        + "[lamp]\nLabel=Lamp\nDefault=off\n")
    let config = harness.directory + "/config"
    try writeWholeFile(
      config + "/switches.d/10-test.conf",
      "[fan]\nLabel=Fan\nDefault=off\nExecApply=/bin/true\n\n"
        + "[radio]\nLabel=Radio\nDefault=off\nExecApply=/bin/true\n\n"
        + "[lamp]\nLabel=Lamp\nDefault=off\n")
    mkdir(config + "/policy.d", 0o755)
    try writeWholeFile(config + "/policy.d/50-test.conf", "[fan]\nReadOnly=yes\nChecked=on\n")
    let next = try #require(ConfigLoader.load(directory: config).catalog)
    let first = harness.writer.commandsFirst(next)
    #expect(first.steps.map(\.key) == ["fan"])
    #expect(first.keys == ["fan", "radio"], "lamp has no command; radio's is new")
    _ = try harness.run([])  // stops the writer
  }
}
