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
  var key: String
  var operation: Operation
  var caller: Caller
  /// Set once its command has run: for which effective value, and the
  /// failure's reason (nil: applied).
  var applied: AppliedCommand?
}

struct AppliedCommand: Sendable {
  var id: UInt64
  var effective: Bool
  var failure: String?
}

/// A policy change or a reconcile whose command is running.
struct SystemApply: Sendable {
  var id: UInt64
  var key: String
  /// The State a policy gives the switch; nil for a reconcile of the State as it is.
  var target: SwitchState?
  /// Part of the reconcile of the start or of a reload (`status.reconciling`).
  var counted: Bool
}

/// What a group decides, in order.
enum GroupItem: Sendable {
  case write(WriteRequest)
  /// A policy change or reconcile whose command has run (failure nil: applied).
  case system(SystemApply, failure: String?)

  var connection: UInt64? {
    if case .write(let write) = self { return write.ticket.connection }
    return nil
  }
}

/// The writer's book of apply commands under way.
struct ApplyBook {
  enum Parked {
    case write(WriteRequest, effective: Bool)
    case system(SystemApply)
  }
  private var nextID: UInt64 = 0
  private(set) var parked: [UInt64: Parked] = [:]
  /// Each busy key and the parked job that holds it.
  private(set) var busy: [String: UInt64] = [:]
  /// Writes waiting for a busy key, in arrival order.
  private var waiting: [String: [WriteRequest]] = [:]
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

  /// Whether `write` may be decided now: its key is not held by another job.
  func mayDecide(_ write: WriteRequest) -> Bool {
    guard let owner = busy[write.key] else { return true }
    return owner == write.applied?.id
  }

  mutating func wait(_ write: WriteRequest) { waiting[write.key, default: []].append(write) }

  mutating func park(_ id: UInt64, _ job: Parked, keys: [String]) {
    parked[id] = job
    for key in keys { busy[key] = id }
    if case .system(let system) = job, system.counted { reconciling.insert(id) }
  }

  /// The parked job `result` finishes, as an item for the group.
  mutating func resume(_ result: ApplyResult) -> GroupItem? {
    guard let job = parked.removeValue(forKey: result.id) else { return nil }
    switch job {
    case .write(var write, let effective):
      write.applied = AppliedCommand(id: result.id, effective: effective, failure: result.failure)
      return .write(write)
    case .system(let system):
      return .system(system, failure: result.failure)
    }
  }

  /// Frees what job `id` held; returns the writes that waited for it, in
  /// order. Calling it again changes nothing.
  mutating func release(_ id: UInt64) -> [WriteRequest] {
    reconciling.remove(id)
    if var pending = reloadAnswer, pending.remaining.remove(id) != nil {
      reloadAnswer = pending
    }
    var freed: [WriteRequest] = []
    for (key, owner) in busy where owner == id {
      busy[key] = nil
      freed += waiting.removeValue(forKey: key) ?? []
    }
    return freed
  }

  /// The held-back jobs, once nothing is busy any more.
  mutating func takeHeldBack() -> [WriterJob]? {
    guard !heldBack.isEmpty, busy.isEmpty else { return nil }
    defer { heldBack.removeAll() }
    return heldBack
  }

  var isHoldingBack: Bool { !heldBack.isEmpty }
}

extension Writer {
  /// How a decided write goes on.
  enum ApplyStage {
    /// Its command is running: it is answered later.
    case parked
    /// Its command failed: `ApplyFailed`, nothing changes.
    case failed(String)
    /// Commit `next` (nil: nothing changes).
    case proceed(SwitchState?)
  }

  /// Runs the apply command a decided write needs first, or says how it
  /// goes on once it has run (rule 14). A write that leaves the effective
  /// value as it was runs nothing; `apply` always runs the command.
  func applyStage(_ write: WriteRequest, _ decided: Decision) -> ApplyStage {
    let current = decided.record.state
    let target = decided.next ?? current
    guard let command = decided.definition.apply,
      write.operation == .apply || Rules.needsApply(decided.definition, from: current, to: target)
    else { return .proceed(decided.next) }
    if let applied = write.applied, applied.effective == target.isOnAndInEffect {
      if let reason = applied.failure { return .failed(reason) }
      let verdict = target.applied(failure: nil)
      return .proceed(verdict == current ? nil : verdict)
    }
    let id = applying.newID()
    var parked = write
    parked.applied = nil
    applying.park(
      id, .write(parked, effective: target.isOnAndInEffect), keys: [write.key])
    let cause = write.operation.cause
    pool.submit(
      ApplyTask(
        id: id, steps: [ApplyStep(key: write.key, command: command, state: target, cause: cause)],
        undo: [ApplyStep(key: write.key, command: command, state: current, cause: cause)]))
    return .parked
  }

  /// Parks a policy change (`target`) or a reconcile (target nil) of `key`.
  func parkSystemApply(
    _ key: String, command: ApplyCommand, state: SwitchState, target: SwitchState?,
    counted: Bool
  ) -> UInt64 {
    let id = applying.newID()
    applying.park(
      id, .system(SystemApply(id: id, key: key, target: target, counted: counted)), keys: [key])
    let cause: Cause = target == nil ? .reconcile : .policy
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
    if let failure {
      log.warning("applying \(system.key) failed, it is marked invalid: \(failure)")
    }
    let next = (system.target ?? record.state).applied(failure: failure)
    if next == record.state { return nil }
    let byPolicy = system.target != nil && system.target != record.state
    return Change(
      revision: revision, time: time, key: system.key, cause: byPolicy ? .policy : .reconcile,
      actor: byPolicy ? .policy : .reconcile, state: next, previous: record.state)
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
