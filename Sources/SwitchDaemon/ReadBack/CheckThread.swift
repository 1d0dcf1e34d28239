import SwitchCore
import SwitchSystem

/// Runs `ExecCheck=` programs on a thread of its own (never the loop or the
/// writer), one at a time in the order asked, each answer posted to the
/// writer: after each apply, and every `CheckIntervalSec=`. Owned by the
/// writer, the only one that asks.
final class CheckThread: @unchecked Sendable {
  enum Request: Sendable {
    /// Check these switches now (after their apply), and schedule them anew.
    case check([Check])
    /// The checks to repeat, replacing the previous ones (a configuration).
    case schedule([Check])
    case stop
  }

  struct Check: Sendable {
    var key: String
    var arguments: [String]
    var timeoutMilliseconds: Int
    var intervalMilliseconds: Int
  }

  private let requests = BlockingQueue<Request>()
  private let jobs: BlockingQueue<WriterJob>
  private let log: Log
  private var started = false

  init(jobs: BlockingQueue<WriterJob>, log: Log) {
    self.jobs = jobs
    self.log = log
  }

  /// The check of every switch in `catalog` that has one, as its apply
  /// command's time limit bounds it.
  static func checks(in catalog: Catalog) -> [Check] {
    catalog.switches.values.compactMap { definition in
      guard let arguments = definition.readBack?.check else { return nil }
      return Check(
        key: definition.key, arguments: arguments,
        timeoutMilliseconds: definition.apply?.timeoutMilliseconds
          ?? ApplyCommand.defaultTimeoutMilliseconds,
        intervalMilliseconds: definition.readBack?.checkIntervalMilliseconds ?? 0)
    }.sorted { $0.key < $1.key }
  }

  func submit(_ request: Request) {
    if !started {
      if case .stop = request { return }
      started = true
      startThread(named: "read-back check") { [requests, jobs, log] in
        Self.work(requests, jobs, log)
      }
    }
    requests.push(request)
  }

  private static func work(
    _ requests: BlockingQueue<Request>, _ jobs: BlockingQueue<WriterJob>, _ log: Log
  ) {
    var scheduled: [String: Check] = [:]
    var due: [String: Double] = [:]
    while true {
      let next = due.values.min() ?? .infinity
      let taken = next.isFinite ? requests.takeAll(before: next) : requests.takeAll()
      var now: [Check] = []
      for request in taken {
        switch request {
        case .stop: return
        case .schedule(let checks):
          scheduled = [:]
          due = [:]
          for check in checks where check.intervalMilliseconds > 0 {
            scheduled[check.key] = check
            due[check.key] = monotonicSeconds() + Double(check.intervalMilliseconds) / 1000
          }
        case .check(let checks): now.append(contentsOf: checks)
        }
      }
      let clock = monotonicSeconds()
      for (key, time) in due where time <= clock {
        if let check = scheduled[key] { now.append(check) }
      }
      for check in now {
        run(check, jobs, log)
        if let repeating = scheduled[check.key] {
          due[check.key] = monotonicSeconds() + Double(repeating.intervalMilliseconds) / 1000
        }
      }
    }
  }

  private static func run(_ check: Check, _ jobs: BlockingQueue<WriterJob>, _ log: Log) {
    let startedAt = ReadBackClock.now()
    let result = ReadBackProcess.check(
      arguments: check.arguments, environment: ReadBackEnvironment.of(check.key),
      timeoutMilliseconds: check.timeoutMilliseconds)
    switch result {
    case .success(let state):
      jobs.push(
        .observed(
          key: check.key, state, .check(startedAt: startedAt), at: ReadBackClock.now()))
    case .failure(let failure):
      // Per switch, rate-limited: a check every 0.1 s that keeps failing
      // wrote a line each time (the soak audit).
      log.rateLimited(
        .warning, cause: "ExecCheck= of \(check.key)",
        "the ExecCheck= program of \(check.key) read nothing: \(failure.reason)")
      jobs.push(
        .observed(key: check.key, nil, .check(startedAt: startedAt), at: ReadBackClock.now()))
    }
  }
}
