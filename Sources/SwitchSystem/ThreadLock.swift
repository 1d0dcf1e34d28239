import Glibc

/// A value only one thread touches at a time, guarded by a pthread mutex.
///
/// Not the standard library's `Mutex`: on Linux it locks with a futex
/// ThreadSanitizer does not see, so CI's TSan run reports what it guards as
/// a race between threads that in fact took turns (it did, once, for a
/// test's counter). TSan intercepts `pthread_mutex_lock`, so a value
/// behind this lock is checked, not reported. Nothing here is on a hot path.
///
/// The value lives in memory of its own, not in a stored property: Swift's
/// access checks under TSan tag a class's stored property by address, and
/// an empty value (`ThreadLock(())`, a lock that guards no data) shared
/// its address with what the lock itself reads before locking, which TSan
/// reported as a race (CI's TSan run; a 4-thread loop on a global
/// `ThreadLock(())` shows it every time, and none with this storage).
public final class ThreadLock<Value>: @unchecked Sendable {
  private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
  private let storage = UnsafeMutablePointer<Value>.allocate(capacity: 1)

  public init(_ value: Value) {
    storage.initialize(to: value)
    pthread_mutex_init(mutex, nil)
  }

  deinit {
    pthread_mutex_destroy(mutex)
    mutex.deallocate()
    storage.deinitialize(count: 1)
    storage.deallocate()
  }

  /// Runs `body` with the value while holding the lock.
  public func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
    pthread_mutex_lock(mutex)
    defer { pthread_mutex_unlock(mutex) }
    return try body(&storage.pointee)
  }
}
