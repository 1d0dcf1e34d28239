import Glibc
import Testing

@testable import SwitchDaemon

/// The loop returns from `run()` only once the writer's thread has ended
/// (`finishShutdown` joins it): the writer's last releases never race
/// switchd's exit, so a count of switchd's instructions over its whole life
/// is the same from run to run (issue 26), and nothing of the writer is
/// left running when the caller goes on to remove its files.
@Suite struct ShutdownTests {
  @Test func theLoopReturnsOnlyOnceTheWriterThreadHasEnded() throws {
    let harness = try LoopHarness(daemonConf: "[Daemon]\nAdminGroup=\n")
    let writerTask = "/proc/self/task/\(harness.writerThreadID)"
    #expect(harness.writerThreadID > 0 && access(writerTask, F_OK) == 0, "the writer runs")
    harness.stop()
    #expect(access(writerTask, F_OK) != 0, "the writer's thread is still there")
  }
}
