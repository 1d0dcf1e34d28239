import Glibc
import SwitchCore
import SwitchSystem
import SwitchTestSupport
import Synchronization
import Testing

@testable import SwitchDaemon

/// The apply pool when the system refuses it threads (a task limit:
/// `TasksMax=`, RLIMIT_NPROC): pthread_create's EAGAIN, simulated by the
/// starter the pool is given.
@Suite struct ApplyPoolThreadLimitTests {
  static func step(_ key: String) -> ApplyStep {
    ApplyStep(
      key: key, command: ApplyCommand(arguments: ["/bin/true"]),
      state: SwitchState(checked: true), cause: .toggle)
  }

  /// The first `count` results, waiting at most 30 s for them (a task left
  /// without a thread would never have one).
  static func results(_ count: Int, from queue: BlockingQueue<WriterJob>) -> [ApplyResult] {
    let deadline = monotonicSeconds() + 30
    var taken: [WriterJob] = []
    while taken.count < count && monotonicSeconds() < deadline {
      queue.takeAll(before: deadline, into: &taken)
    }
    return taken.compactMap {
      if case .applied(let result) = $0 { return result }
      return nil
    }
  }

  /// With no thread at all, a task fails at once with the reason, and
  /// switchd goes on (it stopped on a failed precondition before).
  @Test func withNoThreadATaskFailsSayingWhy() throws {
    let results = BlockingQueue<WriterJob>()
    let pool = ApplyPool(results: results, startingThreadsWith: { _ in EAGAIN })
    pool.submit(ApplyTask(id: 1, steps: [Self.step("wifi"), Self.step("vpn")], undo: []))
    let refused = try #require(Self.results(1, from: results).first)
    #expect(refused.id == 1)
    #expect(refused.failure?.hasPrefix("cannot start a thread to run it: ") == true)
    #expect(refused.failedKey == "wifi")

    pool.submit(
      ApplyTask(id: 2, steps: [Self.step("wifi"), Self.step("vpn")], undo: [], eachOwn: true))
    let each = try #require(Self.results(1, from: results).first)
    #expect(each.id == 2 && each.failure == nil)
    #expect(each.failures.keys.sorted() == ["vpn", "wifi"])
    pool.stop()
  }

  /// With one thread running and no more allowed, tasks wait for it and
  /// all of them run. The first task's command waits on a FIFO until the
  /// others are submitted: each submit then finds the thread busy and asks
  /// for another (without the gate, a quick first task could be done
  /// before a loaded machine ran the next submit).
  @Test func pastTheLimitTasksWaitForTheThreadsThereAre() throws {
    try withTemporaryDirectory { directory in
      let gate = directory + "/gate"
      #expect(mkfifo(gate, 0o600) == 0)
      let waiting = ApplyStep(
        key: "wifi", command: ApplyCommand(arguments: ["/bin/sh", "-c", "read line < \(gate)"]),
        state: SwitchState(checked: true), cause: .toggle)
      let results = BlockingQueue<WriterJob>()
      let starts = Atomic<Int>(0)
      let pool = ApplyPool(
        results: results,
        startingThreadsWith: { work in
          guard starts.add(1, ordering: .relaxed).newValue == 1 else { return EAGAIN }
          startThread(named: "apply", work)
          return 0
        })
      pool.submit(ApplyTask(id: 1, steps: [waiting], undo: []))
      for id in 2...3 {
        pool.submit(ApplyTask(id: UInt64(id), steps: [Self.step("wifi")], undo: []))
      }
      #expect(starts.load(ordering: .relaxed) == 3, "the pool did not ask for more threads")
      // Opened for writing once the command has it open for reading (at
      // most 30 s: ENXIO until then).
      let deadline = monotonicSeconds() + 30
      var writer: Int32 = -1
      while writer < 0 && monotonicSeconds() < deadline {
        writer = open(gate, O_WRONLY | O_NONBLOCK | O_CLOEXEC)
        if writer < 0 { usleep(1000) }
      }
      #expect(writer >= 0, "the first task's command never read the gate")
      _ = write(writer, "go\n", 3)
      close(writer)
      let done = Self.results(3, from: results)
      #expect(done.map(\.id).sorted() == [1, 2, 3])
      #expect(done.allSatisfy { $0.failure == nil }, "\(done.map(\.failure))")
      pool.stop()
    }
  }
}
