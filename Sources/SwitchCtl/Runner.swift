import SwitchCore
import SwitchProtocol
import SwitchSystem

/// Carries out one invocation: builds the request, talks to the daemon, and
/// prints the result as text or `--json`. Every failure leaves through
/// `Failure`, which picks the sentence and the exit status.
struct Runner {
  var invocation: Invocation
  var socketPath: String
  var console: Console
  /// Seconds a call may wait for its answer before switchctl gives up, so a
  /// wedged daemon cannot hang a script forever. `watch` waits without end.
  var receiveTimeout = 30
  /// Seconds for the calls that may take longer: a backup's copy of a big
  /// database on a slow disk; a reload, answered once the apply commands it
  /// started have run, each up to ApplyTimeoutSec=.
  static let longCallTimeout = 600
  /// Set on a terminal (unless `--no-ask-password`): calls that need a right
  /// carry `allowInteractiveAuthentication`, with polkit's text agent running.
  var polkitAgent: PolkitAgent?

  /// Runs the command; errors are printed here: the sentence on stderr and,
  /// with `--json`, the error object on stdout, where a script reads results.
  func run() -> ExitCode {
    defer { polkitAgent?.stop() }
    do throws(Failure) {
      return try execute()
    } catch {
      let error = Self.unanswered(invocation.command, error)
      if invocation.json { console.out(Output.json(error.jsonObject)) }
      console.err(error.lines)
      return error.exitCode
    }
  }

  /// `failure`, or for a write whose connection ended or whose answer did
  /// not come, that the change may have been made or not (switchd commits
  /// before it answers): said, so that a script reads the switch again
  /// instead of taking "failed" for "not changed" (an audit).
  static func unanswered(_ command: Command, _ failure: Failure) -> Failure {
    guard command.writes, case .client(let error) = failure else { return failure }
    switch error {
    case .closed, .timedOut:
      return .local(
        error.sentence + "; whether the change was made is not known: read the switch again")
    default:
      return failure
    }
  }

  private func execute() throws(Failure) -> ExitCode {
    switch invocation.command {
    case .help(let name):
      console.out(name.flatMap(Commands.named).map(Commands.help) ?? Commands.overview())
    case .version:
      console.out("switchctl " + SwitchdVersion.current)
    case .list(let prefix):
      let params = prefix.map { [JSONMember(WireField.prefix, .string($0))] } ?? []
      try show(try call(.list, params + userParam()), as: ListResult.self) {
        Output.list($0, prefix: prefix)
      }
    case .get(let key):
      try show(try call(.get, try keyParam(key)), as: SwitchObject.self) { [Output.get($0)] }
    case .isOn(let key):
      let found = try decode(try call(.get, try keyParam(key)), as: SwitchObject.self).state
      let state = SwitchState(checked: found.checked, disabled: found.disabled)
      if invocation.json { console.out(Output.json(Output.isOn(key: key, state))) }
      return state.isOnAndInEffect ? .success : .isOff
    case .set(let key, let checked, let ifRevision):
      var params = try keyParam(key) + [JSONMember(WireField.checked, .bool(checked))]
      if let ifRevision { params.append(JSONMember(WireField.ifRevision, .int(ifRevision))) }
      try timedWrite(.set, key: key, params)
    case .toggle(let key, let ifRevision):
      var params = try keyParam(key)
      if let ifRevision { params.append(JSONMember(WireField.ifRevision, .int(ifRevision))) }
      try timedWrite(.toggle, key: key, params)
    case .reset(let key):
      try write(.reset, try keyParam(key))
    case .lock(let key, let reason, let checked):
      var params = try bareKeyParam(key)
      if let reason { params.append(JSONMember(WireField.reason, .string(reason))) }
      if let checked { params.append(JSONMember(WireField.checked, .bool(checked))) }
      try write(.lock, params + lastingParams)
    case .unlock(let key):
      try write(.unlock, try bareKeyParam(key))
    case .disable(let key, let reason):
      var params = try bareKeyParam(key)
      if let reason { params.append(JSONMember(WireField.reason, .string(reason))) }
      try write(.disable, params + lastingParams)
    case .enable(let key):
      try write(.enable, try bareKeyParam(key))
    case .apply(let key):
      try write(.apply, try bareKeyParam(key))
    case .confirm(let key):
      try write(.confirm, try keyParam(key))
    case .revert(let key):
      try write(.revert, try keyParam(key))
    case .history(let key, let limit, let before):
      var params = try userParam()
      if let key { params = try keyParam(key) }
      if let limit { params.append(JSONMember(WireField.limit, .int(limit))) }
      if let before { params.append(JSONMember(WireField.before, .int(before))) }
      try show(try call(.history, params), as: HistoryResult.self, Output.history)
    case .why(let key):
      let explanation = try explain(key)
      if invocation.json {
        console.out(Output.json(explanation.json))
      } else {
        console.out(Output.why(explanation))
      }
    case .status:
      let sent = try call(.status, [])
      try show(sent, as: StatusReport.self) { Output.status($0, sent: sent) }
    case .reload:
      let client = try connect(receiveTimeout: Self.longCallTimeout)
      try show(try call(client, .reload, []), as: ReloadSummary.self, Output.reload)
    case .backup(let path):
      var sent = JSONValue.null
      let backup = try BackupCommand.run(to: path) { () throws(Failure) in
        let client = try connect(receiveTimeout: Self.longCallTimeout)
        sent = try call(client, .backup, [])
        return (sent, client.takePassedDescriptor())
      }
      console.out(invocation.json ? Output.json(sent) : BackupCommand.summary(backup, path: path))
    case .watch(let patterns, let since):
      var watcher = Watcher(
        socketPath: socketPath, patterns: patterns, since: since, user: try userParam(),
        json: invocation.json, console: console)
      watcher.polkitAgent = polkitAgent
      watcher.answerTimeout = receiveTimeout
      return try watcher.run()
    }
    return .success
  }

