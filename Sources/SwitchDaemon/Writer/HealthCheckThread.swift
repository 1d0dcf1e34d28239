import Glibc
import SwitchStore
import SwitchSystem

/// The database's health check (`SwitchStore.checkHealth(of:)`, SQLite's
/// `quick_check`) on a thread of its own, while the writer loads the
/// switches and user values from the same file: with a million user values
/// the check and the load each took about half of the start
/// (`switchbench --only users`, "ready with 1,000,000 user values").
/// Nothing is written before `finish()` says the file is sound
/// (`SwitchStore.healthCheckPending`).
final class HealthCheckThread {
  /// What the check found, set by its thread before it ends (read after the join).
  private final class Outcome: @unchecked Sendable {
    var error: (any Error)?
  }
  private let outcome = Outcome()
  private var thread: pthread_t?

  init(path: String) {
    let outcome = self.outcome
    thread = startJoinableThread(named: "health check") {
      do {
        try SwitchStore.checkHealth(of: path)
      } catch {
        outcome.error = error
      }
    }
  }

  /// Waits for the check; nil when the file is sound, else why not. Once
  /// joined, later calls give the same answer.
  func finish() -> (any Error)? {
    if let thread {
      pthread_join(thread, nil)
      self.thread = nil
    }
    return outcome.error
  }

  deinit {
    // A writer that failed to start still waits: the check's connection
    // must be closed before the file is opened again.
    _ = finish()
  }
}
