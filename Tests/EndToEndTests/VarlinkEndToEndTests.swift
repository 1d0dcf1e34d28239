import Glibc
import SwitchProtocol
import SwitchTestSupport
import Testing

/// The varlink socket (PROTOCOL.md "varlink") against the real daemon, with
/// the tests' own NUL-framed client: every method, every error it can be
/// made to give here, `oneway`, `more`, and the service interface.
@Suite struct VarlinkEndToEndTests {
  static let prefix = "io.switchd.Switches."

  @Test func readsAreTheJSONRPCResultsWithGetsSwitchNamed() throws {
    let daemon = try DaemonFixture()
    let varlink = try daemon.varlink()
    let rpc = try daemon.client()
    #expect(
      try varlink.result("Get", #"{"key":"wifi"}"#)["switch"]
        == rpc.result("get", #"{"key":"wifi"}"#))
    #expect(
      try varlink.result("List", #"{"prefix":"notifications."}"#)
        == rpc.result("list", #"{"prefix":"notifications."}"#))
    let status = try varlink.result("Status")
    #expect(status["revision"]?.int64Value == 0)
    #expect(status["caller"]?["uid"]?.int64Value == Int64(getuid()))
    // A null member is one left out, as varlink says.
    #expect(
      try varlink.result("Get", #"{"key":"wifi","user":null}"#)["switch"]?["key"] == .string("wifi")
    )
  }

  @Test func everyWriteMethodAnswersChangedAndTheSwitch() throws {
    let daemon = try DaemonFixture()
    let varlink = try daemon.varlink()
    let calls: [(String, String, Bool)] = [
      ("Set", #"{"key":"wifi","checked":false}"#, false), ("Reset", #"{"key":"wifi"}"#, false),
      ("Toggle", #"{"key":"wifi"}"#, false), ("Lock", #"{"key":"bluetooth","reason":"r"}"#, true),
      ("Unlock", #"{"key":"bluetooth"}"#, false), ("Disable", #"{"key":"bluetooth"}"#, true),
      ("Enable", #"{"key":"bluetooth"}"#, false),
    ]
    for (method, parameters, readOnlyOrDisabled) in calls {
      let result = try varlink.result(method, parameters)
      #expect(result["changed"]?.boolValue == true, "\(method)")
      let held =
        result["switch"]?["readOnly"]?.boolValue == true
        || result["switch"]?["disabled"]?.boolValue == true
      #expect(held == readOnlyOrDisabled, "\(method)")
    }
    #expect(
      try varlink.result("Set", #"{"key":"wifi","checked":false}"#)["changed"]?.boolValue == false)
    let history = try varlink.result("History", #"{"key":"wifi","limit":2}"#)
    #expect(
      history["entries"]?.arrayValue?.map { $0["cause"] } == [.string("toggle"), .string("reset")])
    let reload = try varlink.result("Reload")
    #expect(reload["switches"]?.int64Value == 5)
  }

  @Test func namedErrorsCarryTheDataMembersAsParameters() throws {
    let daemon = try DaemonFixture()
    let varlink = try daemon.varlink()
    #expect(
      try varlink.error("Get", #"{"key":"nope"}"#) == (
        Self.prefix + "UnknownSwitch", .object([JSONMember("key", .string("nope"))])
      ))
    let (conflict, now) = try varlink.error(
      "Toggle", #"{"key":"notifications.chat","ifRevision":7}"#)
    #expect(conflict == Self.prefix + "Conflict")
    #expect(
      now["revision"]?.int64Value == 0 && now["switch"]?["key"]?.stringValue == "notifications.chat"
    )
    let (noCommand, parameter) = try varlink.error("Apply", #"{"key":"email.marketing"}"#)
    #expect(
      noCommand == "org.varlink.service.InvalidParameter"
        && parameter["parameter"] == .string("key"))
    #expect(
      try varlink.error("Set", #"{"key":"wifi","checked":1}"#) == (
        "org.varlink.service.InvalidParameter",
        .object([JSONMember("parameter", .string("checked"))])
      ))
    #expect(try varlink.error("Watch", #"{"user":"*"}"#).0 == "org.varlink.service.ExpectedMore")
    #expect(try varlink.error("Nope").1["method"]?.stringValue == Self.prefix + "Nope")
    #expect(try varlink.error("Unwatch").0 == "org.varlink.service.MethodNotFound")
    let other = try varlink.call("org.example.Other.Call")
    #expect(other["error"]?.stringValue == "org.varlink.service.InterfaceNotFound")
    // Not JSON: an error, and the connection goes on.
    try varlink.send(raw: Array("{nope".utf8) + [0])
    #expect(try varlink.readReply()["error"]?.stringValue == Self.prefix + "InvalidRequest")
    try daemon.writeFile("switches.d/20-bad.conf", "[wifi\n")
    let (invalid, errors) = try varlink.error("Reload")
    #expect(
      invalid == Self.prefix + "InvalidConfig" && errors["errors"]?.arrayValue?.isEmpty == false)
  }

  /// As a human account, not an administrator: the peer's credentials are
  /// read on the varlink socket as on the JSON-RPC one.
  @Test func permissionDeniedReadOnlyAndDisabledForAUser() throws {
    guard getuid() == 0 else {
      print("skipped: connecting as another uid needs root")
      return
    }
    let daemon = try DaemonFixture()
    let admin = try daemon.varlink()
    _ = try admin.result("Lock", #"{"key":"wifi","reason":"Held."}"#)
    _ = try admin.result("Disable", #"{"key":"bluetooth","reason":"Off."}"#)
    let user = VarlinkClient(try daemon.client(asUser: humanUID, socket: daemon.varlinkPath))
    let (name, parameters) = try user.error("Lock", #"{"key":"wifi"}"#)
    #expect(name == Self.prefix + "PermissionDenied")
    #expect(parameters["method"]?.stringValue == "lock")
    #expect(try user.result("Status")["caller"]?["uid"]?.int64Value == Int64(humanUID))
    let (readOnly, held) = try user.error("Toggle", #"{"key":"wifi"}"#)
    #expect(readOnly == Self.prefix + "ReadOnly")
    #expect(held["reason"]?.stringValue == "Held." && held["heldBy"]?.stringValue == "admin")
    let (disabled, why) = try user.error("Toggle", #"{"key":"bluetooth"}"#)
    #expect(disabled == Self.prefix + "Disabled" && why["disabledBy"]?.stringValue == "admin")
  }

  @Test func historyCompactedAndOverloaded() throws {
    let daemon = try DaemonFixture(
      daemonConf: "[Daemon]\nAdminGroup=\nHistoryRetention=5\nMaxConnections=2\n")
    let varlink = try daemon.varlink()
    for _ in 0..<30 { _ = try varlink.result("Toggle", #"{"key":"wifi"}"#) }
    var compacted: (String, JSONValue) = ("", .null)
    // Pruning runs after commits: another write lets it finish. An error
    // reply leaves the connection usable, so one connection asks each time.
    #expect(
      try pollUntil {
        _ = try varlink.result("Toggle", #"{"key":"bluetooth"}"#)
        try varlink.send(Self.prefix + "Watch", #"{"since":1}"#, more: true)
        let reply = try varlink.readReply()
        compacted = (reply["error"]?.stringValue ?? "", reply["parameters"] ?? .null)
        return compacted.0 == Self.prefix + "HistoryCompacted"
      })
    #expect((compacted.1["oldest"]?.int64Value ?? 0) > 2)
    // MaxConnections counts both sockets: a third connection is refused in varlink.
    let second = try daemon.varlink()
    _ = try second.result("Status")
    let third = try daemon.varlink()
    #expect(try third.readReply()["error"]?.stringValue == Self.prefix + "Overloaded")
  }

  @Test func onewayIsCarriedOutAndNeverAnswered() throws {
    let daemon = try DaemonFixture()
    let varlink = try daemon.varlink()
    try varlink.send(Self.prefix + "Toggle", #"{"key":"wifi"}"#, oneway: true)
    try varlink.send(Self.prefix + "Get", #"{"key":"wifi"}"#)
    let reply = try varlink.readReply()
    #expect(reply["parameters"]?["switch"]?["checked"]?.boolValue == false)
    #expect(reply["parameters"]?["switch"]?["revision"]?.int64Value == 1)
  }

  /// `varlinkctl call --oneway` sends the call and closes at once: the
  /// daemon took the hang-up for the end and dropped the unread call (seen
  /// with varlinkctl: 1 toggle of 20). Each connection here sends and closes
  /// before the daemon reads; the last has a oneway call behind a write in
  /// flight and a call wanting an answer (not started once the peer is
  /// gone, or answered to no one: either way it changes nothing).
  @Test func onewayCallsSentJustBeforeAHangUpAreCarriedOut() throws {
    let daemon = try DaemonFixture()
    for _ in 0..<10 {
      let varlink = try daemon.varlink()
      try varlink.send(Self.prefix + "Toggle", #"{"key":"wifi"}"#, oneway: true)
      varlink.close()
    }
    let chained = try daemon.varlink()
    try chained.send(Self.prefix + "Toggle", #"{"key":"bluetooth"}"#, oneway: true)
    try chained.send(Self.prefix + "Get", #"{"key":"bluetooth"}"#)
    try chained.send(Self.prefix + "Toggle", #"{"key":"notifications.chat"}"#, oneway: true)
    chained.close()
    let observer = try daemon.varlink()
    // Every toggle commits, and the hung-up connections go: only this one is left.
    #expect(
      try pollUntil(seconds: 30) {
        let status = try observer.result("Status")
        return status["revision"]?.int64Value == 12 && status["connections"]?.int64Value == 1
      }, "\((try? observer.result("Status"))?.jsonText ?? "")")
    #expect(try observer.result("Get", #"{"key":"wifi"}"#)["switch"]?["checked"]?.boolValue == true)
    #expect(
      try observer.result("Get", #"{"key":"notifications.chat"}"#)["switch"]?["revision"]?
        .int64Value == 12)
  }

  /// A reload that changes the schema of watched switches is one reply to
  /// a varlink watch, as it is a `schemaChanged` notification on JSON-RPC:
  /// a watcher's snapshot must not go stale without a word.
  @Test func aReloadThatChangesTheSchemaIsOneReplyToAWatch() throws {
    let daemon = try DaemonFixture()
    let watcher = try daemon.varlink()
    let snapshot = try watcher.call(Self.prefix + "Watch", #"{"keys":["extra*"]}"#, more: true)
    #expect(snapshot["parameters"]?["switches"]?.arrayValue?.count == 0)
    try daemon.writeFile(
      "switches.d/10-test.conf",
      DaemonFixture.standardSwitches + "\n[extra]\nLabel=Extra\nDefault=off\n")
    _ = try daemon.client().result("reload")
    let reply = try watcher.readReply()
    #expect(reply["continues"]?.boolValue == true)
    #expect(
      reply["parameters"]?["schemaChanged"]
        == .object([
          JSONMember("added", .array([.string("extra")])), JSONMember("removed", .array([])),
          JSONMember("updated", .array([])),
        ]), "\(reply.jsonText)")
    // The watch goes on: the new switch's changes follow.
    _ = try daemon.varlink().result("Toggle", #"{"key":"extra"}"#)
    let event = try watcher.readReply()
    #expect(event["parameters"]?["event"]?["key"]?.stringValue == "extra")
  }

  @Test func watchSendsTheSnapshotThenOneContinuingReplyPerEvent() throws {
    let daemon = try DaemonFixture()
    let watcher = try daemon.varlink()
    let snapshot = try watcher.call(Self.prefix + "Watch", #"{"keys":["wifi"]}"#, more: true)
    #expect(snapshot["continues"]?.boolValue == true)
    #expect(snapshot["parameters"]?["revision"]?.int64Value == 0)
    #expect(snapshot["parameters"]?["switches"]?.arrayValue?.count == 1)
    #expect(snapshot["parameters"]?["watch"] == nil)
    let writer = try daemon.varlink()
    _ = try writer.result("Toggle", #"{"key":"bluetooth"}"#)
    _ = try writer.result("Toggle", #"{"key":"wifi"}"#)
    let event = try watcher.readReply()
    #expect(event["continues"]?.boolValue == true)
    #expect(event["parameters"]?["event"]?["revision"]?.int64Value == 2)
    #expect(event["parameters"]?["event"]?["key"]?.stringValue == "wifi")
    #expect(event["parameters"]?["event"]?["watch"] == nil)
    // `since` replays what followed it, after a first reply with the revision only.
    let resumed = try daemon.varlink()
    let first = try resumed.call(Self.prefix + "Watch", #"{"since":0}"#, more: true)
    #expect(first["parameters"] == .object([JSONMember("revision", .int(2))]))
    let replayed = try [resumed.readReply(), resumed.readReply()]
    #expect(replayed.map { $0["parameters"]?["event"]?["revision"]?.int64Value } == [1, 2])
  }

  /// Replies come strictly in call order, and a Watch's never end: a call
  /// sent after it on the same connection (here in the same write) is never
  /// answered, so the next reply after the snapshot is the next event (a
  /// varlink client takes a reply without `continues` for the Watch's end).
  /// A oneway Watch sets nothing up: no reply, and no event either.
  @Test func nothingAfterAWatchIsAnsweredAndAOnewayWatchIsNone() throws {
    let daemon = try DaemonFixture()
    let watcher = try daemon.varlink()
    let watch = #"{"method":"\#(Self.prefix)Watch","parameters":{"keys":["wifi"]},"more":true}"#
    let get = #"{"method":"\#(Self.prefix)Get","parameters":{"key":"wifi"}}"#
    try watcher.send(raw: Array(watch.utf8) + [0] + Array(get.utf8) + [0])
    #expect(try watcher.readReply()["parameters"]?["switches"] != nil)
    try watcher.send(Self.prefix + "Status")
    let oneway = try daemon.varlink()
    try oneway.send(Self.prefix + "Watch", #"{"keys":["wifi"]}"#, more: true, oneway: true)
    // Answered after the oneway Watch on its connection: it was taken, and is no watch.
    #expect(try oneway.result("Status")["watches"]?.int64Value == 1)
    let writer = try daemon.varlink()
    _ = try writer.result("Toggle", #"{"key":"wifi"}"#)
    let event = try watcher.readReply()
    #expect(event["continues"]?.boolValue == true)
    #expect(event["parameters"]?["event"]?["revision"]?.int64Value == 1)
    _ = try writer.result("Toggle", #"{"key":"wifi"}"#)
    #expect(try watcher.readReply()["parameters"]?["event"]?["revision"]?.int64Value == 2)
    // The watcher goes with its connection, the calls it sent after unanswered.
    watcher.close()
    #expect(try pollUntil { try writer.result("Status")["watches"]?.int64Value == 0 })
  }

  @Test func aChangeOnOneSocketReachesWatchersOnTheOtherWithItsRevision() throws {
    let daemon = try DaemonFixture()
    let varlinkWatcher = try daemon.varlink()
    _ = try varlinkWatcher.call(Self.prefix + "Watch", more: true)
    let rpcWatcher = try daemon.client()
    _ = try rpcWatcher.result("watch")
    _ = try daemon.client().result("toggle", #"{"key":"wifi"}"#)
    let written = try daemon.varlink().result("Toggle", #"{"key":"bluetooth"}"#)
    let fromRPC = try varlinkWatcher.readReply()["parameters"]?["event"]
    let fromVarlink = try [rpcWatcher.nextEvent(), rpcWatcher.nextEvent()]
    #expect(fromRPC?["revision"]?.int64Value == 1 && fromRPC?["key"]?.stringValue == "wifi")
    #expect(fromVarlink.map { $0["revision"]?.int64Value } == [1, 2])
    #expect(written["switch"]?["revision"]?.int64Value == 2)
    let second = try varlinkWatcher.readReply()["parameters"]?["event"]
    #expect(second?["revision"]?.int64Value == 2)
    // The same event in both formats, but for the JSON-RPC `watch` id.
    let rpcEntry = fromVarlink[1].objectMembers?.filter { $0.name != "watch" }
    #expect(second?.objectMembers == rpcEntry)
  }

  @Test func theServiceInterfaceServesTheShippedDefinition() throws {
    let daemon = try DaemonFixture()
    let varlink = try daemon.varlink()
    let info = try varlink.call("org.varlink.service.GetInfo")["parameters"]
    #expect(
      info?["interfaces"]
        == .array([.string("org.varlink.service"), .string("io.switchd.Switches")]))
    let served = try varlink.call(
      "org.varlink.service.GetInterfaceDescription", #"{"interface":"io.switchd.Switches"}"#)
    #expect(
      served["parameters"]?["description"]?.stringValue == (try readWholeFile(Self.definitionPath)))
    let service = try varlink.call(
      "org.varlink.service.GetInterfaceDescription", #"{"interface":"org.varlink.service"}"#)
    #expect(
      service["parameters"]?["description"]?.stringValue?.contains("method GetInfo()") == true)
    let missing = try varlink.call(
      "org.varlink.service.GetInterfaceDescription", #"{"interface":"org.example.None"}"#)
    #expect(missing["error"]?.stringValue == "org.varlink.service.InterfaceNotFound")
  }

  /// The one interface definition in the repository.
  static var definitionPath: String {
    var path = #filePath
    for _ in 0..<3 { path = String(path[..<path.lastIndex(of: "/")!]) }
    return path + "/Sources/SwitchProtocol/io.switchd.Switches.varlink"
  }
}