  // MARK: Pieces

  /// `{"key": key}`, after checking the key's syntax here: a key that cannot
  /// exist is an unknown switch (exit 5), which the daemon would only call
  /// invalid params. It fails as the daemon's `UnknownSwitch` would.
  func keyParam(_ key: String) throws(Failure) -> [JSONMember] {
    try bareKeyParam(key) + userParam()
  }

  /// `{"user": uid}` (or `"*"`) for `--user`, empty without it. A name is
  /// looked up in the user database; an unknown one is a usage error.
  private func userParam() throws(Failure) -> [JSONMember] {
    guard let user = invocation.user else { return [] }
    return [JSONMember(WireField.user, try Self.resolve(user: user, command: commandName))]
  }

  static func resolve(user: String, command: String?) throws(Failure) -> JSONValue {
    if user == WireField.everyUser { return .string(user) }
    if let uid = UInt32(user), user.first != "+" { return .int(Int64(uid)) }
    guard let uid = UserDatabase.uid(named: user) else {
      throw .usage(UsageError(message: "no user is named '\(user)'.", command: command))
    }
    return .int(Int64(uid))
  }

  private var commandName: String? {
    switch invocation.command {
    case .list: return "list"
    case .get: return "get"
    case .isOn: return "is-on"
    case .set: return "set"
    case .toggle: return "toggle"
    case .reset: return "reset"
    case .watch: return "watch"
    case .history: return "history"
    case .why: return "why"
    case .confirm: return "confirm"
    case .revert: return "revert"
    default: return nil
    }
  }

  func bareKeyParam(_ key: String) throws(Failure) -> [JSONMember] {
    if let problem = SwitchKey.problem(key) {
      throw .remote(
        RemoteError(
          code: .unknownSwitch,
          message: key.isEmpty
            ? "No switch has an empty key: name one (`switchctl list` lists them)."
            : "No switch has the key \(Output.shortened(key)): \(problem).",
          data: .object([
            JSONMember("name", .string(RPCErrorCode.unknownSwitch.name)),
            JSONMember(WireField.key, .string(key)),
          ])))
    }
    return [JSONMember(WireField.key, .string(key))]
  }

