import SwitchCore
import SwitchPolkit
import SwitchProtocol
import SwitchSystem

/// A call waiting for polkit's answer: it runs, with the right granted, or
/// is refused, when the answer comes (`drainPolkitAnswers`).
struct WaitingForPolkit {
  var connection: UInt64
  var pending: PendingRequest
  var question: PolkitQuestion
  /// Which of `question.actions` is being asked.
  var step: Int
  /// The caller as it asked (acting as the request's `user`, if any).
  var caller: Caller
  /// The first action polkit would grant after authentication, if any: the
  /// refusal says so even when a later action was denied outright.
  var challenged: PolkitQuestion.Action?
}

// Authorization=polkit: which calls ask, the asking, and the answers. The
// loop never waits: a call that needs polkit is parked (counted as a read
// in flight, so the connection's later calls wait behind it and keep their
// order) and resumes when the Authorizer thread answers.
extension Server {
  /// The question for a method only administrators may call, asked before
  /// its params are checked (the order of checks); nil when polkit is not
  /// the authority or the caller needs none.
  func administeringQuestion(_ pending: PendingRequest, caller: Caller) -> PolkitQuestion? {
    guard caller.asksPolkit else { return nil }
    var key: String?
    var checked: Bool?
    if case .success(.write(let named, let operation, _, _)) = pending.call {
      key = named
      checked = records[named]?.state.checked
      if case .lock(_, let held?) = operation { checked = held }
    }
    return PolkitQuestion.administering(
      method: pending.method?.rawValue ?? "", key: key, checked: checked, caller: caller,
      purpose: pending.method?.purposeOnNoSwitch)
  }

  /// The question for set, toggle or reset of `key` by `caller` (acting as
  /// the request's user); nil for an unknown key (the writer refuses it
  /// UnknownSwitch, which comes first) or when none is needed.
  func changeQuestion(_ key: String, _ operation: Operation, caller: Caller) -> PolkitQuestion? {
    guard caller.asksPolkit, let definition = catalog.switches[key], let record = records[key]
    else { return nil }
    // Naming another user is administering, whatever is pending (asked
    // before the rules refuse it: PolkitQuestion.changing).
    if operation.settlesTrial && !caller.namesAnotherUser {
      // Rule 20: the maker settles its own tried change without asking
      // anyone (any connection of its uid); only someone else needs to
      // administer. Nothing pending is a no-op for anyone.
      let pending =
        record.state.pending
        ?? (definition.scope == .user ? userValues[key]?[caller.subject]?.pending : nil)
      guard let pending, Rules.settlingRefusal(operation, key: key, pending, caller: caller) != nil
      else { return nil }
    }
    var current = record.state.checked
    if definition.scope == .user {
      current =
        Visibility.value(
          record, own: userValues[key]?[caller.subject], defaultChecked: definition.defaultChecked
        ).checked
    }
    return PolkitQuestion.changing(
      operation, key: key, scope: definition.scope, state: record.state, current: current,
      defaultChecked: definition.defaultChecked, caller: caller)
  }

  /// Parks `pending` and asks polkit the question's action at `step`.
  func askPolkit(
    _ question: PolkitQuestion, step: Int = 0, _ pending: PendingRequest,
    on connection: Connection, caller: Caller, challenged: PolkitQuestion.Action? = nil
  ) {
    let peer = connection.peer
    // Read when it connected, never later: a later read could be of a
    // process that reused the pid.
    guard let startTime = connection.processStartTime else {
      return refuseByPolkit(
        pending, on: connection, question: question,
        why:
          "switchd did not learn when process \(peer.pid) started when it connected (it"
          + " connected before Authorization=polkit was loaded, or had already exited), so"
          + " polkit cannot be asked about it: connect again",
        authenticationRequired: false)
    }
    let id = nextPolkitCheck
    nextPolkitCheck += 1
    waitingForPolkit[id] = WaitingForPolkit(
      connection: connection.id, pending: pending, question: question, step: step, caller: caller,
      challenged: challenged)
    connection.barriersInFlight += 1
    if authorizer == nil { authorizer = Authorizer(loopWakeFD: wakeFD) }
    authorizer?.ask(
      Authorizer.Question(
        id: id,
        check: PolkitCheck(
          pid: UInt32(bitPattern: peer.pid), startTime: startTime, uid: peer.uid,
          action: question.actions[step].rawValue, details: question.details,
          allowInteraction: pending.allowsInteraction)))
  }

