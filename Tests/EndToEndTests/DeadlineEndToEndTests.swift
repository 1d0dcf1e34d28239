import Glibc
import SwitchProtocol
import SwitchTestSupport
import Testing

/// Timed values and holds (SEMANTICS.md rules 21–22) against the real
/// binaries, with deadlines of a second or two: each ending is exactly one
/// change, with the revisions gap-free, also when it passes while switchd is
/// stopped or killed, and never twice.
@Suite struct DeadlineEndToEndTests {
  static func wallClockMilliseconds() -> Int64 {
    var ts = timespec()
    clock_gettime(CLOCK_REALTIME, &ts)
    return Int64(ts.tv_sec) * 1000 + Int64(ts.tv_nsec) / 1_000_000
  }

  /// Waits until the wall clock is past `deadline` (a time the test set,
  /// not a guess at how long switchd takes).
  static func waitUntilPast(_ deadline: Int64) {
    while wallClockMilliseconds() <= deadline { usleep(20_000) }
  }

  static func time(_ value: JSONValue?) -> Int64? {
    value?.stringValue.flatMap { Timestamp.milliseconds($0) }
  }

  @Test func aTimedValueComesBackAtItsDeadlineAsOneExpiryChange() throws {
    let daemon = try DaemonFixture()
    let watcher = try daemon.client()
    _ = try watcher.result("watch", #"{"keys":["wifi"]}"#)
    let client = try daemon.client()
    let before = Self.wallClockMilliseconds()
    let answer = try client.result("set", #"{"key":"wifi","checked":false,"for":1}"#)
    let expiresAt = try #require(Self.time(answer["switch"]?["expiresAt"]))
    #expect(expiresAt >= before + 1000)

    let set = try watcher.nextEvent()
    #expect(set["revision"]?.int64Value == 1)
    #expect(set["fields"]?.arrayValue == [.string("checked"), .string("expiresAt")])
    #expect(Self.time(set["state"]?["expiresAt"]) == expiresAt)

    let expiry = try watcher.nextEvent()
    #expect(expiry["revision"]?.int64Value == 2)
    #expect(expiry["cause"]?.stringValue == "expiry")
    #expect(expiry["actor"]?["source"]?.stringValue == "timer")
    #expect(expiry["actor"]?["uid"]?.isNull == true)
    #expect(expiry["state"]?["checked"]?.boolValue == true)
    #expect(expiry["state"]?["expiresAt"]?.isNull == true)
    #expect(expiry["fields"]?.arrayValue == [.string("checked"), .string("expiresAt")])
    #expect(try #require(Self.time(expiry["time"])) >= expiresAt)

    // Nothing else came: the next message is the answer.
    let status = try watcher.call("status")
    #expect(status["result"]?["revision"]?.int64Value == 2)
    #expect(watcher.notifications.isEmpty)
    // `since` replays the same two changes.
    let replay = try daemon.client()
    _ = try replay.result("watch", #"{"keys":["wifi"],"since":0}"#)
    #expect(try replay.nextEvent()["revision"] == set["revision"])
    let replayed = try replay.nextEvent()
    #expect(replayed["cause"]?.stringValue == "expiry")
    #expect(replayed["state"] == expiry["state"])
  }

  @Test func aLaterWriteOfTheValueEndsTheTimer() throws {
    let daemon = try DaemonFixture()
    let client = try daemon.client()
    _ = try client.result("set", #"{"key":"wifi","checked":false,"for":1}"#)
    let same = try client.result("set", #"{"key":"wifi","checked":false}"#)
    #expect(same["changed"]?.boolValue == false)
    #expect(same["switch"]?["expiresAt"]?.isNull == false)
    let back = try client.result("set", #"{"key":"wifi","checked":true}"#)
    let deadline = try #require(Self.time(same["switch"]?["expiresAt"]))
    #expect(back["switch"]?["expiresAt"]?.isNull == true)
    Self.waitUntilPast(deadline + 300)
    // A change that would come would come after the write's revision 2.
    let status = try client.result("status")
    #expect(status["revision"]?.int64Value == 2)
    let wifi = try client.result("get", #"{"key":"wifi"}"#)
    #expect(wifi["checked"]?.boolValue == true)
  }

  /// The paragraph after rule 22: an ending is judged as a write by the
  /// change's maker would be. An administrator writes through an
  /// administrator's lock, so their timed value comes back under it, and
  /// their tried change reverts; a writer's stays (the hold wins), and
  /// every ending is still one change. Kept across a restart in between
  /// (who made it is in the database with the deadline).
  @Test(.needsRoot("connects as a human account with setpriv"))
  func anEndingUnderALockIsJudgedAsItsMakersWrite() throws {
    let daemon = try DaemonFixture()
    let admin = try daemon.client()
    let writer = try daemon.client(asUser: humanUID)
    let tried = #""confirmWithin":600,"revertOnDisconnect":false}"#
    _ = try admin.result("set", #"{"key":"wifi","checked":false,"for":3}"#)
    _ = try writer.result("set", #"{"key":"bluetooth","checked":true,"for":3}"#)
    _ = try admin.result("set", #"{"key":"notifications.chat","checked":false,"# + tried)
    _ = try writer.result("set", #"{"key":"notifications.mail","checked":false,"# + tried)
    for key in ["wifi", "bluetooth", "notifications.chat", "notifications.mail"] {
      let locked = try admin.result("lock", #"{"key":"\#(key)"}"#)
      let timer = key.hasPrefix("notifications") ? "pendingUntil" : "expiresAt"
      try #require(locked["switch"]?[timer]?.isNull == false, "\(key): locked before its end")
    }
    let locks = try #require(try admin.result("status")["revision"]?.int64Value)
    #expect(daemon.stop() == 0)
    try daemon.start()

    // The two endings, live or carried out at start: replayed from the locks on.
    let watcher = try daemon.client()
    _ = try watcher.result("watch", #"{"keys":["wifi","bluetooth"],"since":\#(locks)}"#)
    var ended: [String: JSONValue] = [:]
    while ended.count < 2 {
      let event = try watcher.nextEvent()
      #expect(event["cause"]?.stringValue == "expiry")
      ended[event["key"]?.stringValue ?? "?"] = event["state"]
    }
    #expect(ended["wifi"]?["checked"]?.boolValue == true, "the administrator's comes back")
    #expect(ended["bluetooth"]?["checked"]?.boolValue == true, "the writer's stays")
    for state in ended.values {
      #expect(state["readOnly"]?.boolValue == true)
      #expect(state["expiresAt"]?.isNull == true)
    }
    let after = try daemon.client()
    let chat = try after.result("revert", #"{"key":"notifications.chat"}"#)
    #expect(chat["changed"]?.boolValue == true)
    #expect(chat["switch"]?["checked"]?.boolValue == true, "the administrator's comes back")
    let mail = try after.result("revert", #"{"key":"notifications.mail"}"#)
    #expect(mail["changed"]?.boolValue == true)
    #expect(mail["switch"]?["checked"]?.boolValue == false, "the writer's stays")
    #expect(mail["switch"]?["pendingUntil"]?.isNull == true)
  }

  @Test func aTimedHoldLiftsAsUnlockWouldAndADisableAsEnable() throws {
    let daemon = try DaemonFixture()
    let watcher = try daemon.client()
    _ = try watcher.result("watch", #"{"keys":["bluetooth"]}"#)
    let admin = try daemon.client()
    let locked = try admin.result("lock", #"{"key":"bluetooth","reason":"exam","for":1}"#)
    #expect(locked["switch"]?["readOnlyUntil"]?.isNull == false)
    #expect(try watcher.nextEvent()["cause"]?.stringValue == "lock")
    let lifted = try watcher.nextEvent()
    #expect(lifted["cause"]?.stringValue == "expiry")
    #expect(lifted["state"]?["readOnly"]?.boolValue == false)
    #expect(lifted["state"]?["readOnlyReason"]?.isNull == true)
    #expect(lifted["state"]?["readOnlyUntil"]?.isNull == true)

    _ = try admin.result("disable", #"{"key":"bluetooth","for":1}"#)
    #expect(try watcher.nextEvent()["state"]?["disabledUntil"]?.isNull == false)
    let enabled = try watcher.nextEvent()
    #expect(enabled["cause"]?.stringValue == "expiry")
    #expect(enabled["revision"]?.int64Value == 4)
    #expect(enabled["state"]?["disabled"]?.boolValue == false)
  }

  @Test func aDeadlineThatPassedWhileStoppedIsCarriedOutOnceAtStart() throws {
    let daemon = try DaemonFixture()
    let client = try daemon.client()
    let wifi = try client.result("set", #"{"key":"wifi","checked":false,"for":1}"#)
    let bluetooth = try client.result("lock", #"{"key":"bluetooth","for":2}"#)
    let last = try #require(Self.time(bluetooth["switch"]?["readOnlyUntil"]))
    #expect(daemon.stop() == 0)
    Self.waitUntilPast(last)
    try daemon.start()
    let reader = try daemon.client()
    #expect(try pollUntil { try reader.result("status")["revision"]?.int64Value == 4 })
    let history = try reader.result("history")
    let entries = try #require(history["entries"]?.arrayValue)
    // Newest first: the lock's end, then the value's (deadline order), then the two writes.
    #expect(entries.map { $0["revision"]?.int64Value } == [4, 3, 2, 1])
    #expect(entries.prefix(2).map { $0["cause"]?.stringValue } == ["expiry", "expiry"])
    #expect(entries[1]["key"]?.stringValue == "wifi")
    #expect(entries[0]["key"]?.stringValue == "bluetooth")
    #expect(Self.time(wifi["switch"]?["expiresAt"]).map { $0 < last } == true)

    // Killed and started again: nothing is carried out twice. What is due
    // at start is carried out before the first write, so a write's revision
    // says whether anything was (a read could come before it).
    daemon.crash()
    try daemon.start()
    let write = try daemon.client().result("toggle", #"{"key":"bluetooth"}"#)
    #expect(write["switch"]?["revision"]?.int64Value == 5)
    let newest = try daemon.client().result("history")["entries"]?.arrayValue?.first
    #expect(newest?["cause"]?.stringValue == "toggle")
  }

  @Test func aKillBeforeTheDeadlineLosesNoTimer() throws {
    let daemon = try DaemonFixture()
    let client = try daemon.client()
    let answer = try client.result("toggle", #"{"key":"wifi","for":1}"#)
    let deadline = try #require(Self.time(answer["switch"]?["expiresAt"]))
    daemon.crash()
    try daemon.start()
    let watcher = try daemon.client()
    let watch = try watcher.result("watch", #"{"keys":["wifi"]}"#)
    if watch["revision"]?.int64Value == 1 {
      // Started before the deadline: the ending comes as an event.
      #expect(try watcher.nextEvent()["cause"]?.stringValue == "expiry")
    }
    Self.waitUntilPast(deadline)
    let wifi = try watcher.result("get", #"{"key":"wifi"}"#)
    #expect(wifi["revision"]?.int64Value == 2)
    #expect(wifi["checked"]?.boolValue == true)
    #expect(wifi["expiresAt"]?.isNull == true)
  }

  /// `until` as clients write times: whole seconds, an offset. The
  /// Switch object says the same instant as switchd writes times.
  @Test func untilTakesAnyRFC3339Time() throws {
    let daemon = try DaemonFixture()
    let client = try daemon.client()
    let hourAhead = (Self.wallClockMilliseconds() / 1000 + 3600) * 1000
    let utc = Timestamp.iso8601(milliseconds: hourAhead)
    // "…:SS.000Z" as "…:SSZ", and one hour later on the clock as "+01:00".
    let wholeSeconds = String(utc.dropLast(5)) + "Z"
    let offset =
      String(Timestamp.iso8601(milliseconds: hourAhead + 3_600_000).dropLast(5)) + "+01:00"
    let set = try client.result(
      "set", #"{"key":"wifi","checked":false,"until":"\#(wholeSeconds)"}"#)
    #expect(set["switch"]?["expiresAt"]?.stringValue == utc)
    let lock = try client.result("lock", #"{"key":"wifi","until":"\#(offset)"}"#)
    #expect(lock["switch"]?["readOnlyUntil"]?.stringValue == utc)
  }

  @Test func badTimeParametersAreInvalidParams() throws {
    let daemon = try DaemonFixture()
    let client = try daemon.client()
    for params in [
      #"{"key":"wifi","checked":false,"for":0}"#,
      #"{"key":"wifi","checked":false,"for":31536001}"#,
      #"{"key":"wifi","checked":false,"for":true}"#,
      #"{"key":"wifi","checked":false,"until":"2020-01-01T00:00:00.000Z"}"#,
      #"{"key":"wifi","checked":false,"until":"tomorrow"}"#,
      #"{"key":"wifi","checked":false,"for":5,"until":"2999-01-01T00:00:00.000Z"}"#,
    ] {
      let error = try client.error("set", params)
      #expect(error["data"]?["name"]?.stringValue == "InvalidParams", "\(params)")
    }
    let tooFar = try client.error(
      "lock", #"{"key":"wifi","until":"2999-01-01T00:00:00.000Z"}"#)
    #expect(tooFar["message"]?.stringValue?.contains("a year") == true)
    #expect(try client.result("status")["revision"]?.int64Value == 0)
  }

  @Test func aSwitchTheSchemaDropsKeepsItsDeadlineForWhenItIsBack() throws {
    let daemon = try DaemonFixture()
    let client = try daemon.client()
    let locked = try client.result("lock", #"{"key":"wifi","for":1}"#)
    let deadline = try #require(Self.time(locked["switch"]?["readOnlyUntil"]))
    try daemon.writeFile("switches.d/10-test.conf", "[bluetooth]\nLabel=Bluetooth\n")
    _ = try client.result("reload")
    Self.waitUntilPast(deadline + 200)
    // Undeclared, it has no timer: nothing is carried out.
    #expect(try client.result("status")["revision"]?.int64Value == 1)
    try daemon.writeFile("switches.d/10-test.conf", DaemonFixture.standardSwitches)
    _ = try client.result("reload")
    #expect(try pollUntil { try client.result("status")["revision"]?.int64Value == 2 })
    let history = try client.result("history", #"{"limit":1}"#)
    #expect(history["entries"]?.arrayValue?.first?["cause"]?.stringValue == "expiry")
    #expect(try client.result("get", #"{"key":"wifi"}"#)["readOnly"]?.boolValue == false)
  }
}