  func connect(receiveTimeout: Int? = nil) throws(Failure) -> DaemonClient {
    do {
      return try DaemonClient.connect(
        to: socketPath, receiveTimeout: receiveTimeout ?? self.receiveTimeout)
    } catch {
      throw .client(error)
    }
  }

  /// One call on a new connection.
  func call(_ method: Method, _ params: [JSONMember]) throws(Failure) -> JSONValue {
    // A person typing a password may take minutes (polkit waits five).
    let asks = polkitAgent != nil && Self.mayNeedRight(method, params)
    return try call(connect(receiveTimeout: asks ? Self.interactiveTimeout : nil), method, params)
  }

  /// Whether a call may need a right polkit is asked for: a write, a
  /// backup, or a read naming a user (`--user`; one's own asks nothing).
  static func mayNeedRight(_ method: Method, _ params: [JSONMember]) -> Bool {
    method.isWrite || method == .backup || params.contains { $0.name == WireField.user }
  }

  /// Seconds an answer may take when polkit may ask the person.
  static let interactiveTimeout = 330

  func call(
    _ client: DaemonClient, _ method: Method, _ params: [JSONMember]
  ) throws(Failure) -> JSONValue {
    var params = params
    let mayAsk = polkitAgent != nil && Self.mayNeedRight(method, params)
    if mayAsk { params.append(JSONMember(WireField.allowInteractiveAuthentication, .bool(true))) }
    let outcome: Result<JSONValue, RemoteError>
    do {
      // The agent is started only when polkit wants to ask and found no
      // agent: under Authorization=builtin (and for root's calls) none is,
      // and pkttyagent printed "Authorization not available" on every write.
      if mayAsk, let polkitAgent {
        outcome = try polkitAgent.callStartingIfAsked { () throws(ClientError) in
          try client.call(method, params)
        }
      } else {
        outcome = try client.call(method, params)
      }
    } catch {
      throw .client(error)
    }
    switch outcome {
    case .success(let result): return result
    case .failure(let error): throw .remote(error)
    }
  }

  /// Prints the result, decoded as `Result` either way: `--json` writes it
  /// back exactly as received (our writer is compact and keeps member order
  /// and number text), else text.
  private func show<Result: WireDecodable>(
    _ result: JSONValue, as type: Result.Type, _ text: (Result) -> [String]
  ) throws(Failure) {
    let decoded = try decode(result, as: type)
    console.out(invocation.json ? [Output.json(result)] : text(decoded))
  }

  func write(_ method: Method, _ params: [JSONMember]) throws(Failure) {
    try show(try call(method, params), as: WriteResult.self) { [Output.write($0)] }
  }

  /// `why`: the switch, then its history pages until every "since" is found
  /// (bounded, so a long history cannot keep it busy).
  private func explain(_ key: String) throws(Failure) -> Explanation {
    let params = try keyParam(key)
    // Naming another user may ask polkit, which may ask the person.
    let asks = polkitAgent != nil && Self.mayNeedRight(.get, params)
    let client = try connect(receiveTimeout: asks ? Self.interactiveTimeout : nil)
    var explanation = Explanation(switchObject: try Sent(try call(client, .get, params)))
    let pageSize: Int64 = 100
    var before: Int64?
    for _ in 0..<20 {
      var pageParams = params + [JSONMember(WireField.limit, .int(pageSize))]
      if let before { pageParams.append(JSONMember(WireField.before, .int(before))) }
      let entries = try Sent.entries(ofHistory: try call(client, .history, pageParams))
      explanation.scan(entries)
      guard explanation.needsOlderHistory, entries.count == pageSize,
        let oldest = entries.last?.value.revision
      else { break }
      before = oldest
    }
    // Its re-applications and watch program; a daemon older than read-back
    // has no `readBack`, and then there is nothing to add.
    if let status = try? StatusReport(wire: try call(client, .status, [])) {
      explanation.readBack = status.readBack.first { $0.key == key }
    }
    return explanation
  }
}
