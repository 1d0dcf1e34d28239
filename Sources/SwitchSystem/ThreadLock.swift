import Glibc

/// A value only one thread touches at a time, guarded by a pthread mutex.
///
/// Not the standard library's `Mutex`: on Linux it locks with a futex
/// ThreadSanitizer does not see, so CI's TSan run reports what it guards as
/// a race between threads that in fact took turns (it did, once, for a
/// test's counter). TSan intercepts `pthread_mutex_lock`, so a value
/// behind this lock is checked, not reported. Nothing here is on a hot path.
public final class ThreadLock<Value>: @unchecked Sendable {
  private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
  private var value: Value

  public init(_ value: Value) {
    self.value = value
    pthread_mutex_init(mutex, nil)
  }

  deinit {
    pthread_mutex_destroy(mutex)
    mutex.deallocate()
  }

  /// Runs `body` with the value while holding the lock.
  public func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
    pthread_mutex_lock(mutex)
    defer { pthread_mutex_unlock(mutex) }
    return try body(&value)
  }
}
