import SwitchCore
import SwitchProtocol
import SwitchTestSupport
import Testing

@testable import SwitchDaemon

/// The writer's real wait for a group (`Writer.takeGroup`, paced by
/// `GroupCommitPacer`): a write from a connection the pacer awaits, arriving
/// while the writer holds a group open, joins that group (one commit), and
/// a reload or stop ends the wait.
///
/// The writer runs on the test's thread; a second thread plays the event
/// loop, pushing jobs only once the writer holds what came before, so each
/// job lands in the wait, never in the take before it. The pacer's ceiling
/// is raised from milliseconds to minutes, so nothing races the clock: what
/// is asserted is which writes share an output, and a wait that a control
/// job failed to end shows as answers that never came.
@Suite struct WriterGroupWaitTests {
  enum Control: CaseIterable, Sendable {
    case reload
    case stop
  }

  @Test(arguments: Control.allCases)
  func anAwaitedWriteJoinsTheGroupAndAControlJobEndsTheWait(_ control: Control) throws {
    let harness = try WriterHarness()
    // As if connection 1 had been in the last group, with a slow flush: the
    // next group waits for it, for up to two minutes.
    harness.writer.pacer.ceilingSeconds = 120
    harness.writer.pacer.committed([1], seconds: 600)
    let jobs = BlockingQueue<WriterJob>()
    let outputs = BlockingQueue<WriterOutput>()
    let loop = TestThread { () -> [[UInt64]] in
      // The slots each output answered, in order.
      var answered: [[UInt64]] = []
      func awaitAnswers(_ count: Int) {
        _ = pollUntil(seconds: 60) {
          answered += outputs.drain().map { $0.answers.map(\.0.slot) }.filter { !$0.isEmpty }
          return answered.count >= count
        }
      }
      jobs.push(Self.toggle("wifi", connection: 2, slot: 1))
      Self.waitUntilTaken(jobs)  // the writer holds it and waits for connection 1
      jobs.push(Self.toggle("bluetooth", connection: 1, slot: 2))
      awaitAnswers(1)
      jobs.push(Self.toggle("wifi", connection: 2, slot: 3))
      Self.waitUntilTaken(jobs)  // held again, connection 1 awaited again
      switch control {
      case .reload:
        jobs.push(.reload(Self.ticket(connection: 2, slot: 4), .refused(errors: ["a test"])))
        awaitAnswers(3)
      case .stop:
        jobs.push(.stop)
        awaitAnswers(2)
      }
      jobs.push(.stop)
      return answered
    }
    harness.writer.run(jobs: jobs) { outputs.push($0) }
    let answered = loop.join()
    // Slots 1 and 2 in one commit; slot 3 at once after the control, alone.
    #expect(answered == (control == .reload ? [[1, 2], [3], [4]] : [[1, 2], [3]]))
  }

  static func ticket(connection: UInt64, slot: UInt64) -> Ticket {
    Ticket(connection: connection, slot: slot, part: 0, id: .number(JSONNumber(Int64(slot))))
  }

  static func toggle(_ key: String, connection: UInt64, slot: UInt64) -> WriterJob {
    let caller = Caller(actor: .peer(uid: 1000, gid: 1000, pid: 1), isAdmin: false, mayWrite: true)
    return .write(
      ticket(connection: connection, slot: slot), key: key, .toggle(ifRevision: nil), caller)
  }

  /// Waits until the writer has taken every queued job. Only the calling
  /// thread pushes, so jobs a drain finds are put back, and a drain that
  /// finds none means the writer holds them.
  static func waitUntilTaken(_ jobs: BlockingQueue<WriterJob>) {
    _ = pollUntil(seconds: 60) {
      var queued = jobs.drain()
      let none = queued.isEmpty
      if !none { jobs.push(taking: &queued) }
      return none
    }
  }
}
