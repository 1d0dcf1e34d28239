import CShim
import Glibc

/// Starts a detached POSIX thread running `body`. (Foundation's `Thread`
/// would pull Foundation in for one call.) `name`: what `top -H` and
/// /proc/PID/task/TID/comm show for it (at most 15 bytes are kept).
public func startThread(named name: String, _ body: @escaping @Sendable () -> Void) {
  pthread_detach(startJoinableThread(named: name, body))
}

/// The same, where the system may refuse another thread (a task limit,
/// `TasksMax=`): pthread_create's error number (EAGAIN), 0 when it runs.
public func startThreadIfAllowed(named name: String, _ body: @escaping @Sendable () -> Void)
  -> Int32
{
  let (thread, rc) = createThread(body)
  guard rc == 0 else { return rc }
  _ = shim_name_thread(thread, name)
  pthread_detach(thread)
  return 0
}

/// Starts a joinable POSIX thread running `body`; the caller joins or detaches it.
public func startJoinableThread(named name: String, _ body: @escaping @Sendable () -> Void)
  -> pthread_t
{
  let thread = startJoinableThread(body)
  // Named here, not by the thread itself: once this returns, /proc shows
  // the name (named from inside, a thread that had not run yet showed its
  // starter's name, and a test of the names failed on a loaded machine).
  _ = shim_name_thread(thread, name)
  return thread
}

/// Starts a joinable POSIX thread running `body`, keeping the name of the
/// thread that started it.
public func startJoinableThread(_ body: @escaping @Sendable () -> Void) -> pthread_t {
  let (thread, rc) = createThread(body)
  precondition(rc == 0, "pthread_create failed: \(rc)")
  return thread
}

private func createThread(_ body: @escaping @Sendable () -> Void) -> (pthread_t, Int32) {
  // A class, because pthread_create passes one pointer; Sendable, because
  // it holds nothing but a Sendable closure.
  final class Box: Sendable {
    let body: @Sendable () -> Void
    init(_ body: @escaping @Sendable () -> Void) { self.body = body }
  }
  let context = Unmanaged.passRetained(Box(body))
  var thread = pthread_t()
  let rc = pthread_create(
    &thread, nil,
    { raw in
      Unmanaged<Box>.fromOpaque(raw!).takeRetainedValue().body()
      return nil
    }, context.toOpaque())
  // Not started: nothing will take the box back.
  if rc != 0 { context.release() }
  return (thread, rc)
}
