import CShim
import Glibc
import SwitchSystem

/// A FIFO that one thread (or a few: the apply pool's workers) waits on and
/// any thread feeds.
///
/// A POSIX mutex guards the items; a taker with nothing to take sleeps on a
/// futex word that a push bumps and wakes only when a taker sleeps. Not a
/// condition variable: glibc's takes the mutex back after a wait marked as
/// contended, so each wake-up cost the taker one more system call (a futex
/// wake at the unlock, with nobody to wake): three per hand-off where this
/// makes two (strace, a toggle's way to the writer). Both are allocated on
/// the heap: they must not move, and Swift promises no fixed address for a
/// stored property passed with `&`. `@unchecked Sendable`: `items`,
/// `sleepers`, `wakeAt` and the word are touched only with the mutex held
/// (the kernel reads the word too, which is what a futex is for).
///
/// A taker that needs several items (`takeAll(before:atLeast:orOne:into:)`,
/// the writer filling a group) is woken only once that many are queued, or
/// one it names: a push short of that costs no system call on either side
/// (issue 26: each wake-up is a futex wake and a wait again).
final class BlockingQueue<Item: Sendable>: @unchecked Sendable {
  private var items: [Item] = []
  private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
  /// Bumped by a push that finds a taker asleep; a taker sleeps while it
  /// holds the value it read before unlocking, so no push is missed.
  private let word = UnsafeMutablePointer<UInt32>.allocate(capacity: 1)
  /// Takers asleep, or about to be.
  private var sleepers = 0
  /// How many queued items wake a sleeping taker: 1 but while a taker
  /// waits for more (one taker only: the writer).
  private var wakeAt = 1
  /// While a taker waits for more: an item that wakes it however few are
  /// queued (for the writer, a reload or stop).
  private var wakesAtOnce: (@Sendable (Item) -> Bool)?

  init() {
    pthread_mutex_init(mutex, nil)
    word.initialize(to: 0)
  }

  deinit {
    pthread_mutex_destroy(mutex)
    mutex.deallocate()
    word.deallocate()
  }

  /// The item is moved in: none of its references is left to the pusher
  /// once the taker may have it.
  func push(_ item: consuming Item) {
    push(item, ifFewerThan: .max)
  }

  /// Pushes `item` unless `limit` items are queued already (then it is
  /// dropped here); true when it was queued. For a queue of spares that
  /// nobody waits on, which must not grow when its taker falls behind.
  @discardableResult
  func push(_ item: consuming Item, ifFewerThan limit: Int) -> Bool {
    pthread_mutex_lock(mutex)
    guard items.count < limit else {
      pthread_mutex_unlock(mutex)
      return false
    }
    items.append(consume item)
    let wake = bumpIfSleeping(pushedFrom: items.count - 1)
    pthread_mutex_unlock(mutex)
    if wake { _ = shim_futex_wake(word, 1) }
    return true
  }

  /// Appends several items under one lock and one wake-up, and leaves
  /// `more` empty. Into an empty queue the arrays are swapped: the items
  /// move, not copied (and released) one by one.
  func push(taking more: inout [Item]) {
    pthread_mutex_lock(mutex)
    let start = items.count
    if items.isEmpty {
      swap(&items, &more)
    } else {
      items.append(contentsOf: more)
    }
    let wake = bumpIfSleeping(pushedFrom: start)
    pthread_mutex_unlock(mutex)
    more.removeAll(keepingCapacity: true)
    if wake { _ = shim_futex_wake(word, 1) }
  }

  /// Waits until at least one item is queued, then takes them all.
  func takeAll() -> [Item] {
    var taken: [Item] = []
    takeAll(into: &taken)
    return taken
  }

  /// Waits until at least one item is queued, then moves them all to the
  /// end of `taken`. A taker that empties `taken` (keeping its capacity)
  /// and passes it again allocates nothing: an empty `taken` is swapped
  /// with the queue's items, so the queue keeps the taker's buffer. (Taking
  /// a copy and emptying the queue's array made a new buffer on every take,
  /// and the taker freed the old one: ~0.4k instructions a group, callgrind.)
  func takeAll(into taken: inout [Item]) {
    pthread_mutex_lock(mutex)
    while items.isEmpty { sleep(seconds: nil) }
    move(into: &taken)
    pthread_mutex_unlock(mutex)
  }

