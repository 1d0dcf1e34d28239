import Glibc
import SwitchCore
import SwitchProtocol

/// `switchctl watch`: prints one line per change until interrupted, and
/// survives daemon restarts.
///
/// It remembers the last revision it printed (before any, the revision of the
/// watch's snapshot) and, when the connection drops, reconnects with backoff
/// and watches again with `since` set to it. The daemon replays what came
/// after with no gap and no duplicate, so a script reading the output
/// misses nothing and sees nothing twice. Revisions at or below the resume
/// point are skipped as well, so even a misbehaving daemon cannot make it
/// print a change twice.
struct Watcher {
  var socketPath: String
  var patterns: [String]
  var since: Int64?
  /// The `user` member of the watch request (`--user`), empty without it.
  var user: [JSONMember] = []
  var json: Bool
  var console: Console
  /// Milliseconds before the first reconnect attempt; doubled per failure.
  var firstDelay = 100
  /// The longest wait between reconnect attempts, in milliseconds.
  var maxDelay = 2000
  /// polkit's text agent, on a terminal: a watch naming a user may need
  /// polkit's answer (`Runner.call` does the same for the other calls).
  var polkitAgent: PolkitAgent?
  /// Seconds the watch's answer may take (the events after it, for ever):
  /// something at the path that accepts and never answers (the varlink
  /// socket beside switchd's) is said, not waited on without end.
  var answerTimeout = 30

  /// How one connection's watch ended.
  private enum End {
    /// Nobody reads the output any more.
    case stopped
    /// The daemon went away; reconnect. `watching`: whether the watch
    /// had been answered on that connection (else it was one more failed
    /// attempt, and the backoff goes on growing).
    case dropped(watching: Bool)
  }

  /// Watches until stdout goes away (exit 0) or the daemon refuses to
  /// resume. A daemon that is not there at the start is exit 7, as for any
  /// command; once connected, a lost daemon is waited for forever.
  func run() throws(Failure) -> ExitCode {
    var client: DaemonClient
    do {
      client = try DaemonClient.connect(to: socketPath, receiveTimeout: nil)
    } catch {
      throw .client(error)
    }
    client.outputToFollow = console.outputDescriptor
    var resume = since
    var reconnected = false
    // Kept across connections that open but end before the watch is
    // answered (a daemon at its connection limit answers Overloaded and
    // closes): restarted at each, it retried every 100 ms for ever.
    var delay = firstDelay
    while true {
      guard case .dropped(let watching) = try follow(client, &resume, reconnected: reconnected)
      else { return .success }
      if watching { delay = firstDelay }
      console.err(
        "switchctl: lost the connection to switchd at \(Output.printable(socketPath)); reconnecting"
      )
      // Its reader may leave while switchd is away: then it ends, as it does
      // while watching, instead of reconnecting for nobody.
      guard let next = reconnect(delay: &delay) else { return .success }
      client = next
      client.outputToFollow = console.outputDescriptor
      reconnected = true
    }
  }

  /// The params of the watch request.
  func params(resume: Int64?) -> [JSONMember] {
    var params: [JSONMember] = []
    if !patterns.isEmpty {
      params.append(JSONMember(WireField.keys, .array(patterns.map(JSONValue.string))))
    }
    if let resume { params.append(JSONMember(WireField.since, .int(resume))) }
    return params + user
  }

