import Synchronization

/// A process-wide counter for unique names in tests that run in parallel.
public final class SerialCounter: Sendable {
  // An atomic, not a Mutex: the Mutex's lock is a futex ThreadSanitizer
  // does not see, so two tests taking names at once were reported as a race
  // on the count (CI's TSan run, once in many).
  private let value = Atomic<Int>(0)

  public init() {}

  public func next() -> Int {
    value.wrappingAdd(1, ordering: .relaxed).newValue
  }
}
