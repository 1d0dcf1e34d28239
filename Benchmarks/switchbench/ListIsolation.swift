import Glibc
import SwitchSystem
import Synchronization

/// Isolation beside a client that lists every switch (1,000, ~540 KB an
/// answer) every 5 ms: paced `get`s with that client idle, then while it
/// lists. A list used to be built on the loop in one go (~0.4 ms), which
/// every other client's call waited for; the loop now keeps the last
/// answers' arrays and writes again only what changed (`SwitchLists`).
extension Bench {
  func measureListIsolation(_ daemon: DaemonProcess) throws {
    let lister = try Lister(socket: daemon.socket)
    defer { lister.stop() }
    progress("list isolation: get with the other client idle, then listing every 5 ms")
    let listingSeconds = try getsBeside(
      daemon, "while a client lists all 1,000 switches every 5 ms",
      otherErrors: { lister.errors }, set: lister.set(listing:))
    add(
      Row(
        section: "history", measure: "lists of every switch answered per second meanwhile",
        unit: .perSecond, value: Double(lister.lists) / max(1e-9, listingSeconds),
        note: "\(count(lister.lists)) lists"))
  }
}

/// The other client: while told to, asks `list` every `interval` on one
/// connection and reads each answer whole.
final class Lister: Sendable {
  private let listing = Atomic<Bool>(false)
  /// Set while a list is asked and not yet read: an idle window waits it out.
  private let inList = Atomic<Bool>(false)
  private let stopping = Atomic<Bool>(false)
  private let answered = Atomic<Int>(0)
  private let failures = Atomic<Int>(0)
  private let thread: Mutex<pthread_t?> = Mutex(nil)

  static let interval: UInt64 = 5_000_000

  var lists: Int { answered.load(ordering: .relaxed) }
  var errors: Int { failures.load(ordering: .relaxed) }

  init(socket: String) throws {
    let fd = connectUnix(socket)
    if fd < 0 { throw BenchError.errno("connect \(socket)") }
    let started = startJoinableThread { [self] in
      run(fd)
      close(fd)
    }
    thread.withLock { $0 = started }
  }

  /// Starts or stops listing; stopping waits for the list in flight.
  func set(listing on: Bool) {
    listing.store(on, ordering: .sequentiallyConsistent)
    if !on {
      while inList.load(ordering: .sequentiallyConsistent) { usleep(100) }
    }
  }

  func stop() {
    stopping.store(true, ordering: .sequentiallyConsistent)
    if let started = thread.withLock({ $0.take() }) { pthread_join(started, nil) }
  }

  private func run(_ fd: Int32) {
    var next = nowNanoseconds()
    var answer: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 1 << 20)
    while !stopping.load(ordering: .sequentiallyConsistent) {
      let now = nowNanoseconds()
      if next > now { usleep(UInt32((next - now) / 1000)) }
      next = max(next + Self.interval, nowNanoseconds())
      // inList first, then listing: `set(listing: false)` stores listing,
      // then waits for inList, so no list starts after it returns.
      inList.store(true, ordering: .sequentiallyConsistent)
      defer { inList.store(false, ordering: .sequentiallyConsistent) }
      guard listing.load(ordering: .sequentiallyConsistent) else {
        inList.store(false, ordering: .sequentiallyConsistent)
        usleep(500)
        continue
      }
      guard sendAll(fd, rpc("list")),
        readLines(
          fd, lines: 1, deadline: nowNanoseconds() + 60_000_000_000, into: &answer,
          buffer: &buffer),
        String(decoding: answer.prefix(64), as: UTF8.self).contains("\"result\"")
      else {
        failures.add(1, ordering: .relaxed)
        usleep(10_000)
        continue
      }
      answered.add(1, ordering: .relaxed)
    }
  }
}
