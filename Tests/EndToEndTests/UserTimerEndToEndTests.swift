import Glibc
import SwitchProtocol
import SwitchTestSupport
import Testing

/// Rule 21 on a user-scope switch against the real daemon: the timer is
/// that user's ("my notifications off for an hour"). It ends as one change
/// of that user's value, `cause: "expiry"` by switchd's timer; no other
/// user's value moves; it is kept with the value (a kill loses nothing,
/// a restart after the deadline carries it out once).
@Suite(.serialized, .needsRoot("connects as several uids with setpriv"))
struct UserTimerEndToEndTests {
  static let alice: UInt32 = 1000
  static let bob: UInt32 = 1001

  static func fixture() throws -> DaemonFixture {
    try DaemonFixture(switches: PerUserEndToEndTests.switches)
  }

  @Test func aUsersTimedValueEndsAsOneChangeOfTheirsAlone() throws {
    let daemon = try Self.fixture()
    let everyone = try daemon.client()
    _ = try everyone.result("watch", #"{"keys":["email.marketing"],"user":"*"}"#)
    let alice = try daemon.client(asUser: Self.alice)
    let bob = try daemon.client(asUser: Self.bob)
    _ = try bob.result("set", #"{"key":"email.marketing","checked":false}"#)
    #expect(try everyone.nextEvent()["user"] == .int(1001))

    let set = try alice.result("set", #"{"key":"email.marketing","checked":false,"for":1}"#)
    #expect(set["switch"]?["user"] == .int(1000))
    #expect(set["switch"]?["expiresAt"]?.isNull == false)
    #expect(try alice.result("get", #"{"key":"email.marketing"}"#)["expiresAt"]?.isNull == false)
    // The timer is Alice's: Bob, and a user who never set it, have none.
    #expect(try bob.result("get", #"{"key":"email.marketing"}"#)["expiresAt"]?.isNull == true)
    #expect(
      try everyone.result("get", #"{"key":"email.marketing","user":1002}"#)["expiresAt"]?.isNull
        == true)
    let timed = try everyone.nextEvent()
    #expect(timed["user"] == .int(1000))
    #expect(timed["fields"]?.arrayValue == [.string("checked"), .string("expiresAt")])

    let expiry = try everyone.nextEvent()
    #expect(expiry["user"] == .int(1000))
    #expect(expiry["revision"]?.int64Value == 3)
    #expect(expiry["cause"]?.stringValue == "expiry")
    #expect(expiry["actor"]?["source"]?.stringValue == "timer")
    #expect(expiry["state"]?["checked"]?.boolValue == true)
    #expect(expiry["state"]?["expiresAt"]?.isNull == true)
    #expect(try alice.result("get", #"{"key":"email.marketing"}"#).checked == true)
    #expect(try bob.result("get", #"{"key":"email.marketing"}"#).checked == false)
    let history = try alice.result("history", #"{"key":"email.marketing"}"#)
    #expect(history["entries"]?.arrayValue?.first?["cause"]?.stringValue == "expiry")
    #expect(try everyone.result("status")["revision"]?.int64Value == 3)
  }

  @Test func aUsersTimerIsKeptAcrossAKillAndCarriedOutOnceAtStart() throws {
    let daemon = try Self.fixture()
    let alice = try daemon.client(asUser: Self.alice)
    let set = try alice.result("set", #"{"key":"email.marketing","checked":false,"for":1}"#)
    let deadline = try #require(DeadlineEndToEndTests.time(set["switch"]?["expiresAt"]))
    // The database holds the timer past the checkpoint too.
    daemon.crash()
    DeadlineEndToEndTests.waitUntilPast(deadline)
    try daemon.start()
    let root = try daemon.client()
    #expect(try pollUntil { try root.result("status")["revision"]?.int64Value == 2 })
    let seen = try root.result("get", #"{"key":"email.marketing","user":1000}"#)
    #expect(seen.checked == true)
    #expect(seen["expiresAt"]?.isNull == true)
    let last = try root.result("history", #"{"key":"email.marketing","user":1000}"#)
    #expect(last["entries"]?.arrayValue?.first?["cause"]?.stringValue == "expiry")
    // Killed and started again: nothing is carried out twice (what is due
    // at start goes before the first write, whose revision says so).
    daemon.crash()
    try daemon.start()
    let write = try daemon.client().result("toggle", #"{"key":"wifi"}"#)
    #expect(write["switch"]?["revision"]?.int64Value == 3)
  }

  @Test func aLaterWriteEndsTheTimerAndATriedChangeIsForSystemSwitches() throws {
    let daemon = try Self.fixture()
    let alice = try daemon.client(asUser: Self.alice)
    _ = try alice.result("set", #"{"key":"email.marketing","checked":false,"for":3600}"#)
    let back = try alice.result("toggle", #"{"key":"email.marketing"}"#)
    #expect(back["switch"]?["expiresAt"]?.isNull == true)
    let tried = try alice.error(
      "set", #"{"key":"email.marketing","checked":false,"confirmWithin":60}"#)
    #expect(tried["data"]?["name"]?.stringValue == "InvalidParams")
    #expect(tried["data"]?["param"]?.stringValue == "confirmWithin")
  }
}
