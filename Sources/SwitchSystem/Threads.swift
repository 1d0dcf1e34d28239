import Glibc

/// Starts a detached POSIX thread running `body`. (Foundation's `Thread`
/// would pull Foundation in for one call.)
public func startThread(_ body: @escaping @Sendable () -> Void) {
  pthread_detach(startJoinableThread(body))
}

/// Starts a joinable POSIX thread running `body`; the caller joins or detaches it.
public func startJoinableThread(_ body: @escaping @Sendable () -> Void) -> pthread_t {
  // A class, because pthread_create passes one pointer; Sendable, because
  // it holds nothing but a Sendable closure.
  final class Box: Sendable {
    let body: @Sendable () -> Void
    init(_ body: @escaping @Sendable () -> Void) { self.body = body }
  }
  let context = Unmanaged.passRetained(Box(body)).toOpaque()
  var thread = pthread_t()
  let rc = pthread_create(
    &thread, nil,
    { raw in
      Unmanaged<Box>.fromOpaque(raw!).takeRetainedValue().body()
      return nil
    }, context)
  precondition(rc == 0, "pthread_create failed: \(rc)")
  return thread
}
