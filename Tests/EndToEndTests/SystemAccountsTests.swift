import Glibc
import Testing

@testable import SwitchTestSupport

/// The gate between tests that change the machine's accounts and polkit
/// worlds (`SystemAccounts`): a change does not run while a world is up,
/// and runs once it ends.
@Suite struct SystemAccountsTests {
  @Test func aChangeWaitsForTheWorldsToEnd() throws {
    try withTemporaryDirectory { directory in
      let made = directory + "/changed"
      SystemAccounts.worldStarts()
      let change = TestThread { SystemAccounts.change(["/usr/bin/touch", made]).status }
      #expect(pollUntil(seconds: 30) { SystemAccounts.waitingChanges >= 1 })
      // Waiting, with the world up: the command has not run.
      #expect(access(made, F_OK) != 0)
      SystemAccounts.worldEnds()
      #expect(change.join() == 0)
      #expect(access(made, F_OK) == 0)
    }
  }
}
