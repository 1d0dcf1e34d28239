import Glibc
import SwitchSystem
import SwitchTestSupport
import Testing

@testable import SwitchDaemon

/// `status.reconciling` from the first request on: the count of the start's
/// reconcile is handed to the loop with the switches, not in a later
/// message the loop may not have read when the first client asks.
@Suite struct ReconcileStatusTests {
  @Test func theStartsReconcileIsCountedBeforeTheLoopFirstTurns() throws {
    var gate = ""
    let harness = try LoopHarness(daemonConf: "[Daemon]\nAdminGroup=\nLogLevel=warning\n") {
      gate = $0 + "/gate"
      guard mkfifo(gate, 0o600) == 0 else { throw FixtureError("mkfifo failed") }
      // Applied once the test opens the gate: until then it is being reconciled.
      return "[slow]\nLabel=Slow\nExecApply=/bin/cat \($0)/gate\nApplyTimeoutSec=3600\n"
    }
    #expect(harness.server.reconciling == 1)
    #expect(harness.server.statusLine.hasSuffix(", applying 1 stored values"))

    // Let the command end (a reader must be there to open the FIFO for
    // writing), so that the stop does not wait for it.
    var opened: Int32 = -1
    _ = pollUntil(seconds: 60) {
      opened = open(gate, O_WRONLY | O_NONBLOCK | O_CLOEXEC)
      return opened >= 0
    }
    #expect(opened >= 0)
    close(opened)
    harness.stop()
  }
}
