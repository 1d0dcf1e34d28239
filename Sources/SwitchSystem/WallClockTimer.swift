import CShim
import Glibc

/// One timer for deadlines given as times (SEMANTICS.md, "Time"): a timerfd
/// on CLOCK_REALTIME armed for the earliest deadline, with
/// TFD_TIMER_CANCEL_ON_SET, so that setting the clock forward fires what is
/// now past and setting it back delays it. A thread waits on it and calls
/// `fired` when it expires or the clock was set; the owner then carries out
/// what is due and arms it again. The owner's thread never waits.
public final class WallClockTimer: @unchecked Sendable {
  private let timer: Int32
  /// An eventfd that ends the waiting thread.
  private let stopper: Int32
  private var thread: pthread_t?

  public init(fired: @escaping @Sendable () -> Void) throws(SystemError) {
    timer = shim_timerfd_wall()
    guard timer >= 0 else { throw SystemError.last("timerfd_create") }
    stopper = shim_eventfd()
    guard stopper >= 0 else {
      let error = SystemError.last("eventfd")
      close(timer)
      throw error
    }
    let timer = timer
    let stopper = stopper
    thread = startJoinableThread {
      Self.wait(timer: timer, stopper: stopper, fired: fired)
    }
  }

  private static func wait(timer: Int32, stopper: Int32, fired: @Sendable () -> Void) {
    var fds = [
      pollfd(fd: timer, events: Int16(POLLIN), revents: 0),
      pollfd(fd: stopper, events: Int16(POLLIN), revents: 0),
    ]
    while true {
      fds[0].revents = 0
      fds[1].revents = 0
      guard poll(&fds, 2, -1) >= 0 || errno == EINTR else { return }
      if fds[1].revents != 0 { return }
      guard fds[0].revents != 0 else { continue }
      var expirations: UInt64 = 0
      let n = read(timer, &expirations, 8)
      // ECANCELED: the clock was set; what is due must be looked at again.
      if n == 8 || (n < 0 && errno == ECANCELED) { fired() }
    }
  }

  /// Arms the timer for `milliseconds` since the epoch (a time already
  /// past fires at once); nil disarms it.
  public func arm(at milliseconds: Int64?) {
    _ = shim_timerfd_arm_wall(timer, milliseconds.map { max($0, 0) } ?? -1)
  }

  /// Ends the waiting thread; `fired` is not called after this returns.
  public func stop() {
    guard let thread else { return }
    var one: UInt64 = 1
    _ = write(stopper, &one, 8)
    pthread_join(thread, nil)
    self.thread = nil
  }

  deinit {
    stop()
    close(timer)
    close(stopper)
  }
}
