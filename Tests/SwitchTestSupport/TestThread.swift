import Glibc
import SwitchSystem

/// A POSIX thread that runs `body` and hands back its result at `join()`.
///
/// For blocking socket I/O in tests: Swift's cooperative pool is as wide as
/// the machine has cores (two here), and a task that blocks in `recv` holds
/// one of them, so a few blocked tasks can stall every other test.
public final class TestThread<Result: Sendable>: @unchecked Sendable {
  // `result` is written by the thread before it ends and read after
  // `pthread_join`, which orders the two.
  private var result: Result?
  private var thread = pthread_t()
  private var joined = false

  public init(_ body: @escaping @Sendable () -> Result) {
    thread = startJoinableThread { [self] in result = body() }
  }

  deinit {
    if !joined { pthread_detach(thread) }
  }

  /// Waits for the thread to end; its result.
  public func join() -> Result {
    if !joined {
      pthread_join(thread, nil)
      joined = true
    }
    return result!
  }
}
