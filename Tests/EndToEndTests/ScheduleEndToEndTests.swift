import Glibc
import SwitchProtocol
import SwitchTestSupport
import Testing

/// Scheduled policy (SEMANTICS.md rule 22, CONFIG.md `Schedule=`) against the
/// real daemon: a section holds only inside its windows, in the local time
/// zone, and a window's end that changes a switch is one change with
/// `cause: policy`. Windows are whole minutes; the daemon's `TZ` is set a
/// few seconds off UTC (POSIX offsets take seconds) so that a local minute
/// ends ten seconds after the test starts, not within a minute.
@Suite struct ScheduleEndToEndTests {
  /// A POSIX `TZ` whose local time is `secondsEast` ahead of UTC.
  static func zone(secondsEast: Int) -> String { "LOC-0:00:\(secondsEast)" }

  static func localClock(_ seconds: Int) -> (hour: Int, minute: Int) {
    let minutes = (seconds / 60) % (24 * 60)
    return (minutes / 60, minutes % 60)
  }

  static func hhmm(_ clock: (hour: Int, minute: Int)) -> String {
    func two(_ n: Int) -> String { n < 10 ? "0\(n)" : "\(n)" }
    return two(clock.hour) + ":" + two(clock.minute)
  }

  @Test func aScheduledHoldHoldsInsideItsWindowAndLiftsAtItsEndAsOnePolicyChange() throws {
    let now = Int(time(nil))
    // Local time 10 s before a whole minute (the daemon has that long to start).
    let offset = ((50 - now % 60) % 60 + 60) % 60
    let local = now + offset
    let start = Self.localClock(local - 60)
    let end = Self.localClock(local + 10)
    let daemon = try DaemonFixture(
      policies: [
        "50-exam.conf":
          "[bluetooth]\nReadOnly=yes\nChecked=off\nReason=Exam\n"
          + "Schedule=Mon..Sun \(Self.hhmm(start))-\(Self.hhmm(end))\n"
      ], start: false)
    try daemon.launch(environment: ["TZ": Self.zone(secondsEast: offset)])
    try daemon.waitUntilServing()
    let client = try daemon.client()
    let watch = try client.result("watch", #"{"keys":["bluetooth"]}"#)
    let held = try #require(watch["switches"]?.arrayValue?.first)
    guard held["readOnly"]?.boolValue == true else {
      // Only a daemon that took over 10 s to start gets here: the window had ended.
      #expect(time(nil) >= now + 10, "inside its window the policy holds")
      return
    }
    #expect(held["readOnlyReason"]?.stringValue == "Exam")
    #expect(held["policySource"]?.stringValue == "50-exam.conf:1")
    // The window's end: one change, the policy's.
    let lifted = try client.nextEvent()
    #expect(lifted["cause"]?.stringValue == "policy")
    #expect(lifted["actor"]?["source"]?.stringValue == "policy")
    #expect(lifted["state"]?["readOnly"]?.boolValue == false)
    #expect(lifted["state"]?["heldBy"]?.isNull == true)
    let bluetooth = try client.result("get", #"{"key":"bluetooth"}"#)
    #expect(bluetooth["writable"]?.boolValue == true)
    #expect(bluetooth["policySource"]?.isNull == true)
    let status = try client.result("status")
    #expect(status["revision"]?.int64Value == lifted["revision"]?.int64Value)
  }

  @Test func outsideItsWindowsASectionHoldsNothing() throws {
    let now = Int(time(nil))
    // A window of one minute, twelve hours from now in UTC.
    let start = Self.localClock(now + 12 * 3600)
    let end = Self.localClock(now + 12 * 3600 + 60)
    let daemon = try DaemonFixture(
      policies: [
        "50-night.conf":
          "[wifi]\nDisabled=yes\nSchedule=Mon..Sun \(Self.hhmm(start))-\(Self.hhmm(end))\n"
      ], start: false)
    try daemon.launch(environment: ["TZ": "UTC"])
    try daemon.waitUntilServing()
    let wifi = try daemon.client().result("get", #"{"key":"wifi"}"#)
    #expect(wifi["disabled"]?.boolValue == false)
    #expect(try daemon.client().result("status")["revision"]?.int64Value == 0)
  }
}
