import SwitchCore
import Testing

@testable import SwitchCtl
@testable import SwitchProtocol

/// `--for`, `--until`, `--confirm` as people write them, and the deadlines in words.
@Suite struct TimeArgumentTests {
  @Test(
    arguments: [
      ("90s", 90), ("90", 90), ("15m", 900), ("1h 30m", 5400), ("1h30m", 5400), ("2d", 172_800),
      ("1w", 604_800), ("2 hours", 7200), ("1 min 5 sec", 65),
      // As systemd-analyze timespan reads them (its microseconds rounded
      // up to a whole second): fractions, a month (`M`, not `m`), a `+`,
      // tabs, digits past a microsecond dropped.
      ("1.5h", 5400), (".5m", 30), ("1M", 2_629_800), ("1 month", 2_629_800), ("1y", 31_557_600),
      ("500ms", 1), ("1500 msec", 2), ("2.000000001s", 2), ("1.9999999s", 2), ("1.5", 2),
      ("+5m", 300), ("5m+3s", 303), ("5\tm", 300), ("1.0000000001s", 1),
    ] as [(String, Int64)])
  func spansAreSecondsAsSystemdWritesThem(text: String, seconds: Int64) throws {
    #expect(try TimeArgument.span(text).get() == seconds)
  }

  @Test(
    arguments: [
      "", "0", "0s", "5x", "h", "-5m", "1H", "2mo", "1.", ".", "1..5h", "1 . 5s", "5ns", "++5m",
      "99999999999999999999s", "400000y",
    ])
  func badSpansSayWhy(text: String) {
    guard case .failure(let problem) = TimeArgument.span(text) else {
      Issue.record("'\(text)' was taken as a span")
      return
    }
    #expect(!problem.message.isEmpty)
  }

  @Test func blanksAreNoSpanAndYearsAUnit() {
    guard case .failure(let blank) = TimeArgument.span(" ") else {
      Issue.record("blanks were taken as a span")
      return
    }
    #expect(blank.message == "' ' is not a time span (write 90s, 15m, 1h 30m or 2d)")
    guard case .failure(let unit) = TimeArgument.span("5x") else { return }
    #expect(unit.message == "'x' in '5x' is not a unit of time (s, m, h, d, w, M or y)")
  }