  /// Carries out the calls whose answers came: granted, they run with the
  /// right for that call only; otherwise the next action of the question is
  /// asked, or the call is refused. Nothing is cached.
  func drainPolkitAnswers() {
    guard let authorizer else { return }
    for answer in authorizer.answered() {
      guard let waiting = waitingForPolkit.removeValue(forKey: answer.id),
        let connection = connections[waiting.connection]
      else { continue }
      connection.barriersInFlight -= 1
      let action = waiting.question.actions[waiting.step]
      let hasNext = waiting.step + 1 < waiting.question.actions.count
      switch answer.answer {
      case .authorized:
        // The right for this call, and for the value polkit was asked about.
        let granted = waiting.caller.granted(action, checked: waiting.question.checked)
        execute(waiting.pending, on: connection, as: granted)
      case .denied where hasNext, .challenge where hasNext:
        let challenged = waiting.challenged ?? (answer.answer == .challenge ? action : nil)
        askPolkit(
          waiting.question, step: waiting.step + 1, waiting.pending, on: connection,
          caller: waiting.caller, challenged: challenged)
      case .challenge, .denied:
        if let challenged = waiting.challenged ?? (answer.answer == .challenge ? action : nil) {
          // A caller that let polkit ask and still got "authentication
          // needed" had no agent that asked (or its person cancelled):
          // telling it to allow asking would send it round in a circle.
          let advice =
            waiting.pending.allowsInteraction
            ? ", and no authentication agent of the caller's gave it (none is registered"
              + " for its process or session, or the person cancelled)"
            : "; ask again allowing interactive authentication (switchctl does on a terminal)"
          refuseByPolkit(
            waiting.pending, on: connection, question: waiting.question,
            why: "polkit allows \(challenged.rawValue) only after authentication" + advice,
            authenticationRequired: true)
        } else {
          refuseByPolkit(
            waiting.pending, on: connection, question: waiting.question,
            why: "polkit did not authorize \(action.rawValue)", authenticationRequired: false)
        }
      case .unreachable(let why):
        log.rateLimited(.warning, cause: "polkit", "polkit could not be asked: \(why)")
        refuseByPolkit(
          waiting.pending, on: connection, question: waiting.question,
          why:
            "polkit is not reachable (\(why)), and nothing that needs a right is allowed without it",
          authenticationRequired: false)
      }
      pump(connection)
    }
  }

  private func refuseByPolkit(
    _ pending: PendingRequest, on connection: Connection, question: PolkitQuestion,
    why: String, authenticationRequired: Bool
  ) {
    fail(
      pending, on: connection,
      .permissionDeniedByPolkit(
        method: pending.method ?? .set, key: question.key, why: why,
        authenticationRequired: authenticationRequired))
  }

  /// A connection closed: its parked call has nobody to answer (polkit's
  /// answer, when it comes, is dropped).
  func forgetPolkitChecks(of connection: UInt64) {
    guard !waitingForPolkit.isEmpty else { return }
    for (id, waiting) in waitingForPolkit where waiting.connection == connection {
      waitingForPolkit[id] = nil
    }
  }

  /// Stopping: the calls still waiting for polkit are refused, not left
  /// unanswered when the connections close.
  func refuseParkedPolkitCalls() {
    for (_, waiting) in waitingForPolkit.sorted(by: { $0.key < $1.key }) {
      guard let connection = connections[waiting.connection] else { continue }
      connection.barriersInFlight -= 1
      fail(
        waiting.pending, on: connection,
        .overloaded("switchd is stopping; try again once it is back"))
      pump(connection)
    }
    waitingForPolkit.removeAll()
  }
}
