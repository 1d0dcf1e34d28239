import SwitchCore
import SwitchProtocol

// Apply, then commit (SEMANTICS.md rules 14–16), without the writer ever
// waiting for a command.
//
// A write whose changes alter the effective value of a switch with an apply
// command is parked: its keys are marked busy, its commands go to the
// `ApplyPool`, and the writer goes on with other writes. Later writes of a
// busy key wait behind it, in order. The result comes back as a writer job;
// the parked write is then decided again (nothing else could touch its
// keys) and commits with the group it lands in, or fails with `ApplyFailed`;
// then the writes that waited behind it are decided, in order.
//
// Policy changes and the reconcile at start and reload park the same way,
// but a failure does not refuse them: it commits the switch `invalid`.
//
// A reload or stop waits until nothing is busy (the jobs after it wait with
// it), so that no command runs under a configuration that is going away.

/// A write as the writer carries it, with its apply command's verdict once it ran.
struct WriteRequest: Sendable {
  var ticket: Ticket
  /// Hashed once, here: every table the write visits, on both threads and
  /// in the store, looks it up by this hash (the change carries it on).
  var hashedKey: HashedKey
  var key: String { hashedKey.string }
  var operation: Operation
  var caller: Caller
  /// Set once its command has run: for which effective value, and the
  /// failure's reason (nil: applied).
  var applied: AppliedCommand?
  /// A value adopted from the system (rule 19): cause `external`, and the
  /// switch's own command does not run (the system already has the value).
  var external = false
  /// The write's `for` or `until`: a timed value or hold (rules 21–22).
  var lasting: Lasting? = nil

  init(
    ticket: Ticket, key: String, operation: Operation, caller: Caller,
    applied: AppliedCommand? = nil, external: Bool = false, lasting: Lasting? = nil
  ) {
    self.ticket = ticket
    hashedKey = HashedKey(key)
    self.operation = operation
    self.caller = caller
    self.applied = applied
    self.external = external
    self.lasting = lasting
  }
}

struct AppliedCommand: Sendable {
  var id: UInt64
  /// The effective value each command was run for, by key.
  var effective: [String: Bool]
  var failure: String?
  /// Whose command failed (`ApplyResult.failedKey`).
  var failedKey: String?
  /// Whose undo failed after it (`ApplyResult.undoFailed`).
  var undoFailed: [String] = []
}

/// A policy change or a reconcile whose command is running.
struct SystemApply: Sendable {
  var id: UInt64
  var key: String
  /// The State a policy or a dependency gives the switch; nil for a
  /// reconcile of the State as it is.
  var target: SwitchState?
  /// What makes `target`: `policy` or `dependency` (`reconcile` without one).
  var cause: Cause
  /// Part of the reconcile of the start or of a reload (`status.reconciling`).
  var counted: Bool
  /// A re-application after a drift whose command ran (not a drift's own
  /// `invalid` change, which runs nothing).
  var reapplied = false
}

/// What a group decides, in order.
enum GroupItem: Sendable {
  case write(WriteRequest)
  /// A policy change or reconcile whose command has run (failure nil: applied).
  case system(SystemApply, failure: String?)
  /// A reload whose commands have run: it is carried out alone, not in a group.
  case reload(ParkedReload, failures: [String: String])
  /// Frees what a finished job held, and decides the writes that waited for it.
  case release(UInt64)
}

/// A reload whose policy or dependency changes need apply commands: they
/// run first, then the whole configuration change commits in one group
/// (rule 17: one transaction), each switch `invalid` if its command failed.
struct ParkedReload: Sendable {
  var id: UInt64
  var ticket: Ticket?
  var next: Catalog
  var access: AccessRules
  /// The effective value each command was run for, by key.
  var applied: [String: Bool]
  /// A schedule's window edge, not a reload anyone asked for.
  var scheduled = false
  /// What the reload replaced, put back if it fails to commit.
  var before: Writer.ConfiguredBefore
}

/// The writer's book of apply commands under way.
struct ApplyBook {
  enum Parked {
    case write(WriteRequest, effective: [String: Bool])
    case system(SystemApply)
    case reload(ParkedReload)
  }
  private var nextID: UInt64 = 0
  private(set) var parked: [UInt64: Parked] = [:]
  /// Each busy key and the parked job that holds it.
  private(set) var busy: [String: UInt64] = [:]
  /// Writes waiting for a busy key, in arrival order, each with the keys it
  /// may change (its own and its dependents'): a write goes only after every
  /// earlier write that shares a key with it, so each switch's writes keep
  /// their order also when a write changes several switches.
  private var waiting: [(write: WriteRequest, keys: [String])] = []
  /// How many waiting writes may change each key.
  private var waitingFor: [String: Int] = [:]
  /// Jobs that wait until nothing is busy: a reload or stop, and what came after it.
  var heldBack: [WriterJob] = []
  /// Reconciles of the start or a reload not yet finished.
  private(set) var reconciling: Set<UInt64> = []
  /// The count `status` was last told.
  var reconcilingReported = 0
  /// A reload's answer, given once its own commands have run.
  var reloadAnswer: (ticket: Ticket, answer: WriterOutput.Answer, remaining: Set<UInt64>)?

