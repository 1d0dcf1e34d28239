import Glibc
import SwitchCore
import SwitchProtocol
import SwitchSystem
import SwitchTestSupport
import Testing

@testable import SwitchCtl

/// switchctl against a real switchd, started from the built products with
/// the repository's Config. Serialized: each test starts its own daemon, and
/// the machine has two cores.
@Suite(.serialized) struct DaemonTests {
  @Test func toggleThroughMainThenGetAndIsOn() throws {
    let daemon = try DaemonFixture.shipped()
    // The real entry point, as the executable calls it (its output goes to stdout).
    #expect(SwitchCtl.main(["--socket", daemon.socketPath, "toggle", "wifi"]) == 0)
    let get = runCtl(["--socket", daemon.socketPath, "get", "wifi"])
    #expect(get.code == .success)
    #expect(get.out == ["off"])  // the shipped default is on
    #expect(runCtl(["--socket", daemon.socketPath, "is-on", "wifi"]).code.rawValue == 1)
    let on = runCtl(["on", "wifi", "--socket", daemon.socketPath])
    #expect(on.out == ["wifi: on"])
    #expect(runCtl(["--socket", daemon.socketPath, "on", "wifi"]).out == ["wifi: on (unchanged)"])
    let isOn = runCtl(["--socket", daemon.socketPath, "is-on", "wifi"])
    #expect(isOn.code == .success)
    #expect(isOn.out.isEmpty && isOn.err.isEmpty)
    #expect(runCtl(["--socket", daemon.socketPath, "set", "wifi", "no"]).out == ["wifi: off"])
    #expect(runCtl(["--socket", daemon.socketPath, "reset", "wifi"]).out == ["wifi: on"])
  }

  @Test func jsonOutputIsTheRPCResult() throws {
    let daemon = try DaemonFixture.shipped()
    _ = runCtl(["--socket", daemon.socketPath, "toggle", "bluetooth"])
    let cases: [([String], SwitchProtocol.Method, [JSONMember])] = [
      (["get", "bluetooth"], .get, [JSONMember("key", .string("bluetooth"))]),
      (["list"], .list, []),
      (["list", "notifications."], .list, [JSONMember("prefix", .string("notifications."))]),
      (
        ["set", "bluetooth", "on"], .set,
        [JSONMember("key", .string("bluetooth")), JSONMember("checked", .bool(true))]
      ),
      (["history", "--limit", "5"], .history, [JSONMember("limit", .int(5))]),
      (["reset", "wifi"], .reset, [JSONMember("key", .string("wifi"))]),
    ]
    for (arguments, method, params) in cases {
      let run = runCtl(["--socket", daemon.socketPath] + arguments + ["--json"])
      #expect(run.code == .success)
      #expect(run.out == [try daemon.call(method, params).jsonText], "\(arguments)")
    }
    let status = runCtl(["--socket", daemon.socketPath, "--json", "status"])
    let parsed = json(status.out[0])
    #expect(parsed["socket"] == .string(daemon.socketPath))
    #expect(parsed["revision"] == .int(1))
  }

  @Test(
    .needsRoot("disable is an administrator verb, and the repository's Config makes only root one"))
  func refusalsExitWithTheirCodesAndTheDaemonsSentence() throws {
    let daemon = try DaemonFixture.shipped()
    let s = ["--socket", daemon.socketPath]
    let unknown = runCtl(s + ["get", "no-such-switch"])
    #expect(unknown.code.rawValue == 5)
    #expect(unknown.err == ["switchctl: No switch has the key no-such-switch."])
    #expect(runCtl(s + ["is-on", "no-such-switch"]).code.rawValue == 5)

    let disable = runCtl(s + ["disable", "email.marketing", "--reason", "Not offered here."])
    #expect(disable.out == ["email.marketing: on (disabled by admin: Not offered here.)"])
    let refused = runCtl(s + ["off", "email.marketing"])
    #expect(refused.code.rawValue == 4)
    #expect(refused.err == ["switchctl: email.marketing is disabled: Not offered here."])
    #expect(runCtl(s + ["is-on", "email.marketing"]).code.rawValue == 1)
    #expect(
      runCtl(s + ["get", "email.marketing"]).out == ["on (disabled by admin: Not offered here.)"])
    #expect(runCtl(s + ["enable", "email.marketing"]).out == ["email.marketing: on"])

