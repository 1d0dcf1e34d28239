import SwitchSystem
import SwitchTestSupport
import Testing

@testable import SwitchDaemon

@Suite struct BlockingQueueTests {
  @Test func aTimedTakeReturnsWhatIsQueued() {
    let queue = BlockingQueue<Int>()
    var more = [1, 2]
    queue.push(taking: &more)
    #expect(queue.takeAll(before: monotonicSeconds() + 3600) == [1, 2])
  }

  @Test func pushTakingMovesIntoAnEmptyQueueAndQueuesBehindWhatWaits() {
    let queue = BlockingQueue<String>()
    var first = ["a", "b"]
    queue.push(taking: &first)
    #expect(first.isEmpty)
    var second = ["c"]
    queue.push(taking: &second)
    #expect(second.isEmpty)
    #expect(queue.drain() == ["a", "b", "c"])
  }

  /// A taker that passes its emptied array back gets the items in it, and
  /// the queue keeps that array's buffer for what is pushed next; a taker
  /// whose array still holds items gets the queued ones after them.
  @Test func takingIntoAnArrayHandsBuffersBackAndForthAndAppendsBehindWhatItHolds() {
    let queue = BlockingQueue<String>()
    var taken: [String] = []
    taken.reserveCapacity(64)
    queue.push("a")
    queue.push("b")
    queue.takeAll(into: &taken)
    #expect(taken == ["a", "b"])
    taken.removeAll(keepingCapacity: true)
    queue.push("c")
    queue.drain(into: &taken)
    #expect(taken == ["c"])
    queue.push("d")
    queue.takeAll(before: monotonicSeconds() + 3600, into: &taken)
    #expect(taken == ["c", "d"])
    queue.drain(into: &taken)
    #expect(taken == ["c", "d"])
  }

  @Test func takeLastIfAnyTakesTheNewestWithoutWaiting() {
    let queue = BlockingQueue<Int>()
    #expect(queue.takeLastIfAny() == nil)
    queue.push(1)
    queue.push(2)
    #expect(queue.takeLastIfAny() == 2)
    #expect(queue.takeLastIfAny() == 1)
    #expect(queue.takeLastIfAny() == nil)
  }

  /// Takers asleep on the futex, several at once (as the apply pool's
  /// workers are): every item pushed, one at a time or several at once,
  /// reaches exactly one of them, and none sleeps through a push.
  @Test func sleepingTakersAreWokenByPushesAndEveryItemIsTakenOnce() {
    let queue = BlockingQueue<Int>()
    let takers = (0..<3).map { _ in
      TestThread { () -> [Int] in
        var taken: [Int] = []
        while true {
          let item = queue.takeOne()
          if item < 0 { return taken }
          taken.append(item)
        }
      }
    }
    for item in 0..<300 {
      if item % 3 == 0 {
        var one = [item]
        queue.push(taking: &one)
      } else {
        queue.push(item)
      }
    }
    for _ in takers { queue.push(-1) }
    let all = takers.flatMap { $0.join() }.sorted()
    #expect(all == Array(0..<300))
  }

  /// A taker that waits for several items (the writer filling a group)
  /// takes none before that many are queued, however long the first waits,
  /// unless one it names comes; a push short of them does not end its wait.
  @Test func aTakerWaitingForSeveralTakesThemTogetherOrOneItNames() {
    let queue = BlockingQueue<Int>()
    queue.push(1)
    let three = TestThread { () -> [Int] in
      var taken: [Int] = []
      queue.takeAll(before: monotonicSeconds() + 3600, atLeast: 3, orOne: { $0 < 0 }, into: &taken)
      return taken
    }
    queue.push(2)
    queue.push(3)
    #expect(three.join() == [1, 2, 3])
    queue.push(4)
    let named = TestThread { () -> [Int] in
      var taken: [Int] = []
      queue.takeAll(before: monotonicSeconds() + 3600, atLeast: 5, orOne: { $0 < 0 }, into: &taken)
      return taken
    }
    queue.push(-1)
    #expect(named.join() == [4, -1])
    // Short of them at its deadline: what is queued.
    queue.push(5)
    var taken: [Int] = []
    queue.takeAll(before: monotonicSeconds() + 0.01, atLeast: 2, orOne: { $0 < 0 }, into: &taken)
    #expect(taken == [5])
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