  mutating func newID() -> UInt64 {
    nextID += 1
    return nextID
  }

  /// Whether a new `write`, which may change `keys`, may be decided now:
  /// no other job holds one of them and no earlier write waits for one.
  func mayDecide(_ write: WriteRequest, touching keys: [String]) -> Bool {
    keys.allSatisfy { key in
      (busy[key] == nil || busy[key] == write.applied?.id) && waitingFor[key, default: 0] == 0
    }
  }

  mutating func wait(_ write: WriteRequest, touching keys: [String]) {
    waiting.append((write, keys))
    for key in keys { waitingFor[key, default: 0] += 1 }
  }

  /// The first waiting write that may go now: none of its keys is busy,
  /// and no earlier waiting write shares one. Removed from the queue.
  mutating func nextReady() -> WriteRequest? {
    var claimed = Set<String>()
    for (index, entry) in waiting.enumerated() {
      if entry.keys.allSatisfy({ busy[$0] == nil && !claimed.contains($0) }) {
        waiting.remove(at: index)
        for key in entry.keys { waitingFor[key, default: 1] -= 1 }
        return entry.write
      }
      claimed.formUnion(entry.keys)
    }
    return nil
  }

  mutating func park(_ id: UInt64, _ job: Parked, keys: [String]) {
    parked[id] = job
    for key in keys { busy[key] = id }
    if case .system(let system) = job, system.counted { reconciling.insert(id) }
  }

  /// The keys parked job `id` holds (none once it is resumed).
  func keys(of id: UInt64) -> [String] {
    busy.compactMap { $0.value == id ? $0.key : nil }
  }

  /// The parked job `result` finishes, as an item for the group.
  mutating func resume(_ result: ApplyResult) -> GroupItem? {
    guard let job = parked.removeValue(forKey: result.id) else { return nil }
    switch job {
    case .write(var write, let effective):
      write.applied = AppliedCommand(
        id: result.id, effective: effective, failure: result.failure, failedKey: result.failedKey,
        undoFailed: result.undoFailed)
      return .write(write)
    case .system(let system):
      return .system(system, failure: result.failure)
    case .reload(let reload):
      return .reload(reload, failures: result.failures)
    }
  }

  /// Frees what job `id` held (its waiting writes then come from
  /// `nextReady`). Calling it again changes nothing.
  mutating func release(_ id: UInt64) {
    reconciling.remove(id)
    if var pending = reloadAnswer, pending.remaining.remove(id) != nil {
      reloadAnswer = pending
    }
    for (key, owner) in busy where owner == id { busy[key] = nil }
  }

  /// The held-back jobs, once nothing is busy any more.
  mutating func takeHeldBack() -> [WriterJob]? {
    guard !heldBack.isEmpty, busy.isEmpty else { return nil }
    defer { heldBack.removeAll() }
    return heldBack
  }

  var isHoldingBack: Bool { !heldBack.isEmpty }

  /// No command under way and no write waiting for one: every write may be decided.
  var isIdle: Bool { busy.isEmpty && waiting.isEmpty }
}

extension Writer {
  /// How a decided write goes on.
  enum ApplyStage {
    /// Its commands are running: it is answered later.
    case parked
    /// A command failed (the reason, and whose: the write's switch or a
    /// dependent's): `ApplyFailed`, nothing changes.
    case failed(String, key: String?)
    /// No command runs: commit the planned changes as they are (a case of
    /// its own: returning them in `proceed` copied and released the array
    /// with the stage on every write, callgrind).
    case asPlanned
    /// Commit these changes (none: nothing changes).
    case proceed([PlannedChange])
  }

  /// Runs the apply commands a decided write needs first, or says how it
  /// goes on once they have run (rules 14 and 17): the command of every
  /// switch among `planned` (the write's own change and its dependents')
  /// whose effective value changes, all or nothing; `apply` always runs the
  /// switch's own. A write that leaves every effective value as it was runs
  /// nothing. Each switch whose command ran is no longer `invalid`.
  func applyStage(
    _ write: borrowing WriteRequest, _ decided: borrowing Decision, _ planned: [PlannedChange]
  ) -> ApplyStage {
    var plans = planned
    if write.operation == .apply, !plans.contains(where: { $0.key == write.key }) {
      let current = decided.record.state
      plans.insert(
        PlannedChange(key: write.key, cause: .apply, state: current, previous: current), at: 0)
    }
    var steps: [ApplyStep] = []
    var undo: [ApplyStep] = []
    for plan in plans {
      if write.external && plan.key == write.key { continue }
      // The written switch's definition came with its decision.
      guard
        let definition = plan.key == write.key ? decided.definition : catalog.switches[plan.key],
        let command = definition.apply,
        (write.operation == .apply && plan.key == write.key)
          || Rules.needsApply(definition, from: plan.previous, to: plan.state)
      else { continue }
      // SWITCH_CAUSE is the method (CONFIG.md), also for the dependents it changes.
      let cause = write.external ? .external : write.operation.cause
      steps.append(ApplyStep(key: plan.key, command: command, state: plan.state, cause: cause))
      undo.append(ApplyStep(key: plan.key, command: command, state: plan.previous, cause: cause))
    }
    guard !steps.isEmpty else { return .asPlanned }
    var effective: [String: Bool] = [:]
    for step in steps { effective[step.key] = step.state.isOnAndInEffect }
    if let applied = write.applied, applied.effective == effective {
      if let reason = applied.failure { return .failed(reason, key: applied.failedKey) }
      var verdicts: [PlannedChange] = []
      for var plan in plans {
        if effective[plan.key] != nil { plan.state = plan.state.applied(failure: nil) }
        if plan.state != plan.previous { verdicts.append(plan) }
      }
      return .proceed(verdicts)
    }
    let id = applying.newID()
    var parked = copy write
    parked.applied = nil
    applying.park(id, .write(parked, effective: effective), keys: plans.map(\.key))
    for (key, value) in effective { applyStarted(key, value: value) }
    pool.submit(ApplyTask(id: id, steps: steps, undo: undo))
    return .parked
  }