    let revision = json(runCtl(s + ["--json", "toggle", "wifi"]).out[0])["switch"]?["revision"]
    let stale = runCtl(s + ["toggle", "wifi", "--if-revision", "0"])
    #expect(stale.code.rawValue == 8)
    #expect(stale.err.count == 1)
    let current = String(revision?.int64Value ?? -1)
    #expect(runCtl(s + ["set", "wifi", "on", "--if-revision", current]).out == ["wifi: on"])

    #expect(runCtl(s + ["watch", "--since", "1000"]).code.rawValue == 2)
  }

  @Test(
    .needsRoot("lock is an administrator verb, and the repository's Config makes only root one"))
  func lockHistoryAndWhy() throws {
    let daemon = try DaemonFixture.shipped()
    let s = ["--socket", daemon.socketPath]
    let lock = runCtl(
      s + ["lock", "bluetooth", "--reason", "Not on this floor.", "--checked", "on"])
    #expect(lock.out == ["bluetooth: on (read-only by admin: Not on this floor.)"])
    #expect(
      runCtl(s + ["list", "blue"]).out == [
        "bluetooth  on  Bluetooth  (read-only by admin: Not on this floor.)"
      ])
    let history = runCtl(s + ["history", "bluetooth"])
    try #require(history.out.count == 1)
    #expect(history.out[0].hasPrefix("1  "))
    #expect(
      history.out[0].hasSuffix(
        "  bluetooth  lock  checked: off→on, readOnly: no→yes, "
          + "readOnlyReason: none→\"Not on this floor.\", heldBy: none→admin  by uid \(getuid()) (pid "
          + "\(getpid()))"))

    let why = runCtl(s + ["why", "bluetooth"])
    #expect(why.code == .success)
    try #require(why.out.count == 3)
    #expect(why.out[0] == "bluetooth (Bluetooth): on; default off.")
    #expect(why.out[1].hasPrefix("Read-only, held by an administrator (uid \(getuid())) since 20"))
    #expect(why.out[1].hasSuffix(": Not on this floor."))
    #expect(why.out[2].hasPrefix("Last change: revision 1 at "))

    let whyJSON = json(runCtl(s + ["why", "bluetooth", "--json"]).out[0])
    let entry = try daemon.call(.history, [JSONMember("key", .string("bluetooth"))])["entries"]?
      .arrayValue?.first
    #expect(whyJSON["switch"] == (try daemon.call(.get, [JSONMember("key", .string("bluetooth"))])))
    #expect(whyJSON["lastChange"] == entry)
    #expect(whyJSON["heldSince"] == entry)
    #expect(whyJSON["disabledSince"] == .null)
    #expect(runCtl(s + ["unlock", "bluetooth"]).out == ["bluetooth: on"])
  }

  /// A tried change off a terminal: with --json stdout is the result
  /// alone (it has `pendingUntil`); without it, when it reverts and how
  /// to keep it. A span as systemd writes it (`1.5h`) reaches the daemon
  /// in seconds.
  @Test func aTriedChangeOffATerminalPrintsJSONAloneWithJSON() throws {
    let daemon = try DaemonFixture.shipped()
    let s = ["--socket", daemon.socketPath]
    let tried = runCtl(s + ["--json", "set", "wifi", "off", "--confirm", "30s"])
    #expect(tried.code == .success)
    #expect(tried.out.count == 1, "\(tried.out)")
    #expect(json(tried.out.first ?? "{}")["switch"]?["pendingUntil"]?.isNull == false)
    let text = runCtl(s + ["set", "bluetooth", "on", "--confirm", "30s"])
    #expect(text.out.count == 2 && text.out.last?.hasSuffix("switchctl confirm bluetooth") == true)
    var now = timespec()
    clock_gettime(CLOCK_REALTIME, &now)
    let before = Int64(now.tv_sec) * 1000 + Int64(now.tv_nsec) / 1_000_000
    let timed = runCtl(s + ["--json", "set", "notifications.chat", "off", "--for", "1.5h"])
    let expiresAt = json(timed.out.first ?? "{}")["switch"]?["expiresAt"]?.stringValue
    let deadline = try #require(expiresAt.flatMap { Timestamp.milliseconds($0) })
    #expect(deadline >= before + 5_400_000 && deadline <= before + 5_460_000)
  }

  @Test func watchSinceReplaysThenStops() throws {
    let daemon = try DaemonFixture.shipped()
    let s = ["--socket", daemon.socketPath]
    _ = runCtl(s + ["toggle", "wifi"])
    _ = runCtl(s + ["toggle", "bluetooth"])
    _ = runCtl(s + ["toggle", "wifi"])
    let text = runCtl(s + ["watch", "wifi", "--since", "0"], stopAfter: 2)
    #expect(text.code == .success)
    #expect(
      text.out == [
        "1 wifi off (toggle by uid \(getuid()))", "3 wifi on (toggle by uid \(getuid()))",
      ])
    let all = runCtl(s + ["watch", "--json", "--since", "1"], stopAfter: 2)
    let history = try daemon.call(.history, [JSONMember("limit", .int(2))])["entries"]?.arrayValue
    let expected = history?.reversed().map { entry in
      JSONValue.object(
        [JSONMember("watch", .string("w1"))] + (entry.objectMembers ?? [])
      ).jsonText
    }
    // The event is the entry with the watch id first; the id is the daemon's.
    #expect(all.out.map { json($0)["watch"] != nil } == [true, true])
    #expect(all.out.map { removingWatchID($0) } == expected.map { $0.map(removingWatchID) })
  }

  /// A daemon at MaxConnections answers a new connection `Overloaded` and
  /// closes it; switchctl says the daemon's sentence (exit 1) whether its
  /// request went out before the close or failed on it (EPIPE), and a
  /// `watch` that could not start exits too.
  @Test func aDaemonAtItsConnectionLimitIsOverloadedEveryTime() throws {
    let daemon = try DaemonFixture(daemonConf: "[Daemon]\nAdminGroup=\nMaxConnections=1\n")
    // The fixture's own probe of the socket may still be open for a moment.
    var held: RPCClient?
    #expect(
      try pollUntil {
        let client = try daemon.client()
        guard (try? client.result("status")) != nil else { return false }
        held = client
        return true
      })
    try #require(held != nil)
    let s = ["--socket", daemon.socketPath]
    for _ in 0..<20 {
      let get = runCtl(s + ["get", "wifi"])
      #expect(get.code == .failure)
      #expect(get.err.first?.contains("too many connections (MaxConnections=1)") == true, "\(get)")
    }
    // The request sent only after the daemon closed (EPIPE): its line is read all the same.
    let late = try DaemonClient.connect(to: daemon.socketPath, receiveTimeout: 10)
    var closed = pollfd(fd: late.fd, events: Int16(POLLIN), revents: 0)
    #expect(pollUntil { poll(&closed, 1, 100) == 1 && closed.revents & Int16(POLLHUP) != 0 })
    guard case .failure(let refusal) = try late.call(.get, [JSONMember("key", .string("wifi"))])
    else {
      Issue.record("a daemon at its limit answered")
      return
    }
    #expect(refusal.code == .overloaded)
    let watch = runCtl(s + ["watch"])
    #expect(watch.code == .failure)
    #expect(watch.err.first?.contains("too many connections") == true, "\(watch)")
    withExtendedLifetime(held) {}  // open until here
  }

  /// An empty page says so in text; --json is the daemon's result as it came.
  @Test func anEmptyHistoryPrintsNoChanges() throws {
    let daemon = try DaemonFixture.shipped()
    let s = ["--socket", daemon.socketPath]
    let text = runCtl(s + ["history"])
    #expect(text.code == .success)
    #expect(text.out == ["no changes"])
    #expect(runCtl(s + ["history", "wifi"]).out == ["no changes"])
    _ = runCtl(s + ["toggle", "wifi"])
    #expect(runCtl(s + ["history", "--before", "1"]).out == ["no changes"])
    #expect(runCtl(s + ["history", "bluetooth", "--json"]).out == [#"{"entries":[]}"#])
  }

  /// Another user's change, seen by a user who does not administer: the
  /// daemon hides who (null ids), and switchctl says "another user".
  @Test(
    .needsRoot("switchctl runs as another uid through setpriv"),
    .enabled(if: access("/usr/bin/setpriv", X_OK) == 0, "needs /usr/bin/setpriv"))
  func aChangeByAHiddenActorIsByAnotherUser() throws {
    let daemon = try DaemonFixture.shipped()
    _ = runCtl(["--socket", daemon.socketPath, "toggle", "wifi"])
    let history = daemon.ctl(["history", "wifi"], asUser: 65534)
    #expect(history.status == 0)
    try #require(history.outLines.count == 1, "\(history)")
    #expect(history.outLines[0].hasSuffix("  wifi  toggle  checked: on→off  by another user"))
  }

  /// A user who is not an administrator, through the real binary run as a
  /// human account (the first uid of login.defs' range): a held switch is
  /// ReadOnly (3), an administrator verb is PermissionDenied (6), each with
  /// the daemon's sentence; as nobody, a system account, even a free system
  /// switch is PermissionDenied.
  @Test(
    .needsRoot("switchctl runs as other uids through setpriv"),
    .enabled(if: access("/usr/bin/setpriv", X_OK) == 0, "needs /usr/bin/setpriv"))
  func aUserMeetsReadOnlyAndPermissionDenied() throws {
    let daemon = try DaemonFixture.shipped()
    _ = runCtl(["--socket", daemon.socketPath, "lock", "bluetooth", "--reason", "Not here."])
    var loginDefs: [UInt8]?
    if let file = fopen(LoginDefs.path, "r") {
      defer { fclose(file) }
      loginDefs = []
      while case let byte = fgetc(file), byte != EOF { loginDefs?.append(UInt8(byte)) }
    }
    let human = LoginDefs.humanUIDs(loginDefs).lowerBound
    func asUser(_ arguments: [String]) -> ProcessResult { daemon.ctl(arguments, asUser: human) }
    let nobody = daemon.ctl(["toggle", "wifi"], asUser: 65534)
    #expect(nobody.status == 6)
    #expect(nobody.errLines.first?.contains("only human accounts") == true, "\(nobody.errLines)")
    let held = asUser(["on", "bluetooth"])
    #expect(held.status == 3)
    #expect(held.outLines.isEmpty)
    #expect(held.errLines.count == 1)
    #expect(held.errLines.first?.hasPrefix("switchctl: bluetooth is read-only") == true)
    #expect(held.errLines.first?.contains("Not here.") == true)
    let denied = asUser(["unlock", "bluetooth"])
    #expect(denied.status == 6)
    #expect(denied.errLines.count == 1)
    #expect(denied.errLines.first?.hasPrefix("switchctl: ") == true)
    let get = asUser(["get", "bluetooth"])
    #expect(get.status == 0)
    #expect(get.outLines == ["off (read-only by admin: Not here.)"])
    #expect(asUser(["toggle", "wifi"]).outLines == ["wifi: off"])
  }

  /// The real binary: watch, restart the daemon under it, and see it resume
  /// with nothing missed or repeated; SIGTERM ends it with status 0.
  @Test func watchReconnectsAfterARestartAndResumes() throws {
    let daemon = try DaemonFixture.shipped()
    let s = ["--socket", daemon.socketPath]
    let out = daemon.directory + "/watch.out"
    let err = daemon.directory + "/watch.err"
    let ctl = try Child(
      [Products.path("switchctl")] + s + ["watch", "wifi"], logPath: out, errorLogPath: err)

    // Wait until the watch is registered, so the first change is after its snapshot.
    let registered = pollUntil(seconds: 20) {
      json(runCtl(s + ["--json", "status"]).out.first ?? "{}")["watches"] == .int(1)
    }
    try #require(registered, "the watch never registered")
    _ = runCtl(s + ["toggle", "wifi"])
    #expect(line(1, of: out) == "1 wifi off (toggle by uid \(getuid()))")

    #expect(daemon.stop() == 0)
    #expect(
      line(1, of: err)
        == "switchctl: lost the connection to switchd at \(daemon.socketPath); reconnecting")
    try daemon.start()
    // Likely made before switchctl is back: it must come from the replay.
    _ = runCtl(s + ["toggle", "wifi"])
    _ = runCtl(s + ["toggle", "bluetooth"])
    _ = runCtl(s + ["toggle", "wifi"])
    #expect(line(2, of: out) == "2 wifi on (toggle by uid \(getuid()))")
    #expect(line(3, of: out) == "4 wifi off (toggle by uid \(getuid()))")
    #expect(
      line(2, of: err)
        == "switchctl: reconnected to \(daemon.socketPath), resuming after revision 1")

    #expect(ctl.stop() == 0)
    #expect(completeLines(of: out).count == 3)
  }
}

