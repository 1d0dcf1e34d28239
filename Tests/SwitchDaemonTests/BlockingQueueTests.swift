import SwitchSystem
import Testing

@testable import SwitchDaemon

@Suite struct BlockingQueueTests {
  @Test func aTimedTakeReturnsWhatIsQueued() {
    let queue = BlockingQueue<Int>()
    queue.push(contentsOf: [1, 2])
    #expect(queue.takeAll(before: monotonicSeconds() + 3600) == [1, 2])
  }

  @Test func aTimedTakeOnAnEmptyQueueEndsAtItsDeadline() {
    let queue = BlockingQueue<Int>()
    let deadline = monotonicSeconds() + 0.01
    #expect(queue.takeAll(before: deadline).isEmpty)
    #expect(monotonicSeconds() >= deadline)
  }

  @Test func aDeadlineInThePastDoesNotWait() {
    let queue = BlockingQueue<Int>()
    #expect(queue.takeAll(before: monotonicSeconds() - 1).isEmpty)
  }
}