  @Test func timesAreTimestampsOrTheNextLocalClockTime() throws {
    let now: Int64 = 1_796_000_000_000
    #expect(
      try TimeArgument.time("2026-12-02T16:00:00.000Z", now: now).get() == 1_796_227_200_000)
    #expect(try TimeArgument.time("2026-12-02T16:00:00Z", now: now).get() == 1_796_227_200_000)
    let next = try TimeArgument.time("08:00", now: now).get()
    #expect(next > now && next <= now + 86_400_000)
    #expect(try TimeArgument.time("08:00:30", now: now).get() == next + 30_000)
    // Local date and time, with seconds or without, a space or a T.
    let local = try TimeArgument.time("2026-12-07 16:00", now: now).get()
    for same in ["2026-12-07 16:00:00", "2026-12-07T16:00", "2026-12-07T16:00:00"] {
      #expect(try TimeArgument.time(same, now: now).get() == local, "\(same)")
    }
    #expect(try TimeArgument.time("2026-12-07 16:00:05", now: now).get() == local + 5000)
    for bad in [
      "25:00", "8:00", "tomorrow", "2026-13-01 10:00x", "2026-02-30 10:00", "2026-12-07 16:00:60",
      "2026-12-7 16:00", "2026-12-07 16:00:", "2026-12-07  16:00", "+8:00", "2026-+1-07 16:00",
    ] {
      guard case .failure = TimeArgument.time(bad, now: now) else {
        Issue.record("'\(bad)' was taken as a time")
        continue
      }
    }
  }

  /// A local time across daylight saving is read as `Schedule=` reads one
  /// (SwitchCore's `ZoneOffsets.firstInstant`): in the spring gap, its end;
  /// in the repeated autumn hour, the first reading. With mktime, 02:30 in
  /// the gap was 03:30, and a repeated 02:30 the second (an audit).
  @Test func aLocalTimeAcrossDaylightSavingIsReadAsASchedulesIs() throws {
    // Berlin in 2027: CEST from 2027-03-28T01:00Z, CET again from 2027-10-31T01:00Z.
    let spring: Int64 = 1_806_195_600  // 2027-03-28T01:00:00Z
    let autumn: Int64 = 1_824_944_400  // 2027-10-31T01:00:00Z
    let berlin = ZoneOffsets { $0 >= spring && $0 < autumn ? 7200 : 3600 }
    func utc(_ text: String) -> Int64 { Timestamp.milliseconds(rfc3339: text)! }
    // 00:30 local on the day of each change.
    let springMorning = utc("2027-03-27T23:30:00Z")
    #expect(
      try TimeArgument.time("02:30", now: springMorning, zone: berlin).get()
        == utc("2027-03-28T01:00:00Z"))  // 03:00 CEST, the gap's end
    #expect(
      try TimeArgument.time("2027-03-28 02:30", now: springMorning, zone: berlin).get()
        == utc("2027-03-28T01:00:00Z"))
    let autumnMorning = utc("2027-10-30T22:30:00Z")
    #expect(
      try TimeArgument.time("02:30", now: autumnMorning, zone: berlin).get()
        == utc("2027-10-31T00:30:00Z"))  // 02:30 CEST, the first reading
    // An ordinary day: the next such time, tomorrow once passed.
    #expect(
      try TimeArgument.time("00:15", now: autumnMorning, zone: berlin).get()
        == utc("2027-10-31T23:15:00Z"))
  }

  @Test func optionsAreCheckedOnTheCommandLine() throws {
    let timed = try ArgumentParser.parse(["off", "notifications.chat", "--for", "1h"]).get()
    #expect(timed.timing.forSeconds == 3600)
    let tried = try ArgumentParser.parse(["toggle", "wifi", "--confirm", "30s", "--no-ask"]).get()
    #expect(tried.timing.confirmWithin == 30)
    #expect(tried.timing.noAsk)
    for line in [
      ["set", "wifi", "off", "--for", "5m", "--until", "12:00"],
      ["set", "wifi", "off", "--confirm", "2h"],
      ["set", "wifi", "off", "--no-ask"],
      ["reset", "wifi", "--for", "5m"],
      ["lock", "wifi", "--confirm", "5m"],
    ] {
      guard case .failure = ArgumentParser.parse(line) else {
        Issue.record("\(line) was accepted")
        continue
      }
    }
    #expect(try ArgumentParser.parse(["confirm", "wifi"]).get().command == .confirm(key: "wifi"))
    #expect(try ArgumentParser.parse(["revert", "wifi"]).get().command == .revert(key: "wifi"))
  }

  @Test func deadlinesInWords() {
    var state = StateObject(
      checked: false, readOnly: false, readOnlyReason: nil, heldBy: nil, disabled: false,
      disabledReason: nil, disabledBy: nil, invalid: false, invalidReason: nil)
    state.expiresAt = 1000 + 52 * 60_000
    state.pendingUntil = 1000 + 40_000
    let notes = Output.timeNotes(state, now: 1000)
    #expect(notes == ["reverts in 40 s unless confirmed", "off for 52 more minutes"])
    // Past its deadline, its revert not yet stored (a full disk): due, not "in 0 s".
    #expect(
      Output.timeNotes(state, now: 41_000).first
        == "its revert is due since \(Output.endClock(41_000))")
    // Printed after the fact (watch, a replay): times, not "in 40 s".
    #expect(
      Output.timeNotes(state, now: nil) == [
        "reverts at \(Output.endClock(41_000)) unless confirmed",
        "off until \(Output.endClock(1000 + 52 * 60_000))",
      ])
    // Under a hold the value shown may be the one it fixes, and the hold
    // may keep it at the end: the timer does not claim it (an audit).
    var beneath = state
    beneath.pendingUntil = nil
    beneath.readOnly = true
    beneath.heldBy = "admin"
    #expect(
      Output.timeNotes(beneath, now: 1000) == [
        "a timed value ends at \(Output.endClock(1000 + 52 * 60_000)), under the hold"
      ])
    // Holds: an administrator's ends by its time, a policy's by its schedule.
    var held = state
    held.expiresAt = nil
    held.pendingUntil = nil
    held.readOnly = true
    held.heldBy = "admin"
    held.readOnlyUntil = 3_600_000
    let clock = Output.localClock(3_600_000)
    #expect(Output.timeNotes(held, now: 1000) == ["read-only until " + clock])
    // An end within a minute says its second.
    held.readOnlyUntil = 3_605_000
    #expect(
      Output.timeNotes(held, now: 1000) == [
        "read-only until " + Output.localClock(3_605_000, seconds: true)
      ])
    #expect(Output.localClock(3_605_000, seconds: true).hasSuffix(":05"))
    held.readOnlyUntil = 3_600_000
    held.heldBy = "policy"
    held.disabled = true
    held.disabledBy = "policy"
    held.disabledUntil = 3_600_000
    #expect(
      Output.timeNotes(held, now: 1000) == [
        "held until \(clock) (schedule)", "disabled until \(clock) (schedule)",
      ])
    #expect(Output.span(90_000) == "90 s")
    #expect(Output.span(90_000, more: true) == "90 more seconds")
    #expect(Output.span(1, more: true) == "1 more second")
    #expect(Output.span(3 * 3_600_000) == "180 minutes" || Output.span(3 * 3_600_000) == "3 hours")
  }
}
