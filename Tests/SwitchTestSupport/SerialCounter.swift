import Synchronization

/// A process-wide counter for unique names in tests that run in parallel.
public final class SerialCounter: Sendable {
  private let value = Mutex(0)

  public init() {}

  public func next() -> Int {
    value.withLock {
      $0 += 1
      return $0
    }
  }
}
