import CShim
import Glibc

/// The one timer source for deadlines (SEMANTICS.md, "Time"): two timerfds
/// one thread waits on. The wall clock's (CLOCK_REALTIME, with
/// TFD_TIMER_CANCEL_ON_SET) is armed for the earliest time given as a time,
/// so setting the clock forward fires what is now past and setting it back
/// delays it; the boot clock's (CLOCK_BOOTTIME) for the earliest tried
/// change, which no clock change moves (read and armed from the kernel's
/// clock, which libfaketime cannot fake). The thread calls `fired` when
/// either expires or the clock was set; the owner then carries out what is
/// due and arms them again. The owner's thread never waits.
public final class DeadlineTimers: @unchecked Sendable {
  private let wall: Int32
  private let boot: Int32
  /// An eventfd that ends the waiting thread.
  private let stopper: Int32
  private var thread: pthread_t?

  public init(fired: @escaping @Sendable () -> Void) throws(SystemError) {
    wall = shim_timerfd_wall()
    boot = shim_timerfd_boot()
    stopper = shim_eventfd()
    guard wall >= 0, boot >= 0, stopper >= 0 else {
      let error = SystemError.last("timerfd_create")
      for fd in [wall, boot, stopper] where fd >= 0 { close(fd) }
      throw error
    }
    let (wall, boot, stopper) = (wall, boot, stopper)
    // Read here, before the thread starts, and handed to it: the thread then
    // never runs this lazy static's initializer while the owner's first
    // `arm` may run it too. Swift's once is safe, but ThreadSanitizer cannot
    // see its synchronization in a binary that links the Swift runtime
    // statically (the runtime's TSan hook is not exported), and reported the
    // two threads' first reads as a data race (switchd exit 66 in CI).
    let clockMayBeFaked = Self.processClockMayBeFaked
    thread = startJoinableThread(named: "deadline timer") {
      Self.wait(
        timers: [wall, boot], stopper: stopper, clockMayBeFaked: clockMayBeFaked, fired: fired)
    }
  }

  /// Whether something preloaded into this process (libfaketime, as tests
  /// and `faketime switchd` use) may move the wall clock it reads without
  /// the kernel's knowing: then TFD_TIMER_CANCEL_ON_SET never fires for it,
  /// and the thread looks every `skewLookMilliseconds` whether the clock it
  /// reads moved against the kernel's. Nothing preloaded (a system service):
  /// no look, the thread sleeps until a timer fires.
  static let processClockMayBeFaked = !(getenv("LD_PRELOAD").map { String(cString: $0) } ?? "")
    .isEmpty
  static let skewLookMilliseconds: Int32 = 1000
  /// A move of the process's clock smaller than this is a clock running at
  /// a faked speed, not a setting of it.
  static let skewMoveMilliseconds: Int64 = 500

  private static func wait(
    timers: [Int32], stopper: Int32, clockMayBeFaked: Bool, fired: @Sendable () -> Void
  ) {
    var fds = (timers + [stopper]).map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
    let timeout = clockMayBeFaked ? skewLookMilliseconds : -1
    var skew = shim_wall_clock_skew_milliseconds()
    while true {
      for i in fds.indices { fds[i].revents = 0 }
      guard poll(&fds, nfds_t(fds.count), timeout) >= 0 || errno == EINTR else { return }
      if fds[2].revents != 0 { return }
      var due = false
      if clockMayBeFaked {
        let now = shim_wall_clock_skew_milliseconds()
        if abs(now - skew) >= skewMoveMilliseconds { due = true }
        skew = now
      }
      for i in 0..<2 where fds[i].revents != 0 {
        var expirations: UInt64 = 0
        let n = read(fds[i].fd, &expirations, 8)
        // ECANCELED: the clock was set; what is due must be looked at again.
        if n == 8 || (n < 0 && errno == ECANCELED) { due = true }
      }
      if due { fired() }
    }
  }

  /// Arms the wall-clock timer for `milliseconds` since the epoch (a time
  /// already past fires at once); nil disarms it.
  public func arm(wall milliseconds: Int64?) {
    guard Self.processClockMayBeFaked else {
      _ = shim_timerfd_arm_wall(wall, milliseconds.map { max($0, 0) } ?? -1)
      return
    }
    // The kernel's clock and the one the writer judges by may disagree: an
    // absolute time the kernel finds past while the writer does not would
    // fire, be found not due, be armed again and fire at once, for ever.
    // Armed for the time left on the process's clock instead (the look
    // above catches a clock that moves).
    _ = shim_timerfd_arm_in(wall, milliseconds.map { max($0 - wallClockMilliseconds(), 1) } ?? -1)
  }

  /// Arms the boot-clock timer for `milliseconds` of `bootClockMilliseconds()`.
  public func arm(boot milliseconds: Int64?) {
    _ = shim_timerfd_arm_boot(boot, milliseconds.map { max($0, 0) } ?? -1)
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
    for fd in [wall, boot, stopper] { close(fd) }
  }
}

/// CLOCK_BOOTTIME in milliseconds: runs on while the machine sleeps, and no
/// setting of the wall clock moves it.
public func bootClockMilliseconds() -> Int64 { shim_boot_clock_milliseconds() }

/// This boot's id (`/proc/sys/kernel/random/boot_id`); a fresh random one
/// when it cannot be read, so that a tried change of an unknown boot is
/// treated as one from another boot (reverted), never kept by mistake, and
/// then why (`problem`, for the warning at start).
public func currentBootID() -> (id: String, problem: SystemError?) {
  switch readBootID(from: bootIDPath) {
  case .success(let id): return (id, nil)
  case .failure(let problem):
    return ("unknown-" + String(UInt64.random(in: 0...UInt64.max), radix: 16), problem)
  }
}

/// Where the kernel shows the boot's id. A sandbox that hides /proc/sys
/// (systemd's `ProcSubset=pid`) hides it: every start then looks like a
/// new boot, and every tried change is reverted at it.
public let bootIDPath = "/proc/sys/kernel/random/boot_id"

/// The boot id in the file at `path`, or why it cannot be read.
public func readBootID(from path: String) -> Result<String, SystemError> {
  let fd = open(path, O_RDONLY | O_CLOEXEC)
  guard fd >= 0 else { return .failure(.last("open \(path)")) }
  defer { close(fd) }
  var bytes = [UInt8](repeating: 0, count: 64)
  let n = read(fd, &bytes, 64)
  guard n >= 0 else { return .failure(.last("read \(path)")) }
  let id = String(decoding: bytes[..<n], as: UTF8.self).filter { !$0.isWhitespace }
  return id.isEmpty ? .failure(SystemError(errno: ENODATA, call: "read \(path)")) : .success(id)
}
