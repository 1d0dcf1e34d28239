import SwitchCore
import SwitchSystem
import Synchronization

/// One apply command to run: a switch, its command, and what to tell it.
struct ApplyStep: Sendable {
  var key: String
  var command: ApplyCommand
  /// The state the switch is to have; its effective value is what to make real.
  var state: SwitchState
  var cause: Cause

  /// The environment CONFIG.md documents, and nothing else.
  var environment: [String] {
    [
      "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
      "SWITCH_KEY=\(key)",
      "SWITCH_EFFECTIVE=\(state.isOnAndInEffect ? "on" : "off")",
      "SWITCH_CHECKED=\(state.checked ? "on" : "off")",
      "SWITCH_DISABLED=\(state.disabled ? "yes" : "no")",
      "SWITCH_CAUSE=\(cause.wireName)",
    ]
  }

  /// Runs the command to its end; nil when it applied, else the reason it did not.
  func run() -> String? {
    let result = ApplyProcess.run(
      arguments: command.arguments, environment: environment,
      timeoutMilliseconds: command.timeoutMilliseconds)
    switch result.outcome {
    case .exited(status: 0): return nil
    case .exited(let status): return result.firstErrorLine ?? "exit status \(status)"
    case .killed(let signal): return result.firstErrorLine ?? "killed by signal \(signal)"
    case .timedOut: return command.timeoutReason
    case .couldNotStart(let errno):
      return "cannot run \(command.path): \(SystemError(errno: errno, call: "posix_spawn").reason)"
    }
  }
}

/// The commands one decision needs, run together: all or nothing.
struct ApplyTask: Sendable {
  var id: UInt64
  var steps: [ApplyStep]
  /// What each step's switch was before, to put back when a later step fails.
  var undo: [ApplyStep]
  /// Every step runs and reports its own result (a configuration change:
  /// a policy is not refused when a command fails; its switch is `invalid`).
  var eachOwn = false
}

/// What came of an `ApplyTask`, posted back to the writer's queue.
struct ApplyResult: Sendable {
  var id: UInt64
  /// nil: every step applied. Else the first failure's reason; the steps
  /// before it were undone.
  var failure: String?
  /// The switch whose command failed (`failure`): the written one or a
  /// dependent its change changes too.
  var failedKey: String? = nil
  /// For an `eachOwn` task: each failed step's reason, by key.
  var failures: [String: String] = [:]
  /// The switches whose undo failed too (after `failure`): the system may
  /// hold the value the refused change asked for.
  var undoFailed: [String] = []
}

/// Threads that run apply commands, so that neither the event loop nor
/// the writer ever waits for one (SEMANTICS.md rule 16): the writer submits
/// a task and goes on; the result comes back as a writer job.
///
/// A thread is started when a task comes and every thread has one, up to
/// `most`: commands of different switches run side by side, and a quick
/// one does not wait behind slow ones (an audit: with four threads, four
/// hung commands held every other switch's apply for their timeout).
/// Past `most` tasks wait their turn here. No thread until the first task:
/// a configuration without commands costs nothing. Owned by the writer's
/// thread, the only one that submits.
final class ApplyPool {
  /// Starts a thread running `work`: 0, or pthread_create's error number.
  typealias ThreadStarter = (_ work: @escaping @Sendable () -> Void) -> Int32

  private let tasks = BlockingQueue<ApplyTask?>()
  private let results: BlockingQueue<WriterJob>
  private let most: Int
  private let log: Log?
  private let startThread: ThreadStarter
  private var threads = 0
  /// Tasks submitted and not yet finished (queued or running).
  private let unfinished = TaskCount()

  private final class TaskCount: Sendable {
    let value = Atomic<Int>(0)
  }

  init(
    most: Int = 64, results: BlockingQueue<WriterJob>, log: Log? = nil,
    startingThreadsWith startThread: @escaping ThreadStarter = {
      startThreadIfAllowed(named: "apply", $0)
    }
  ) {
    self.most = most
    self.results = results
    self.log = log
    self.startThread = startThread
  }

  func submit(_ task: ApplyTask) {
    let count = unfinished.value.add(1, ordering: .acquiringAndReleasing).newValue
    if count > threads && threads < most {
      let work = { @Sendable [tasks, results, unfinished] in Self.work(tasks, results, unfinished) }
      let error = startThread(work)
      if error == 0 {
        threads += 1
      } else {
        // A task limit (EAGAIN: `TasksMax=`, RLIMIT_NPROC). With a thread
        // running, the task waits for it, as with a fixed pool, and the
        // next submit tries again; with none, it fails now, as a command
        // that cannot start does (it was a crash, a review found).
        let reason = SystemError(errno: error, call: "pthread_create").reason
        log?.rateLimited(
          .warning, cause: "apply thread",
          "cannot start another thread for apply commands (\(reason)); "
            + (threads == 0 ? "the command fails" : "the command waits for one of \(threads)"))
        if threads == 0 {
          unfinished.value.subtract(1, ordering: .acquiringAndReleasing)
          results.push(.applied(Self.notStarted(task, because: reason)))
          return
        }
      }
    }
    tasks.push(task)
  }

  /// The result of a task no thread could run: each step failed, nothing ran.
  static func notStarted(_ task: ApplyTask, because reason: String) -> ApplyResult {
    let why = "cannot start a thread to run it: \(reason)"
    if task.eachOwn {
      var failures: [String: String] = [:]
      for step in task.steps { failures[step.key] = why }
      return ApplyResult(id: task.id, failure: nil, failures: failures)
    }
    return ApplyResult(id: task.id, failure: why, failedKey: task.steps.first?.key)
  }

  /// Ends the threads once the tasks queued before are done.
  func stop() {
    for _ in 0..<threads { tasks.push(nil) }
  }

  private static func work(
    _ tasks: BlockingQueue<ApplyTask?>, _ results: BlockingQueue<WriterJob>,
    _ unfinished: TaskCount
  ) {
    while let task = tasks.takeOne() {
      // Counted down before the result goes: the writer's next submit,
      // which may follow the result, sees this thread as free.
      let result = run(task)
      unfinished.value.subtract(1, ordering: .acquiringAndReleasing)
      results.push(.applied(result))
    }
  }

  private static func run(_ task: ApplyTask) -> ApplyResult {
    if task.eachOwn {
      var failures: [String: String] = [:]
      for step in task.steps { if let reason = step.run() { failures[step.key] = reason } }
      return ApplyResult(id: task.id, failure: nil, failures: failures)
    }
    for (index, step) in task.steps.enumerated() {
      guard let reason = step.run() else { continue }
      // All or nothing: put back what the earlier steps changed.
      var undoFailed: [String] = []
      for undo in task.undo[..<index].reversed() where undo.run() != nil {
        undoFailed.append(undo.key)
      }
      return ApplyResult(
        id: task.id, failure: reason, failedKey: step.key, undoFailed: undoFailed)
    }
    return ApplyResult(id: task.id, failure: nil)
  }
}
