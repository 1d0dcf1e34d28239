import Glibc

/// Starts a detached POSIX thread running `body`. (Foundation's `Thread`
/// would pull Foundation into the daemon for one call.)
func startThread(_ body: @escaping @Sendable () -> Void) {
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
      let box = Unmanaged<Box>.fromOpaque(raw!).takeRetainedValue()
      box.body()
      return nil
    }, context)
  precondition(rc == 0, "pthread_create failed: \(rc)")
  pthread_detach(thread)
}