  /// Waits until at least one item is queued or the monotonic clock passes
  /// `deadline` (seconds, as `monotonicSeconds()`), then takes what is queued.
  func takeAll(before deadline: Double) -> [Item] {
    var taken: [Item] = []
    takeAll(before: deadline, into: &taken)
    return taken
  }

  /// The same, moving what is queued to the end of `taken` (as `takeAll(into:)`).
  func takeAll(before deadline: Double, into taken: inout [Item]) {
    takeAll(before: deadline, atLeast: 1, orOne: { _ in false }, into: &taken)
  }

  /// Waits until `minimum` items are queued, or one that `wakes` is, or
  /// the monotonic clock passes `deadline`, then moves what is queued to
  /// the end of `taken` (as `takeAll(into:)`). For a queue with one taker:
  /// pushes short of that do not wake it.
  func takeAll(
    before deadline: Double, atLeast minimum: Int, orOne wakes: @escaping @Sendable (Item) -> Bool,
    into taken: inout [Item]
  ) {
    pthread_mutex_lock(mutex)
    // Never longer than the span asked for at first: a clock set back
    // (libfaketime fakes the monotonic one too) cannot stretch the wait.
    let span = deadline - monotonicSeconds()
    var left = span
    wakeAt = max(1, minimum)
    wakesAtOnce = wakes
    while items.count < wakeAt && !items.contains(where: wakes) && left > 0 {
      if !sleep(seconds: left) { break }
      left = min(deadline - monotonicSeconds(), span)
    }
    wakeAt = 1
    wakesAtOnce = nil
    move(into: &taken)
    pthread_mutex_unlock(mutex)
  }

  /// With the mutex held: the queued items to the end of `taken`, the queue
  /// left empty (with `taken`'s buffer when that was empty).
  private func move(into taken: inout [Item]) {
    if taken.isEmpty {
      swap(&items, &taken)
    } else {
      taken.append(contentsOf: items)
      items.removeAll(keepingCapacity: true)
    }
  }

  /// Waits until an item is queued, then takes the oldest one.
  func takeOne() -> Item {
    pthread_mutex_lock(mutex)
    while items.isEmpty { sleep(seconds: nil) }
    let taken = items.removeFirst()
    pthread_mutex_unlock(mutex)
    return taken
  }

  /// With the mutex held, after items were pushed at `start` and on:
  /// whether a taker sleeps that they wake, and if so the word bumped for
  /// the wake-up that follows the unlock.
  private func bumpIfSleeping(pushedFrom start: Int) -> Bool {
    guard sleepers > 0 else { return false }
    if items.count < wakeAt {
      guard let wakesAtOnce, items[start...].contains(where: wakesAtOnce) else { return false }
    }
    word.pointee &+= 1
    return true
  }

  /// With the mutex held: lets it go, sleeps until a push (or `seconds`
  /// pass, or a spurious wake-up), and takes it back. False when the time
  /// ran out.
  @discardableResult
  private func sleep(seconds: Double?) -> Bool {
    sleepers += 1
    let seen = word.pointee
    pthread_mutex_unlock(mutex)
    let woken = shim_futex_wait(word, seen, seconds.map { Int64($0 * 1e9) } ?? -1) == 0
    let timedOut = !woken && errno == ETIMEDOUT
    pthread_mutex_lock(mutex)
    sleepers -= 1
    return !timedOut
  }

  /// Takes the newest item without waiting, nil when there is none.
  func takeLastIfAny() -> Item? {
    pthread_mutex_lock(mutex)
    let taken = items.popLast()
    pthread_mutex_unlock(mutex)
    return taken
  }

  /// Takes whatever is queued without waiting.
  func drain() -> [Item] {
    var taken: [Item] = []
    drain(into: &taken)
    return taken
  }

  /// Moves whatever is queued to the end of `taken` without waiting (as `takeAll(into:)`).
  func drain(into taken: inout [Item]) {
    pthread_mutex_lock(mutex)
    move(into: &taken)
    pthread_mutex_unlock(mutex)
  }
}
