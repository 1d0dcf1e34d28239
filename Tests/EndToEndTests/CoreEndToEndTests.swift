import Glibc
import SwitchProtocol
import SwitchTestSupport
import Testing

/// The core of docs/protocol.md against the real binaries: methods, events,
/// errors, framing, restart.
@Suite struct CoreEndToEndTests {
  @Test func getReturnsTheSwitchObjectInWireOrder() throws {
    let daemon = try DaemonFixture()
    let wifi = try daemon.client().result("get", #"{"key":"wifi"}"#)
    let names = wifi.objectMembers?.map(\.name)
    #expect(
      names == [
        "key", "label", "description", "checked", "defaultChecked", "readOnly", "readOnlyReason",
        "heldBy", "disabled", "disabledReason", "disabledBy", "invalid", "invalidReason",
        "pendingUntil", "expiresAt", "readOnlyUntil", "disabledUntil", "checkedIcon",
        "uncheckedIcon", "group", "order", "policySource", "effective", "scope",
        "user", "revision", "changedAt", "observed", "writable", "writableReason",
      ])
    #expect(wifi["label"]?.stringValue == "Wi-Fi")
    // The fixture's switches read nothing back from the system.
    #expect(wifi["observed"]?.isNull == true)
    #expect(wifi["checked"]?.boolValue == true)
    #expect(wifi["revision"]?.int64Value == 0)
    #expect(wifi["changedAt"]?.isNull == true)
    #expect(wifi["uncheckedIcon"]?.stringValue == "wifi_off")
    let bluetooth = try daemon.client().result("get", #"{"key":"bluetooth"}"#)
    #expect(bluetooth["checkedIcon"]?.stringValue == "")
  }

  @Test func listIsSortedAndFiltersByPrefix() throws {
    let daemon = try DaemonFixture()
    let client = try daemon.client()
    let all = try client.result("list")
    let keys = all["switches"]?.arrayValue?.compactMap { $0["key"]?.stringValue }
    #expect(
      keys == ["bluetooth", "email.marketing", "notifications.chat", "notifications.mail", "wifi"])
    #expect(all["revision"]?.int64Value == 0)
    let some = try client.result("list", #"{"prefix":"notifications."}"#)
    #expect(some["switches"]?.arrayValue?.count == 2)
  }

  @Test func everyRealChangeIsOneEventInRevisionOrder() throws {
    let daemon = try DaemonFixture()
    let watcher = try daemon.client()
    let watch = try watcher.result("watch", #"{"keys":["wifi"]}"#)
    #expect(watch["revision"]?.int64Value == 0)
    #expect(watch["switches"]?.arrayValue?.count == 1)
    let writer = try daemon.client()
    for _ in 0..<3 { _ = try writer.result("toggle", #"{"key":"wifi"}"#) }
    _ = try writer.result("toggle", #"{"key":"bluetooth"}"#)  // not watched
    for expected in Int64(1)...3 {
      let event = try watcher.nextEvent()
      #expect(event["revision"]?.int64Value == expected)
      #expect(event["key"]?.stringValue == "wifi")
      #expect(event["cause"]?.stringValue == "toggle")
      #expect(event["fields"]?.arrayValue == [.string("checked")])
      #expect(event["watch"] == watch["watch"])
      #expect(event["state"]?["checked"]?.boolValue == (expected % 2 == 0))
      #expect(event["previous"]?["checked"]?.boolValue == (expected % 2 == 1))
      #expect(event["actor"]?["uid"]?.int64Value == Int64(getuid()))
    }
    // Nothing else is queued for the watcher: the next thing it reads is a response.
    let status = try watcher.call("status")
    #expect(status["result"]?["revision"]?.int64Value == 4)
    #expect(watcher.notifications.isEmpty)
  }

  @Test func aWriteThatChangesNothingBumpsNoRevisionAndEmitsNothing() throws {
    let daemon = try DaemonFixture()
    let watcher = try daemon.client()
    _ = try watcher.result("watch")
    let client = try daemon.client()
    let same = try client.result("set", #"{"key":"wifi","checked":true}"#)
    #expect(same["changed"]?.boolValue == false)
    #expect(same["switch"]?["revision"]?.int64Value == 0)
    let reset = try client.result("reset", #"{"key":"wifi"}"#)
    #expect(reset["changed"]?.boolValue == false)
    let changed = try client.result("set", #"{"key":"wifi","checked":false}"#)
    #expect(changed["changed"]?.boolValue == true)
    #expect(changed["switch"]?["revision"]?.int64Value == 1)
    let event = try watcher.nextEvent()
    #expect(event["revision"]?.int64Value == 1)
    #expect(try watcher.call("status")["result"]?["revision"]?.int64Value == 1)
    #expect(watcher.notifications.isEmpty)
  }

  @Test(arguments: [#"1"#, #""true""#, #"null"#, #"0"#, #"1.0"#, #"[true]"#])
  func checkedMustBeAJSONBoolean(_ value: String) throws {
    let daemon = try DaemonFixture()
    let error = try daemon.client().error("set", #"{"key":"wifi","checked":\#(value)}"#)
    #expect(error["code"]?.int64Value == -32602)
    #expect(error["data"]?["name"]?.stringValue == "InvalidParams")
    #expect(try daemon.client().result("get", #"{"key":"wifi"}"#)["revision"]?.int64Value == 0)
  }

  @Test func errorsCarryTheirCodeAndName() throws {
    let daemon = try DaemonFixture()
    let client = try daemon.client()
    let cases: [(String, String, Int64, String)] = [
      ("get", #"{"key":"nope"}"#, -32001, "UnknownSwitch"),
      ("get", #"{}"#, -32602, "InvalidParams"),
      ("get", #"{"key":"wifi","extra":1}"#, -32602, "InvalidParams"),
      ("get", #"{"key":"Not A Key"}"#, -32602, "InvalidParams"),
      ("frobnicate", #"{}"#, -32601, "MethodNotFound"),
      ("set", #"{"key":"wifi","checked":false,"ifRevision":7}"#, -32005, "Conflict"),
      ("watch", #"{"keys":[]}"#, -32602, "InvalidParams"),
      ("watch", #"{"since":99}"#, -32602, "InvalidParams"),
      ("history", #"{"limit":1001}"#, -32602, "InvalidParams"),
      ("unwatch", #"{"watch":"w99"}"#, -32602, "InvalidParams"),
    ]
    for (method, params, code, name) in cases {
      let error = try client.error(method, params)
      #expect(error["code"]?.int64Value == code, "\(method) \(params)")
      #expect(error["data"]?["name"]?.stringValue == name, "\(method) \(params)")
      #expect(error["message"]?.stringValue?.isEmpty == false)
    }
    let conflict = try client.error("toggle", #"{"key":"wifi","ifRevision":3}"#)
    #expect(conflict["data"]?["revision"]?.int64Value == 0)
    #expect(conflict["data"]?["key"]?.stringValue == "wifi")
    // The switch as it is now, for a page to redraw without another get.
    #expect(conflict["data"]?["switch"]?["key"]?.stringValue == "wifi")
    #expect(conflict["data"]?["switch"]?["revision"]?.int64Value == 0)
    _ = try client.result("set", #"{"key":"wifi","checked":false}"#)
    let stale = try client.error("set", #"{"key":"wifi","checked":true,"ifRevision":0}"#)
    #expect(stale["data"]?["switch"]?["checked"]?.boolValue == false)
    #expect(stale["data"]?["switch"]?["revision"]?.int64Value == 1)
  }

  @Test func ifRevisionMatchingTheSwitchSucceeds() throws {
    let daemon = try DaemonFixture()
    let client = try daemon.client()
    let first = try client.result("toggle", #"{"key":"wifi","ifRevision":0}"#)
    #expect(first["switch"]?["revision"]?.int64Value == 1)
    let second = try client.result("set", #"{"key":"wifi","checked":true,"ifRevision":1}"#)
    #expect(second["changed"]?.boolValue == true)
  }

  @Test func restartKeepsValuesAndRevisions() throws {
    let daemon = try DaemonFixture()
    do {
      let client = try daemon.client()
      _ = try client.result("toggle", #"{"key":"wifi"}"#)
      _ = try client.result("toggle", #"{"key":"bluetooth"}"#)
    }
    #expect(daemon.stop() == 0)
    try daemon.start()
    let client = try daemon.client()
    let wifi = try client.result("get", #"{"key":"wifi"}"#)
    #expect(wifi["checked"]?.boolValue == false)
    #expect(wifi["revision"]?.int64Value == 1)
    let next = try client.result("toggle", #"{"key":"wifi"}"#)
    #expect(next["switch"]?["revision"]?.int64Value == 3)
    let history = try client.result("history")
    #expect(history["entries"]?.arrayValue?.compactMap { $0["revision"]?.int64Value } == [3, 2, 1])
  }

  @Test func badLinesLeaveTheConnectionUsable() throws {
    let daemon = try DaemonFixture(daemonConf: "[Daemon]\nAdminGroup=\nMaxFrameBytes=2048\n")
    let client = try daemon.client()
    try client.send(raw: "this is not json\n")
    #expect(try client.readJSON()["error"]?["code"]?.int64Value == -32700)
    try client.send(
      raw: "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"get\",\"params\":{\"key\":\"\u{FF}\"}}\n")
    let odd = try client.readJSON()
    #expect(odd["error"] != nil)
    // Invalid UTF-8 bytes.
    _ = [UInt8]([0x7B, 0xC3, 0x28, 0x7D, 0x0A]).withUnsafeBytes {
      Glibc.send(client.fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
    }
    let invalid = try client.readJSON()
    #expect(invalid["error"]?["code"]?.int64Value == -32700)
    #expect(invalid["id"]?.isNull == true)
    try client.send(raw: String(repeating: "x", count: 5000) + "\n")
    let long = try client.readJSON()
    #expect(long["error"]?["code"]?.int64Value == -32600)
    try client.send(raw: "[]\n{\"jsonrpc\":\"1.0\",\"id\":5,\"method\":\"get\"}\n\n   \n")
    #expect(try client.readJSON()["error"]?["code"]?.int64Value == -32600)
    let wrongVersion = try client.readJSON()
    #expect(wrongVersion["error"]?["code"]?.int64Value == -32600)
    #expect(wrongVersion["id"]?.int64Value == 5)
    #expect(try client.result("get", #"{"key":"wifi"}"#)["key"]?.stringValue == "wifi")
  }

  @Test func pipelinedRequestsAreAnsweredInOrderAndReadTheirWrites() throws {
    let daemon = try DaemonFixture()
    let client = try daemon.client()
    var text = ""
    for i in 1...60 {
      switch i % 3 {
      case 0:
        text += #"{"jsonrpc":"2.0","id":\#(i),"method":"toggle","params":{"key":"wifi"}}"# + "\n"
      case 1: text += #"{"jsonrpc":"2.0","id":\#(i),"method":"get","params":{"key":"wifi"}}"# + "\n"
      default: text += #"{"jsonrpc":"2.0","id":\#(i),"method":"status"}"# + "\n"
      }
    }
    try client.send(raw: text)
    var toggles: Int64 = 0
    for i in 1...60 {
      let response = try client.readJSON()
      #expect(response["id"]?.int64Value == Int64(i))
      if i % 3 == 0 { toggles += 1 }
      if i % 3 == 1 {
        // Each get sees every toggle sent before it.
        #expect(response["result"]?["revision"]?.int64Value == toggles)
      }
    }
  }

  @Test func batchesAnswerOnOneLineAndNotificationsAreNeverAnswered() throws {
    let daemon = try DaemonFixture()
    let client = try daemon.client()
    try client.send(raw: #"{"jsonrpc":"2.0","method":"toggle","params":{"key":"wifi"}}"# + "\n")
    try client.send(
      raw: #"[{"jsonrpc":"2.0","id":"a","method":"get","params":{"key":"wifi"}},"#
        + #"{"jsonrpc":"2.0","method":"toggle","params":{"key":"bluetooth"}},"#
        + #"1,{"jsonrpc":"2.0","id":"c","method":"nope"}]"# + "\n")
    let batch = try client.readJSON().arrayValue ?? []
    #expect(batch.count == 3)
    #expect(batch.first?["id"]?.stringValue == "a")
    #expect(batch.first?["result"]?["checked"]?.boolValue == false)
    #expect(batch.dropFirst().first?["error"]?["code"]?.int64Value == -32600)
    #expect(batch.last?["error"]?["code"]?.int64Value == -32601)
    try client.send(raw: #"[{"jsonrpc":"2.0","method":"status"}]"# + "\n")
    let status = try client.result("status")
    #expect(status["revision"]?.int64Value == 2)
  }

  /// A notification and then a close (a client that wants no answer): the
  /// hang-up used to drop what the daemon had not read yet.
  @Test func notificationsSentJustBeforeAHangUpAreCarriedOut() throws {
    let daemon = try DaemonFixture()
    for _ in 0..<10 {
      let client = try daemon.client()
      try client.send(raw: #"{"jsonrpc":"2.0","method":"toggle","params":{"key":"wifi"}}"# + "\n")
      client.close()
    }
    let observer = try daemon.client()
    #expect(
      try pollUntil(seconds: 30) {
        let status = try observer.result("status")
        return status["revision"]?.int64Value == 10 && status["connections"]?.int64Value == 1
      })
  }

  @Test func concurrentTogglesKeepParityAndEmitOneEventEach() throws {
    let daemon = try DaemonFixture()
    let watcher = try daemon.client()
    _ = try watcher.result("watch", #"{"keys":["wifi"]}"#)
    let clients = 8
    let perClient = 40
    let socket = daemon.socketPath
    // Threads, not tasks: the clients block in recv (see TestThread).
    let threads = (0..<clients).map { _ in
      TestThread { () -> String? in
        do {
          let client = try RPCClient(socketPath: socket)
          for _ in 0..<perClient { _ = try client.result("toggle", #"{"key":"wifi"}"#) }
          return nil
        } catch {
          return "\(error)"
        }
      }
    }
    for failure in threads.compactMap({ $0.join() }) { Issue.record("a client failed: \(failure)") }
    let total = clients * perClient
    var revisions: [Int64] = []
    for _ in 0..<total { revisions.append(try watcher.nextEvent()["revision"]?.int64Value ?? -1) }
    #expect(revisions == Array(1...Int64(total)))
    let wifi = try daemon.client().result("get", #"{"key":"wifi"}"#)
    #expect(wifi["checked"]?.boolValue == (total % 2 == 0))
    #expect(wifi["revision"]?.int64Value == Int64(total))
  }

  @Test func watchSinceReplaysThenContinuesLiveWithNoGap() throws {
    let daemon = try DaemonFixture()
    let writer = try daemon.client()
    for _ in 0..<5 { _ = try writer.result("toggle", #"{"key":"wifi"}"#) }
    _ = try writer.result("toggle", #"{"key":"bluetooth"}"#)
    let watcher = try daemon.client()
    let watch = try watcher.result("watch", #"{"keys":["wifi"],"since":2}"#)
    #expect(watch["switches"] == nil)
    #expect(watch["revision"]?.int64Value == 6)
    _ = try writer.result("toggle", #"{"key":"wifi"}"#)
    var seen: [Int64] = []
    for _ in 0..<4 { seen.append(try watcher.nextEvent()["revision"]?.int64Value ?? -1) }
    #expect(seen == [3, 4, 5, 7])
  }

  @Test func watchSinceOlderThanRetainedHistoryIsCompacted() throws {
    let daemon = try DaemonFixture(daemonConf: "[Daemon]\nAdminGroup=\nHistoryRetention=5\n")
    let writer = try daemon.client()
    for _ in 0..<30 { _ = try writer.result("toggle", #"{"key":"wifi"}"#) }
    // Pruning runs after commits; one more round trip lets it finish.
    _ = try writer.result("toggle", #"{"key":"bluetooth"}"#)
    _ = try writer.result("toggle", #"{"key":"bluetooth"}"#)
    let error = try daemon.client().error("watch", #"{"since":1}"#)
    #expect(error["code"]?.int64Value == -32009)
    #expect(error["data"]?["name"]?.stringValue == "HistoryCompacted")
    let oldest = error["data"]?["oldest"]?.int64Value ?? 0
    #expect(oldest > 2)
    let resumed = try daemon.client().result("watch", #"{"since":\#(oldest - 1)}"#)
    #expect(resumed["revision"]?.int64Value == 32)
  }

  /// Output that could not be written is a failure: `switchctl --json list
  /// > file` on a full disk must not report success with the file empty.
  /// A reader that leaves (`watch | head -1`) is not.
  @Test func switchctlFailsWhenItsOutputCannotBeWritten() throws {
    guard access("/dev/full", W_OK) == 0 else { return }
    let daemon = try DaemonFixture()
    let ctl = "'\(Products.path("switchctl"))' --socket '\(daemon.socketPath)'"
    for command in ["get wifi", "--json list", "toggle wifi"] {
      let full = runProcess(["/bin/sh", "-c", "\(ctl) \(command) > /dev/full"])
      #expect(full.status == 1, "\(command): \(full.status) \(full.stderr)")
      #expect(full.stderr.contains("cannot write to standard output: No space left on device"))
    }
    // The reader may be gone before the write (EPIPE) or not: 0 either way.
    let piped = runProcess(["/bin/bash", "-c", "set -o pipefail; \(ctl) list | true"])
    #expect(piped.status == 0, "\(piped.stderr)")
    #expect(!piped.stderr.contains("cannot write"), "\(piped.stderr)")
  }

  @Test func sigtermExitsZero() throws {
    let daemon = try DaemonFixture()
    _ = try daemon.client().result("toggle", #"{"key":"wifi"}"#)
    #expect(daemon.stop() == 0)
  }
}
