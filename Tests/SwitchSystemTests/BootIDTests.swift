import Glibc
import SwitchTestSupport
import Testing

@testable import SwitchSystem

/// The boot id a tried change is kept with (rule 20): read from the kernel,
/// and when it cannot be (a sandbox hiding /proc/sys), why, for the
/// warning at start.
@Suite struct BootIDTests {
  @Test func theKernelsIsReadAndOneThatCannotBeSaysWhy() throws {
    let id = try readBootID(from: bootIDPath).get()
    #expect(id.count == 36 && id == currentBootID().id)
    guard case .failure(let problem) = readBootID(from: "/proc/sys/no-such-file") else {
      Issue.record("a missing file gave a boot id")
      return
    }
    #expect(problem.errno == ENOENT)
    #expect(problem.call == "open /proc/sys/no-such-file")
    let directory = try makeTemporaryDirectory()
    defer { removeTree(directory) }
    try writeWholeFile(directory + "/empty", "\n")
    #expect(
      readBootID(from: directory + "/empty")
        == .failure(SystemError(errno: ENODATA, call: "read \(directory)/empty")))
  }
}
