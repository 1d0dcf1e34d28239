import SwitchCore
import SwitchProtocol

/// Where an answer goes: a connection, a response slot in it, and the
/// position inside a batch.
struct Ticket: Sendable {
  var connection: UInt64
  /// 0 for a notification: carried out, never answered.
  var slot: UInt64
  var part: Int
  var id: RequestID
  /// How a varlink reply is wrapped; nil on the JSON-RPC socket.
  var varlink: VarlinkReply? = nil
  /// The uid whose share of writes in flight (`WritesPerUser`) this write
  /// takes, given back when it is answered, even after its connection
  /// closed; nil for an administrator's write and for a reload.
  var countedAgainst: UInt32? = nil
  /// Whose values of user-scope switches the answer shows (the `user`
  /// param, else the caller's uid).
  var viewer: UInt32? = nil

  /// The wire format its answer is framed in.
  var wire: WireFormat { varlink == nil ? .jsonRPC : .varlink }
}

/// What the event loop asks of the writer thread.
enum WriterJob: Sendable {
  /// `lasting`: the write's `for` or `until` (a timed value or hold).
  case write(Ticket, key: String, Operation, Caller, lasting: Lasting? = nil)
  /// The wall-clock timer fired, or the clock was set: carry out what is due.
  case deadlinesDue
  /// A connection that made a tried change closed (its revert, rule 20).
  case connectionClosed(UInt64)
  /// Make a configuration the config reader read the running one, or
  /// refuse it (SIGHUP has no ticket).
  case reload(Ticket?, ConfigurationRead)
  /// Finish what is queued, then end the thread.
  case stop
  /// An apply command (`ApplyPool`) has finished.
  case applied(ApplyResult)
  /// What a switch's `ExecWatch=` or `ExecCheck=` read of the system (nil:
  /// nothing it could read), at `ReadBackClock` time.
  case observed(key: String, Bool?, Drift.Source, at: Int64)
  /// A switch's `ExecWatch=` program ended; it is started again later.
  case watchEnded(key: String, reason: String)
  /// A re-application's backoff is over (`Drift.Verdict.reapply`).
  /// `generation`: the decision it carries out (`Drift.Memory.reapplyGeneration`).
  case reapplyDue(key: String, generation: Int)
  /// The settling time after an apply is over (`Drift.needsSettling`).
  case settled(key: String)

  /// The connection that sent a write; nil for any other job. Read in
  /// place: matching a job out of an array by value copied all of it.
  var writerConnection: UInt64? {
    guard case .write(let ticket, _, _, _, _) = self else { return nil }
    return ticket.connection
  }

  /// What an apply command or a read-back program reports: never held back.
  var isApplied: Bool {
    switch self {
    case .applied, .observed, .watchEnded, .reapplyDue, .settled, .deadlinesDue,
      .connectionClosed:
      return true
    default: return false
    }
  }

  /// The connection a write or reload came from (nil: SIGHUP, stop, a command's result).
  var connection: UInt64? {
    switch self {
    case .write(let ticket, _, _, _, _): return ticket.connection
    case .reload(let ticket, _): return ticket?.connection
    case .stop, .applied, .observed, .watchEnded, .reapplyDue, .settled, .deadlinesDue,
      .connectionClosed:
      return nil
    }
  }

  /// A reload or stop: the writer does not hold a group open past one.
  var isControl: Bool {
    switch self {
    case .write, .applied, .observed, .watchEnded, .reapplyDue, .settled, .deadlinesDue,
      .connectionClosed:
      return false
    case .reload, .stop: return true
    }
  }
}

/// A configuration directory as the config reader thread read it: valid,
/// with who administers and writes under it, or refused with every error.
enum ConfigurationRead: Sendable {
  case valid(Catalog, AccessRules)
  case refused(errors: [String])
  /// The running configuration again, at a start or end of a scheduled
  /// policy's window (Writer+Schedule.swift): not a reload anyone asked for.
  case scheduled

  var isScheduled: Bool {
    if case .scheduled = self { return true }
    return false
  }
}

/// The result of a write: whether it changed the switch, and the switch after it.
struct WriteOutcome: Sendable {
  var changed: Bool
  var record: SwitchRecord
  /// The schema entry the write was decided with, for the answer's Switch object.
  var definition: SwitchDefinition
  var policySource: SourceLocation?
  /// Whose value of a user-scope switch `record` shows; nil for a system switch.
  var user: UInt32? = nil

  /// A write that changed nothing: the switch as it was.
  init(unchanged decision: borrowing Decision) {
    self.init(decision, changed: false, record: decision.record)
  }

  /// A write that changed the switch: `after`, the switch as it left it.
  /// (Not an optional `after` defaulting to the decision's record: copying
  /// an optional record went through a generic value witness, callgrind.)
  init(_ decision: borrowing Decision, after: consuming SwitchRecord) {
    self.init(decision, changed: true, record: after)
  }

  private init(_ decision: borrowing Decision, changed: Bool, record: consuming SwitchRecord) {
    self.init(
      definition: decision.definition, policy: decision.policy, changed: changed, record: record)
  }

  /// The parts of a decision, for a write decided without one (the
  /// writer's common path). The record is moved in, last (a copy of it
  /// was made and the original released on every write, callgrind).
  init(
    definition: borrowing SwitchDefinition, policy: borrowing PolicyRule?, changed: Bool,
    record: consuming SwitchRecord
  ) {
    self.changed = changed
    self.definition = copy definition
    policySource = Rules.policySource(state: record.state, rule: policy)
    self.record = record
  }
}

/// A new configuration the loop swaps in, with what it needs from it.
struct CatalogUpdate: Sendable {
  var catalog: Catalog
  var access: AccessRules
  /// Records the loop takes as they are: rows created for switches the new
  /// schema declares for the first time, and user-scope switches whose
  /// value nothing fixes, at the schema's default now (`withCurrentDefault`).
  var newRecords: [SwitchRecord]
}

/// What the writer thread hands back after each transaction: committed
/// changes in revision order, and the answers for the tickets it served.
struct WriterOutput: Sendable {
  enum Answer: Sendable {
    case write(Result<WriteOutcome, RPCError>)
    /// A write the rules refused: the loop words it, and a Conflict
    /// carries the switch as the caller sees it now.
    case refused(Refusal)
    case reload(Result<ReloadSummary, RPCError>)
  }
  var catalog: CatalogUpdate?
  var changes: [Change]
  var answers: [(Ticket, Answer)]
  /// The oldest revision still in the log after any pruning.
  var oldestRetained: Int64?
  /// Set on the output of a reload, applied or not (for READY=1 and `status`).
  var reload: ReloadRecord?
  /// Set on the output of `.stop`: the thread has ended.
  var stopped = false
  /// Set when it changed: how many switches the reconcile of the start or
  /// of a reload is still applying (`status.reconciling`).
  var reconciling: Int?
  /// What the read-back programs last read, by key, since the last output
  /// (nil: unknown again): each switch's `observed`.
  var observations: [String: Bool?] = [:]
  /// Every read-back switch's report, when one changed (`status.readBack`).
  var readBack: [String: ReadBackReport]?

  /// An output's `changes` and `answers` arrays, emptied by the loop and
  /// handed back for the writer's next group (`Writer.GroupBuffers`).
  struct Spare: Sendable {
    var changes: [Change]
    var answers: [(Ticket, Answer)]

    /// The most spares the queue holds: each group takes one, and outputs
    /// that take none (a reload's) or a burst of groups would otherwise
    /// leave more behind for good.
    static let queued = 2
  }
}
