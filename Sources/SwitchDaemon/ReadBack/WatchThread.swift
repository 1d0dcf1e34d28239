import Glibc
import SwitchCore
import SwitchSystem

/// One `ExecWatch=` program kept running for the daemon's life on a thread
/// of its own (it blocks on the program's output: never the loop's or the
/// writer's), each state it prints posted to the writer. When it exits it
/// is started again after 1 s, doubling to at most 60 s (CONFIG.md); a run
/// that lasted longer than the wait before it starts the wait over.
///
/// `@unchecked Sendable`: `stopped` and `running` are touched only with
/// the mutex held; the rest is set once.
final class WatchThread: @unchecked Sendable {
  let key: String
  let arguments: [String]
  private let jobs: BlockingQueue<WriterJob>
  private let log: Log
  private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
  private var stopped = false
  private var running: RunningWatch?
  /// Wakes the wait between runs when the watch is stopped.
  private let wake = BlockingQueue<Bool>()

  static let firstRestartSeconds = 1.0
  static let maximumRestartSeconds = 60.0

  init(key: String, arguments: [String], jobs: BlockingQueue<WriterJob>, log: Log) {
    self.key = key
    self.arguments = arguments
    self.jobs = jobs
    self.log = log
    pthread_mutex_init(mutex, nil)
  }

  deinit {
    pthread_mutex_destroy(mutex)
    mutex.deallocate()
  }

  func start() {
    startThread(named: "read-back watch") { [self] in run() }
  }

  /// Ends the program (its whole process group) and the thread; no
  /// reading is posted after the thread sees it.
  func stop() {
    pthread_mutex_lock(mutex)
    stopped = true
    running?.stop()
    pthread_mutex_unlock(mutex)
    wake.push(true)
  }

  private var isStopped: Bool {
    pthread_mutex_lock(mutex)
    defer { pthread_mutex_unlock(mutex) }
    return stopped
  }

  /// Keeps `running` for `stop`; one started after `stop` is stopped at once.
  private func attach(_ watch: RunningWatch?) {
    pthread_mutex_lock(mutex)
    running = watch
    if stopped { watch?.stop() }
    pthread_mutex_unlock(mutex)
  }

  private func run() {
    var wait = Self.firstRestartSeconds
    let environment = ReadBackEnvironment.of(key)
    while !isStopped {
      let startedAt = monotonicSeconds()
      let end = ReadBackProcess.follow(
        arguments: arguments, environment: environment, started: { attach($0) },
        line: { [self] state in
          if state == nil {
            log.rateLimited(
              .warning, cause: "ExecWatch= of \(key)",
              "the ExecWatch= program of \(key) printed a line that is not on or off")
          }
          jobs.push(.observed(key: key, state, .watch, at: ReadBackClock.now()))
        },
        // Bounded: a program that floods its standard error cannot fill the journal.
        errorLine: { [self] line in
          log.rateLimited(.notice, cause: "ExecWatch= of \(key)", "ExecWatch= of \(key): \(line)")
        })
      attach(nil)
      if isStopped { return }
      if monotonicSeconds() - startedAt > wait { wait = Self.firstRestartSeconds }
      let reason =
        "the ExecWatch= program of \(key) ended (\(end)); started again in "
        + "\(ApplyCommand.seconds(Int(wait * 1000)))s"
      log.warning(reason)
      jobs.push(.watchEnded(key: key, reason: reason))
      _ = wake.takeAll(before: monotonicSeconds() + wait)
      wait = min(wait * 2, Self.maximumRestartSeconds)
    }
  }
}

/// The environment of `ExecCheck=` and `ExecWatch=` (CONFIG.md): the apply
/// command's without what to apply.
enum ReadBackEnvironment {
  static func of(_ key: String) -> [String] {
    ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "SWITCH_KEY=\(key)"]
  }
}

/// The clock the drift rules count on: monotonic milliseconds, so that a
/// change of the wall clock neither stretches nor cuts a window.
enum ReadBackClock {
  static func now() -> Int64 { Int64(monotonicSeconds() * 1000) }
}
