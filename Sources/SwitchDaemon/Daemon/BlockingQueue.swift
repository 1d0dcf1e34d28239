import Glibc

/// A FIFO that one thread waits on and any thread feeds.
///
/// A POSIX mutex guards the items and a condition variable wakes the
/// waiter. Both are allocated on the heap: pthread objects must not move,
/// and Swift promises no fixed address for a stored property passed with
/// `&`. `@unchecked Sendable`: `items` is touched only with the mutex held.
final class BlockingQueue<Item: Sendable>: @unchecked Sendable {
  private var items: [Item] = []
  private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
  private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)

  init() {
    pthread_mutex_init(mutex, nil)
    // Timed waits count on the monotonic clock: a change of the wall clock
    // must not stretch or cut them.
    var attributes = pthread_condattr_t()
    pthread_condattr_init(&attributes)
    pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
    pthread_cond_init(condition, &attributes)
    pthread_condattr_destroy(&attributes)
  }

  deinit {
    pthread_cond_destroy(condition)
    pthread_mutex_destroy(mutex)
    condition.deallocate()
    mutex.deallocate()
  }

  func push(_ item: Item) {
    pthread_mutex_lock(mutex)
    items.append(item)
    pthread_mutex_unlock(mutex)
    pthread_cond_signal(condition)
  }

  /// Appends several items under one lock and one wake-up.
  func push(contentsOf more: [Item]) {
    pthread_mutex_lock(mutex)
    items.append(contentsOf: more)
    pthread_mutex_unlock(mutex)
    pthread_cond_signal(condition)
  }

  /// Waits until at least one item is queued, then takes them all.
  func takeAll() -> [Item] {
    pthread_mutex_lock(mutex)
    while items.isEmpty { pthread_cond_wait(condition, mutex) }
    let taken = items
    items.removeAll(keepingCapacity: true)
    pthread_mutex_unlock(mutex)
    return taken
  }

  /// Waits until at least one item is queued or the monotonic clock passes
  /// `deadline` (seconds, as `monotonicSeconds()`), then takes what is queued.
  func takeAll(before deadline: Double) -> [Item] {
    var until = timespec()
    until.tv_sec = Int(deadline)
    until.tv_nsec = Int((deadline - Double(until.tv_sec)) * 1e9)
    pthread_mutex_lock(mutex)
    while items.isEmpty {
      if pthread_cond_timedwait(condition, mutex, &until) == ETIMEDOUT { break }
    }
    let taken = items
    items.removeAll(keepingCapacity: true)
    pthread_mutex_unlock(mutex)
    return taken
  }

  /// Waits until an item is queued, then takes the oldest one.
  func takeOne() -> Item {
    pthread_mutex_lock(mutex)
    while items.isEmpty { pthread_cond_wait(condition, mutex) }
    let taken = items.removeFirst()
    pthread_mutex_unlock(mutex)
    return taken
  }

  /// Takes whatever is queued without waiting.
  func drain() -> [Item] {
    pthread_mutex_lock(mutex)
    let taken = items
    items.removeAll(keepingCapacity: true)
    pthread_mutex_unlock(mutex)
    return taken
  }
}
