import SwitchCore
import SwitchProtocol
import SwitchSystem

// Reading the system back (SEMANTICS.md rule 18): the writer starts and
// stops the `ExecWatch=` threads and asks the check thread for `ExecCheck=`
// runs; both post what they read back to it as jobs, and it tells the loop
// each switch's `observed`. Nothing here waits for a program.
extension Writer {
  /// Starts a watch for every switch that has one, and schedules the checks.
  func startReadBack(jobs: BlockingQueue<WriterJob>) {
    self.jobs = jobs
    reconfigureReadBack(from: Catalog(switches: []))
  }

  /// Stops the watches whose program is gone or changed, starts the new
  /// ones, and schedules the checks of the running configuration.
  func reconfigureReadBack(from previous: Catalog) {
    guard let jobs else { return }
    for (key, watch) in watches where catalog.switches[key]?.readBack?.watch != watch.arguments {
      watch.stop()
      watches[key] = nil
      observe(key, nil, source: .watch, at: ReadBackClock.now())
    }
    for definition in catalog.switches.values {
      guard let arguments = definition.readBack?.watch, watches[definition.key] == nil else {
        continue
      }
      let watch = WatchThread(key: definition.key, arguments: arguments, jobs: jobs, log: log)
      watches[definition.key] = watch
      watch.start()
    }
    for key in previous.switches.keys where catalog.switches[key]?.readBack == nil {
      observe(key, nil, source: .watch, at: ReadBackClock.now())
    }
    var reports: [String: ReadBackReport] = [:]
    for definition in catalog.switches.values where definition.readBack != nil {
      reports[definition.key] =
        readBackReports[definition.key] ?? ReadBackReport(key: definition.key)
    }
    readBackReports = reports
    readBackReportsChanged = true
    let scheduled = CheckThread.checks(in: catalog)
    if !scheduled.isEmpty { checks.submit(.schedule(scheduled)) }
  }

  /// Ends every watch program and the check thread (the daemon stops).
  func stopReadBack() {
    for watch in watches.values { watch.stop() }
    watches = [:]
    checks.submit(.stop)
  }

  /// `key`'s watch program ended: `status` and `why` say why until it reads again.
  func watchEnded(_ key: String, reason: String) {
    observe(key, nil, source: .watch, at: ReadBackClock.now())
    guard readBackReports[key] != nil else { return }
    readBackReports[key]?.watchProblem = reason
    readBackReportsChanged = true
  }

  /// Runs the checks of `keys` whose apply command has just run.
  func checkAfterApply(_ keys: [String]) {
    let wanted = Set(keys)
    let due = CheckThread.checks(in: catalog).filter { wanted.contains($0.key) }
    if !due.isEmpty { checks.submit(.check(due)) }
  }

  /// A reading of `key`'s state (nil: unknown), for the loop's `observed`.
  func observe(_ key: String, _ state: Bool?, source: Drift.Source, at time: Int64) {
    guard catalog.switches[key]?.readBack != nil || state == nil else { return }
    if state == nil, drift[key] != nil { Drift.unknown(&drift[key, default: Drift.Memory()]) }
    if source == .watch, state != nil, readBackReports[key]?.watchProblem != nil {
      readBackReports[key]?.watchProblem = nil
      readBackReportsChanged = true
    }
    if let known = observed[key], known == state { return }
    observed[key] = .some(state)
    unreported[key] = .some(state)
  }

  /// The readings the loop has not been told, as an output; nil when none.
  func readingsOutput() -> WriterOutput? {
    guard !unreported.isEmpty || readBackReportsChanged else { return nil }
    var output = WriterOutput(
      catalog: nil, changes: [], answers: [], oldestRetained: oldestRetained)
    output.observations = unreported
    unreported = [:]
    if readBackReportsChanged { output.readBack = readBackReports }
    readBackReportsChanged = false
    return output
  }
}