  /// A command starts for `key`, to make its effective value `value`:
  /// what the system holds is that command's to say from now on.
  func applyStarted(_ key: String, value: Bool, reapplication: Bool = false) {
    if !systemAhead.isEmpty { systemAhead[key] = nil }
    driftApplyStarted(key, value: value, reapplication: reapplication)
  }

  /// After `changes` committed: of the switches whose system is ahead of
  /// the record (`systemAhead`), those now stored with another effective
  /// value run their command for it (a change that needed none by the
  /// record, as a `confirm` of the trial whose revert waits for its retry).
  /// One whose command cannot start now (another job holds it, `owner`
  /// aside) keeps its entry: the next change of it is judged again.
  /// Returns the jobs parked.
  @discardableResult
  func reapplyWhereSystemIsAhead(_ changes: [Change], heldBy owner: UInt64? = nil) -> [UInt64] {
    var behind: [String] = []
    for change in changes {
      guard let held = systemAhead[change.key] else { continue }
      if held == change.state.isOnAndInEffect {
        systemAhead[change.key] = nil
      } else {
        behind.append(change.key)
      }
    }
    // Each command started clears its key (`applyStarted`).
    if behind.isEmpty { return [] }
    return reapplyStored(
      behind, heldBy: owner,
      because: "a change overtook the ending its command ran for, which was not stored")
  }

  /// Parks a policy or dependency change (`target`, made by `cause`) or a
  /// reconcile (target nil) of `key`.
  func parkSystemApply(
    _ key: String, command: ApplyCommand, state: SwitchState, target: SwitchState?,
    cause: Cause, counted: Bool, reapplied: Bool = false
  ) -> UInt64 {
    let id = applying.newID()
    applying.park(
      id,
      .system(
        SystemApply(
          id: id, key: key, target: target, cause: cause, counted: counted, reapplied: reapplied)),
      keys: [key])
    applyStarted(key, value: state.isOnAndInEffect, reapplication: reapplied)
    // SWITCH_CAUSE is `policy` for what a configuration made, dependents
    // included, and `drift` for a re-application (CONFIG.md, SEMANTICS.md rule 19).
    let cause: Cause = target == nil ? (cause == .drift ? .drift : .reconcile) : .policy
    pool.submit(
      ApplyTask(
        id: id, steps: [ApplyStep(key: key, command: command, state: state, cause: cause)],
        undo: []))
    return id
  }

  /// The change a finished policy change or reconcile makes: the policy's
  /// State (if any) with `invalid` set by the command's verdict; nil when
  /// that is how the switch already is.
  func systemChange(
    _ system: SystemApply, failure: String?, revision: Int64, time: Int64
  ) -> Change? {
    guard let record = records[system.key] else { return nil }
    var failure = failure
    if let reason = failure, system.cause == .drift, system.target == nil, system.reapplied {
      failure = "re-applying failed after the system had changed it: \(reason)"
    }
    if let failure {
      log.warning("applying \(system.key) failed, it is marked invalid: \(failure)")
    }
    guard
      let plan = Rules.appliedChange(
        key: system.key, current: record.state, target: system.target, cause: system.cause,
        failure: failure)
    else { return nil }
    return Change(
      revision: revision, time: time, key: system.key, cause: plan.cause,
      actor: .configuration(plan.cause), state: plan.state, previous: plan.previous)
  }

  /// The output that tells the loop what changed in the book since it
  /// was last told: the reconcile count, a reload answer now due.
  func applyBookOutput() -> WriterOutput? {
    var output = WriterOutput(
      catalog: nil, changes: [], answers: [], oldestRetained: oldestRetained)
    var any = false
    if applying.reconciling.count != applying.reconcilingReported {
      applying.reconcilingReported = applying.reconciling.count
      output.reconciling = applying.reconciling.count
      any = true
    }
    if let pending = applying.reloadAnswer, pending.remaining.isEmpty {
      applying.reloadAnswer = nil
      output.answers = [(pending.ticket, pending.answer)]
      any = true
    }
    return any ? output : nil
  }
}