  /// Opens the watch on `client` and prints its events until the connection ends.
  private func follow(
    _ client: DaemonClient, _ resume: inout Int64?, reconnected: Bool
  ) throws(Failure) -> End {
    let outcome: Result<JSONValue, RemoteError>
    var params = params(resume: resume)
    do {
      // Naming a user may ask polkit, which may ask the person (`Runner.call`).
      if let polkitAgent, !user.isEmpty {
        params.append(JSONMember(WireField.allowInteractiveAuthentication, .bool(true)))
        outcome = try polkitAgent.callStartingIfAsked { () throws(ClientError) in
          try client.call(.watch, params, timeout: Runner.interactiveTimeout)
        }
      } else {
        outcome = try client.call(.watch, params, timeout: answerTimeout)
      }
    } catch {
      // A daemon slow to start again is waited for; at the start, it is said.
      if reconnected, case .timedOut = error { return .dropped(watching: false) }
      return try dropped(error, watching: false)
    }
    switch outcome {
    case .success(let result):
      // Without --since the snapshot is not printed, but its revision is
      // where the live stream starts, so it is the first resume point.
      let watch = try decode(result, as: WatchResult.self)
      if resume == nil { resume = watch.revision }
      if !reconnected, let switches = watch.switches { sayWhatMatchesNothing(switches) }
    case .failure(let error):
      // A daemon that has just restarted may still be at its connection limit.
      if reconnected && error.code == .overloaded { return .dropped(watching: false) }
      // Resuming beyond the daemon's revision (`data.revision`): its database
      // was restored from a backup, or replaced, after this watch printed
      // later changes. Revisions after the current one will be new changes,
      // so say so and watch again from it. (A `--since` beyond it, on the
      // first call, is the command line's mistake: exit 2 below.)
      if reconnected, error.code == .invalidParams, let last = resume,
        let current = error.data[WireField.revision]?.int64Value
      {
        console.err(
          "switchctl: switchd is at revision \(current), behind revision \(last) where this "
            + "watch was (was its database restored?); watching again from \(current)")
        resume = nil
        return try follow(client, &resume, reconnected: reconnected)
      }
      // Resuming where switchd no longer has the changes after the last one
      // printed (`data.oldest`): they were pruned while switchctl was away,
      // or its database was restored from a backup (a restore numbers on
      // above what it had announced). Say so and watch again from now. (On
      // the first call, a `--since` too old: exit 1 below.)
      if reconnected, error.code == .historyCompacted, let last = resume {
        let oldest = error.data[WireField.oldest]?.int64Value.map { " (its oldest is \($0))" } ?? ""
        console.err(
          "switchctl: switchd no longer has the changes after revision \(last) where this watch "
            + "was\(oldest): some were missed; watching again from its current revision")
        resume = nil
        return try follow(client, &resume, reconnected: reconnected)
      }
      // HistoryCompacted (exit 1) and the rest: the daemon's sentence says why.
      throw .remote(error)
    }
    if reconnected {
      let after = resume.map { ", resuming after revision \($0)" } ?? ""
      console.err("switchctl: reconnected to \(Output.printable(socketPath))\(after)")
    }
    while true {
      let params: JSONValue
      do {
        params = try nextChange(client)
      } catch .outputGone {
        return .stopped
      } catch {
        return try dropped(error, watching: true)
      }
      let change = try decode(params, as: ChangedEvent.self).change
      if let last = resume, change.revision <= last { continue }
      console.out(json ? Output.json(params) : Output.event(change))
      resume = change.revision
      if !console.wantsMore { return .stopped }
    }
  }

  /// A pattern no switch matches is watched all the same (a reload may
  /// declare one), but said on stderr: a mistyped key waited in silence for
  /// ever, where `get` says there is no such switch. Known from the watch's
  /// snapshot, which a watch with `--since` has not.
  private func sayWhatMatchesNothing(_ switches: [SwitchObject]) {
    let unmatched = Self.unmatched(patterns, among: switches.map(\.key))
    guard !unmatched.isEmpty else { return }
    console.err(
      "switchctl: no switch matches \(unmatched.joined(separator: ", ")); "
        + "watching for one a reload declares")
  }

  /// Those of `patterns` that match none of `keys`.
  static func unmatched(_ patterns: [String], among keys: [String]) -> [String] {
    patterns.filter { text in
      guard case .success(let pattern) = KeyPattern.parse(text) else { return false }
      return !keys.contains { pattern.matches($0) }
    }
  }

  /// The params of the next `changed` notification; other notifications
  /// (`schemaChanged`, or one a newer daemon sends) are not printed.
  private func nextChange(_ client: DaemonClient) throws(ClientError) -> JSONValue {
    while true {
      let (method, params) = try client.nextNotification()
      if method == WireField.changedNotification { return params }
    }
  }

  /// A closed or reset connection is a daemon going away; anything else
  /// (a reply that is not JSON-RPC) will not get better by reconnecting.
  private func dropped(_ error: ClientError, watching: Bool) throws(Failure) -> End {
    switch error {
    case .closed, .system: return .dropped(watching: watching)
    default: throw .client(error)
    }
  }

  /// Connects again, waiting `delay` ms, then twice that, … up to 2 s
  /// between attempts, for as long as it takes: a watcher is meant to
  /// outlive restarts. `delay` is left at the next wait. Nil when the
  /// reader of standard output left meanwhile (`DaemonClient.readerLeft`).
  private func reconnect(delay: inout Int) -> DaemonClient? {
    while true {
      if let output = console.outputDescriptor {
        if DaemonClient.readerLeft(output, waitingMilliseconds: Int32(delay)) { return nil }
      } else {
        usleep(UInt32(delay) * 1000)
      }
      let client = try? DaemonClient.connect(to: socketPath, receiveTimeout: nil)
      delay = min(delay * 2, maxDelay)
      if let client { return client }
    }
  }
}
