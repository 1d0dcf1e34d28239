import Testing

@testable import SwitchCore

/// Milliseconds since the epoch of a UTC date and time (proleptic Gregorian).
func utc(_ year: Int, _ month: Int, _ day: Int, _ hour: Int, _ minute: Int = 0) -> Int64 {
  let y = Int64(month <= 2 ? year - 1 : year)
  let era = (y >= 0 ? y : y - 399) / 400
  let yearOfEra = y - era * 400
  let dayOfYear = (153 * Int64((month + 9) % 12) + 2) / 5 + Int64(day) - 1
  let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
  let days = era * 146_097 + dayOfEra - 719_468
  return ((days * 24 + Int64(hour)) * 60 + Int64(minute)) * 60_000
}

/// A zone with one summer period: `summer` seconds east from `from` to
/// `to` (instants in ms), `winter` otherwise. Enough for the 2026 tests, and
/// no tzdata on the test machine is needed.
func zone(winter: Int64, summer: Int64, from: Int64, to: Int64) -> ZoneOffsets {
  ZoneOffsets { seconds in
    seconds * 1000 >= from && seconds * 1000 < to ? summer : winter
  }
}

/// Europe/Berlin in 2026: CEST from 29 March 01:00 UTC to 25 October 01:00 UTC.
let berlin = zone(winter: 3600, summer: 7200, from: utc(2026, 3, 29, 1), to: utc(2026, 10, 25, 1))
/// America/New_York in 2026: EDT from 8 March 07:00 UTC to 1 November 06:00 UTC.
let newYork = zone(
  winter: -18_000, summer: -14_400, from: utc(2026, 3, 8, 7), to: utc(2026, 11, 1, 6))
private let utcZone = ZoneOffsets.fixed(0)

/// Every flip from `start` up to `end`.
func transitions(_ schedule: Schedule, from start: Int64, to end: Int64, in zone: ZoneOffsets)
  -> [Int64]
{
  var flips: [Int64] = []
  var time = start
  while let next = schedule.nextTransition(after: time, in: zone), next <= end {
    flips.append(next)
    time = next
  }
  return flips
}

struct ScheduleWeekTests {
  // 2026-11-30 is a Monday.
  let office = try! Schedule(parsing: "Mon..Fri 08:00-16:00; Sat,Sun 10:00-12:00")

  @Test(arguments: [
    (utc(2026, 11, 30, 7, 59), false), (utc(2026, 11, 30, 8), true),
    (utc(2026, 11, 30, 15, 59), true), (utc(2026, 11, 30, 16), false),
    (utc(2026, 12, 4, 12), true), (utc(2026, 12, 5, 8), false), (utc(2026, 12, 5, 10), true),
    (utc(2026, 12, 6, 11, 59), true), (utc(2026, 12, 6, 12), false),
    (utc(2026, 12, 7, 3), false),
  ])
  func isActive(at time: Int64, expected: Bool) {
    #expect(office.isActive(at: time, in: utcZone) == expected)
  }

  @Test func theFlipsOfAWeek() {
    var expected: [Int64] = []
    for day in 30...34 {
      let (month, date) = day <= 30 ? (11, day) : (12, day - 30)
      expected += [utc(2026, month, date, 8), utc(2026, month, date, 16)]
    }
    expected += [utc(2026, 12, 5, 10), utc(2026, 12, 5, 12)]
    expected += [utc(2026, 12, 6, 10), utc(2026, 12, 6, 12)]
    expected += [utc(2026, 12, 7, 8)]
    #expect(
      transitions(office, from: utc(2026, 11, 30, 0), to: utc(2026, 12, 7, 8), in: utcZone)
        == expected)
  }

  @Test func aStartIsInsideAndTheNextFlipIsTheEnd() {
    #expect(
      office.nextTransition(after: utc(2026, 11, 30, 8), in: utcZone) == utc(2026, 11, 30, 16))
    #expect(
      office.nextTransition(after: utc(2026, 11, 30, 8) - 1, in: utcZone) == utc(2026, 11, 30, 8))
  }

  @Test func aZoneEastOfUTCShiftsTheWindows() {
    let plusTwo = ZoneOffsets.fixed(7200)
    #expect(office.isActive(at: utc(2026, 11, 30, 6), in: plusTwo))
    #expect(!office.isActive(at: utc(2026, 11, 30, 14), in: plusTwo))
    #expect(office.nextTransition(after: utc(2026, 11, 30, 0), in: plusTwo) == utc(2026, 11, 30, 6))
  }

  @Test func windowsPastMidnightEndTheNextDay() throws {
    let nights = try Schedule(parsing: "Mon..Fri 22:00-07:00")
    #expect(!nights.isActive(at: utc(2026, 11, 30, 3), in: utcZone))  // Sunday had no night
    #expect(nights.isActive(at: utc(2026, 11, 30, 22), in: utcZone))
    #expect(nights.isActive(at: utc(2026, 12, 1, 6, 59), in: utcZone))
    #expect(nights.isActive(at: utc(2026, 12, 5, 6, 59), in: utcZone))  // Friday's, on Saturday
    #expect(!nights.isActive(at: utc(2026, 12, 5, 7), in: utcZone))
    #expect(!nights.isActive(at: utc(2026, 12, 5, 22), in: utcZone))
    let day: Int64 = 86_400_000
    var nightly: [Int64] = []
    for night in Int64(0)..<5 {
      nightly += [utc(2026, 11, 30, 22) + night * day, utc(2026, 12, 1, 7) + night * day]
    }
    #expect(
      transitions(nights, from: utc(2026, 11, 30, 0), to: utc(2026, 12, 6, 0), in: utcZone)
        == nightly)
  }

  @Test func touchingAndOverlappingWindowsAreOneStretch() throws {
    let day = try Schedule(parsing: "Mon 08:00-12:00; Mon 12:00-16:00; Mon 15:00-17:00")
    #expect(day.nextTransition(after: utc(2026, 11, 30, 9), in: utcZone) == utc(2026, 11, 30, 17))
    let late = try Schedule(parsing: "Sun 20:00-00:00; Mon 00:00-02:00")
    #expect(late.nextTransition(after: utc(2026, 12, 6, 21), in: utcZone) == utc(2026, 12, 7, 2))
  }

  @Test func aScheduleCoveringTheWeekNeverFlips() throws {
    let always = try Schedule(parsing: "Mon..Sun 00:00-12:00; Mon..Sun 12:00-00:00")
    #expect(always.isActive(at: utc(2026, 12, 2, 12), in: utcZone))
    #expect(always.nextTransition(after: utc(2026, 12, 2, 12), in: utcZone) == nil)
  }

  @Test func oneDayAWeekFlipsAWeekLater() throws {
    let sunday = try Schedule(parsing: "Sun 10:00-11:00")
    #expect(
      sunday.nextTransition(after: utc(2026, 12, 6, 11), in: utcZone) == utc(2026, 12, 13, 10))
  }
}
