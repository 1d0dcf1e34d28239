import Testing

@testable import SwitchCore

/// Local times follow daylight saving: a time the spring-forward gap skips
/// falls at the gap's end; a time the fall-back hour repeats falls at its
/// first reading, so a window starts and ends once.
struct ScheduleDSTTests {
  // Berlin, Sunday 2026-03-29: 02:00 CET jumps to 03:00 CEST (01:00 UTC).
  @Test func aStartInTheSpringGapStartsAtTheGapsEnd() throws {
    let schedule = try Schedule(parsing: "Sun 02:30-03:30")
    #expect(
      transitions(schedule, from: utc(2026, 3, 28, 12), to: utc(2026, 3, 30, 0), in: berlin)
        == [utc(2026, 3, 29, 1), utc(2026, 3, 29, 1, 30)])
    #expect(schedule.isActive(at: utc(2026, 3, 29, 1), in: berlin))
    #expect(!schedule.isActive(at: utc(2026, 3, 29, 1) - 1, in: berlin))
  }

  @Test func aWindowWhollyInTheGapDoesNotHappenThatDay() throws {
    let schedule = try Schedule(parsing: "Sun 02:10-02:50")
    // Next Sunday, 02:10 CEST.
    #expect(
      schedule.nextTransition(after: utc(2026, 3, 28, 12), in: berlin) == utc(2026, 4, 5, 0, 10))
  }

  @Test func aWindowAcrossTheGapIsAnHourShorter() throws {
    let schedule = try Schedule(parsing: "Sun 01:00-04:00")
    #expect(
      transitions(schedule, from: utc(2026, 3, 28, 12), to: utc(2026, 3, 30, 0), in: berlin)
        == [utc(2026, 3, 29, 0), utc(2026, 3, 29, 2)])
  }

  // Berlin, Sunday 2026-10-25: 03:00 CEST goes back to 02:00 CET (01:00 UTC).
  @Test func aWindowInTheRepeatedHourStartsOnce() throws {
    let schedule = try Schedule(parsing: "Sun 02:30-03:30")
    // 02:30 CEST to 03:30 CET: two hours, active through the second 02:xx.
    #expect(
      transitions(schedule, from: utc(2026, 10, 24, 12), to: utc(2026, 10, 26, 0), in: berlin)
        == [utc(2026, 10, 25, 0, 30), utc(2026, 10, 25, 2, 30)])
    #expect(schedule.isActive(at: utc(2026, 10, 25, 1, 15), in: berlin))
  }

  @Test func anEndInTheRepeatedHourEndsAtItsFirstReading() throws {
    let schedule = try Schedule(parsing: "Sun 01:00-02:30")
    #expect(
      transitions(schedule, from: utc(2026, 10, 24, 12), to: utc(2026, 10, 26, 0), in: berlin)
        == [utc(2026, 10, 24, 23), utc(2026, 10, 25, 0, 30)])
    #expect(!schedule.isActive(at: utc(2026, 10, 25, 1, 30), in: berlin))  // 02:30 CET
  }

  @Test func aNightAcrossTheFallBackIsAnHourLonger() throws {
    let schedule = try Schedule(parsing: "Sat 22:00-07:00")
    #expect(
      transitions(schedule, from: utc(2026, 10, 24, 12), to: utc(2026, 10, 26, 0), in: berlin)
        == [utc(2026, 10, 24, 20), utc(2026, 10, 25, 6)])
  }

  // New York: 2026-03-08 02:00 EST jumps to 03:00 EDT (07:00 UTC);
  // 2026-11-01 02:00 EDT goes back to 01:00 EST (06:00 UTC).
  @Test func newYorksChanges() throws {
    let spring = try Schedule(parsing: "Sun 02:15-04:00")
    #expect(
      transitions(spring, from: utc(2026, 3, 7, 12), to: utc(2026, 3, 9, 0), in: newYork)
        == [utc(2026, 3, 8, 7), utc(2026, 3, 8, 8)])
    let fall = try Schedule(parsing: "Sun 01:30-01:45")
    #expect(
      transitions(fall, from: utc(2026, 10, 31, 12), to: utc(2026, 11, 2, 0), in: newYork)
        == [utc(2026, 11, 1, 5, 30), utc(2026, 11, 1, 5, 45)])
    #expect(!fall.isActive(at: utc(2026, 11, 1, 6, 35), in: newYork))  // 01:35 EST
  }

  /// Over the weeks of both changes, every reported flip is one (the state
  /// differs either side) and the state never flips in between.
  @Test(
    arguments: [
      ("Mon..Fri 08:00-16:00; Sat,Sun 10:00-12:00", berlin),
      ("Mon..Sun 02:30-03:30", berlin), ("Fri..Mon 22:00-02:45", berlin),
      ("Mon..Sun 01:30-02:15; Sun 00:00-01:00", newYork),
    ] as [(String, ZoneOffsets)])
  func flipsAgreeWithIsActive(text: String, zone: ZoneOffsets) throws {
    let schedule = try Schedule(parsing: text)
    for (start, end) in [
      (utc(2026, 3, 1, 0), utc(2026, 3, 31, 0)), (utc(2026, 10, 20, 0), utc(2026, 11, 8, 0)),
    ] {
      var time = start
      var state = schedule.isActive(at: time, in: zone)
      let flips = transitions(schedule, from: start, to: end, in: zone)
      for flip in flips {
        // Check every 5 minutes up to the flip.
        while time + 300_000 < flip {
          time += 300_000
          #expect(schedule.isActive(at: time, in: zone) == state, "\(text) at \(time)")
        }
        #expect(schedule.isActive(at: flip - 1, in: zone) == state)
        state.toggle()
        #expect(schedule.isActive(at: flip, in: zone) == state, "\(text) at \(flip)")
        time = flip
      }
      #expect(!flips.isEmpty)
    }
  }
}
