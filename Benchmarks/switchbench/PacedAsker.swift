import Glibc
import SwitchSystem
import Synchronization

/// The other client of an isolation figure: on one connection, while told
/// to, sends the request `ask` makes at most once every `interval` and
/// reads its answer (`lines` lines, judged by `check`), which `answered`
/// looks into. Both run on the asker's own thread, one answer at a time.
/// Paced, not flat out: a client asking as fast as it can keeps a core busy
/// by itself, and the figure would measure the scheduler.
final class PacedAsker: Sendable {
  private let asking = Atomic<Bool>(false)
  /// Set while a request is sent and its answer not yet read: an idle
  /// window waits it out.
  private let inFlight = Atomic<Bool>(false)
  private let stopping = Atomic<Bool>(false)
  private let answers = Atomic<Int>(0)
  private let failures = Atomic<Int>(0)
  private let thread: Mutex<pthread_t?> = Mutex(nil)

  /// Answers read that `check` judged good.
  var answered: Int { answers.load(ordering: .relaxed) }
  var errors: Int { failures.load(ordering: .relaxed) }

  init(
    socket: String, interval: UInt64, lines: Int = 1, check: ReplyCheck = .jsonRPC,
    ask: @escaping @Sendable () -> [UInt8],
    answered: @escaping @Sendable ([UInt8]) -> Void = { _ in }
  ) throws {
    let fd = connectUnix(socket)
    if fd < 0 { throw BenchError.errno("connect \(socket)") }
    let started = startJoinableThread { [self] in
      run(fd, interval: interval, lines: lines, check: check, ask: ask, answered: answered)
      close(fd)
    }
    thread.withLock { $0 = started }
  }

  /// Starts or stops asking; stopping waits for the answer in flight.
  func set(asking on: Bool) {
    asking.store(on, ordering: .sequentiallyConsistent)
    if !on {
      while inFlight.load(ordering: .sequentiallyConsistent) { usleep(100) }
    }
  }

  func stop() {
    stopping.store(true, ordering: .sequentiallyConsistent)
    if let started = thread.withLock({ $0.take() }) { pthread_join(started, nil) }
  }

  private func run(
    _ fd: Int32, interval: UInt64, lines: Int, check: ReplyCheck, ask: () -> [UInt8],
    answered: ([UInt8]) -> Void
  ) {
    var next = nowNanoseconds()
    // Kept from answer to answer: fresh ones for each ~500 KB answer would
    // cost the CPU the daemon is measured with.
    var answer: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 1 << 20)
    while !stopping.load(ordering: .sequentiallyConsistent) {
      let now = nowNanoseconds()
      if next > now { usleep(UInt32((next - now) / 1000)) }
      next = max(next + interval, nowNanoseconds())
      // inFlight first, then asking: `set(asking: false)` stores asking,
      // then waits for inFlight, so nothing is sent after it returns.
      inFlight.store(true, ordering: .sequentiallyConsistent)
      defer { inFlight.store(false, ordering: .sequentiallyConsistent) }
      guard asking.load(ordering: .sequentiallyConsistent) else {
        inFlight.store(false, ordering: .sequentiallyConsistent)
        usleep(500)
        continue
      }
      guard sendAll(fd, ask()),
        readLines(
          fd, lines: lines, deadline: nowNanoseconds() + 60_000_000_000, into: &answer,
          buffer: &buffer),
        check.accepts(answer)
      else {
        failures.add(1, ordering: .relaxed)
        usleep(10_000)
        continue
      }
      answers.add(1, ordering: .relaxed)
      answered(answer)
    }
  }
}
