import Glibc
import SwitchSystem
import Testing

@Suite struct ThreadLockTests {
  /// Four threads each add 10,000 under the lock: none is lost. Under
  /// ThreadSanitizer (CI's TSan run) this is also the check that the lock is
  /// one TSan sees: with the standard library's `Mutex` (a futex) in its
  /// place, TSan reports the value's increments as a race.
  @Test func threadsTakingTurnsLoseNoUpdate() {
    let counter = ThreadLock(0)
    let threads = (0..<4).map { _ in
      startJoinableThread {
        for _ in 0..<10_000 { counter.withLock { $0 += 1 } }
      }
    }
    for thread in threads { pthread_join(thread, nil) }
    #expect(counter.withLock { $0 } == 40_000)
  }

  /// A lock that guards no data, shared as a global, taken from four
  /// threads: under ThreadSanitizer a `ThreadLock(())` whose value was a
  /// stored property was reported as racing with itself (CI's TSan run).
  @Test func aLockOfNothingTakenFromManyThreads() {
    let threads = (0..<4).map { _ in
      startJoinableThread {
        for _ in 0..<2000 { Self.nothing.withLock { _ in } }
      }
    }
    for thread in threads { pthread_join(thread, nil) }
    #expect(Self.nothing.withLock { _ in true })
  }

  static let nothing = ThreadLock(())

  @Test func bodyResultAndThrownErrorPassThrough() {
    struct Refused: Error {}
    let lock = ThreadLock([1, 2])
    #expect(
      lock.withLock {
        $0.append(3)
        return $0.count
      } == 3)
    #expect(throws: Refused.self) { try lock.withLock { _ in throw Refused() } }
    #expect(lock.withLock { $0 } == [1, 2, 3])
  }
}
