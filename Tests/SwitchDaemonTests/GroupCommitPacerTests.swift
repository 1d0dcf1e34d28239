import Testing

@testable import SwitchDaemon

@Suite struct GroupCommitPacerTests {
  @Test func nobodyIsAwaitedBeforeTheFirstCommit() {
    let pacer = GroupCommitPacer()
    #expect(pacer.awaited(present: [1]).isEmpty)
    #expect(pacer.budgetSeconds == 0)
  }

  @Test func theLastGroupsWritersNotInHandAreAwaited() {
    var pacer = GroupCommitPacer()
    pacer.committed([1, 2, 3, 4], seconds: 0.002)
    #expect(pacer.awaited(present: [1, 2, 5]) == [3, 4])
    #expect(pacer.awaited(present: [1, 2, 3, 4]).isEmpty)
  }

  /// Connection 0 is the writer's own (a timer's write or revert): never
  /// awaited, since it never sends a next write.
  @Test func theWritersOwnTimerWritesAreNotAwaited() {
    var pacer = GroupCommitPacer()
    pacer.committed([0, 17, 0], seconds: 0.002)
    #expect(pacer.lastGroup == [17])
    #expect(pacer.awaited(present: [17]).isEmpty)
    pacer.committed([0], seconds: 0.002)
    #expect(pacer.awaited(present: []).isEmpty)
  }

  @Test func aTurnWithoutACommitOwesNobodyAWait() {
    var pacer = GroupCommitPacer()
    pacer.committed([1, 2], seconds: 0.002)
    pacer.committedNothing()
    #expect(pacer.awaited(present: []).isEmpty)
  }

  @Test func theBudgetIsAShareOfTheAverageFlushWithACeiling() {
    var pacer = GroupCommitPacer()
    pacer.committed([1], seconds: 0.002)
    #expect(pacer.budgetSeconds == GroupCommitPacer.share * 0.002)
    // The average moves a quarter of the way towards each new flush.
    pacer.committed([1], seconds: 0.006)
    #expect(abs(pacer.flushSeconds - 0.003) < 1e-12)
    for _ in 0..<100 { pacer.committed([1], seconds: 1) }
    #expect(pacer.budgetSeconds == pacer.ceilingSeconds)
  }

  /// A group's writers come in job order with repeats (a connection's
  /// pipelined writes): each is waited for once, whatever the order.
  @Test func repeatsAndOrderDoNotMatter() {
    var pacer = GroupCommitPacer()
    pacer.committed([9, 4, 1, 4, 9, 2], seconds: 0.002)
    #expect(pacer.lastGroup == [1, 2, 4, 9])
    #expect(pacer.awaited(present: [4, 4, 12, 1]) == [2, 9])
    #expect(GroupCommitPacer.contains([1, 2, 4, 9], 9))
    #expect(!GroupCommitPacer.contains([1, 2, 4, 9], 3))
    #expect(!GroupCommitPacer.contains([], 3))
  }

  /// The writer's array is taken as the group and given back empty, holding
  /// the previous group's buffer: the next group is recorded just the same.
  @Test func aCommittedArrayIsTakenAndTheLastOneGivenBackEmpty() {
    var pacer = GroupCommitPacer()
    var writers: [UInt64] = [7, 3, 7]
    pacer.committed(&writers, seconds: 0.002)
    #expect(writers.isEmpty)
    #expect(pacer.lastGroup == [3, 7])
    writers.append(contentsOf: [5, 1])
    pacer.committed(&writers, seconds: 0.002)
    #expect(writers.isEmpty)
    #expect(pacer.lastGroup == [1, 5])
    #expect(pacer.awaited(present: [5]) == [1])
  }
}

extension GroupCommitPacer {
  /// `committed(_:seconds:)` of a group written out in the test.
  mutating func committed(_ connections: [UInt64], seconds: Double) {
    var connections = connections
    committed(&connections, seconds: seconds)
  }
}