/// The lines of `path` that a writer has finished (ended by a newline).
private func completeLines(of path: String) -> [String] {
  var lines = ((try? readWholeFile(path)) ?? "").split(
    separator: "\n", omittingEmptySubsequences: false)
  lines.removeLast()  // what follows the last newline: nothing, or a line in the making
  return lines.map(String.init)
}

/// Line `number` (from 1) of `path`, once a writer has finished it; nil
/// when it has not within 20 s.
private func line(_ number: Int, of path: String) -> String? {
  var lines: [String] = []
  _ = pollUntil(seconds: 20) {
    lines = completeLines(of: path)
    return lines.count >= number
  }
  return lines.count >= number ? lines[number - 1] : nil
}

/// An event's JSON without its `watch` member, which is the daemon's id for the watch.
private func removingWatchID(_ text: String) -> String {
  JSONValue.object((json(text).objectMembers ?? []).filter { $0.name != "watch" }).jsonText
}

/// A daemon at its connection limit accepts, answers `Overloaded` and
/// closes: `watch` must back off while that goes on (100 ms, doubling up
/// to 2 s), not retry at its first delay for ever. A stand-in socket
/// answers the first watch and closes (a restart), closes the next five
/// connections before answering, and refuses the last watch so that the
/// watcher ends. Each wait has a floor (`usleep`), so the gaps can only be
/// longer than asked on a loaded machine, never shorter.
@Suite struct WatchBackoffTests {
  @Test func theBackoffGrowsWhileConnectionsCloseBeforeTheWatchIsAnswered() throws {
    let directory = try makeTemporaryDirectory()
    defer { removeTree(directory) }
    let path = directory + "/fake.sock"
    let listener = try listeningSocket(at: path)
    let closingRounds = 5
    let server = TestThread { () -> [Double] in
      var accepted: [Double] = []
      func answer(_ fd: Int32, _ line: String) {
        var buffer = [UInt8](repeating: 0, count: 4096)
        _ = recv(fd, &buffer, buffer.count, 0)  // the watch request
        let bytes = Array((line + "\n").utf8)
        _ = send(fd, bytes, bytes.count, Int32(MSG_NOSIGNAL))
      }
      for round in 0..<(closingRounds + 2) {
        let fd = accept(listener, nil, nil)
        accepted.append(monotonicSeconds())
        if round == 0 {
          answer(
            fd, #"{"jsonrpc":"2.0","id":1,"result":{"watch":"w1","revision":0,"switches":[]}}"#)
        } else if round == closingRounds + 1 {
          answer(
            fd,
            #"{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"Enough.","data":{"name":"InvalidParams"}}}"#
          )
        }
        close(fd)
      }
      close(listener)
      return accepted
    }
    let watcher = Watcher(
      socketPath: path, patterns: [], since: nil, json: false, console: CapturedConsole(),
      firstDelay: 10, maxDelay: 1000)
    #expect(throws: Failure.self) { try watcher.run() }
    let accepted = server.join()
    try #require(accepted.count == closingRounds + 2)
    // After the restart: 10 ms, then 20, 40, … as each connection closes unanswered.
    for round in 1...(closingRounds + 1) {
      let gap = accepted[round] - accepted[round - 1]
      let floor = 0.010 * Double(1 << (round - 1))
      #expect(gap >= floor * 0.99, "wait \(round): \(gap) s, at least \(floor) s")
    }
  }
}
