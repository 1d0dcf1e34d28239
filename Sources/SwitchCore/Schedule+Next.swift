/// The local time zone, as the one thing the schedule needs of it: the
/// offset from UTC in force at an instant.
///
/// It is passed in rather than read here so that the rules stay pure (no
/// `TZ` or `/etc/localtime` read inside them) and tests can name any zone;
/// SwitchCore has no Foundation, so the daemon builds this from the zone it
/// uses (a `TimeZone`'s `secondsFromGMT(for:)`, or tzdata read directly).
public struct ZoneOffsets: Sendable {
  /// Seconds east of UTC at an instant given in seconds since the epoch.
  public var secondsEast: @Sendable (Int64) -> Int64

  public init(secondsEast: @escaping @Sendable (Int64) -> Int64) {
    self.secondsEast = secondsEast
  }

  /// A zone without daylight saving.
  public static func fixed(_ seconds: Int64) -> ZoneOffsets { ZoneOffsets { _ in seconds } }

  /// The first instant (seconds since the epoch) whose local time reads
  /// `wall` (local seconds since the epoch) or later: a time the
  /// spring-forward gap skips is the gap's end, one the fall-back hour
  /// repeats is its first reading. The one way a local time becomes an
  /// instant: a schedule's windows and switchctl's `--until HH:MM`.
  public func firstInstant(readingLocal wall: Int64) -> Int64 { resolve(wall: wall, in: self) }

  /// The local day (days since 1970-01-01 on this zone's clock) of an
  /// instant in milliseconds since the epoch.
  public func localDay(ofMilliseconds milliseconds: Int64) -> Int64 {
    SwitchCore.localDay(of: milliseconds, in: self)
  }
}

// When the windows start and end on a real clock.
//
// A window's start and its end each fall at the first instant the local clock
// reads that time or later on that day. So a time that the spring-forward gap
// skips falls at the end of the gap (Berlin 02:30 on 2026-03-29 is 03:00
// CEST; a window that lies wholly in the gap does not happen that day), and a
// time that the fall-back hour repeats falls at its first reading (02:30 on
// 2026-10-25 is 02:30 CEST), so each window starts and ends once a day.
extension Schedule {
  /// Whether a window is open at `milliseconds` since the epoch; a window
  /// includes its start and excludes its end.
  public func isActive(at milliseconds: Int64, in zone: ZoneOffsets) -> Bool {
    let day = localDay(of: milliseconds, in: zone)
    return intervals(days: (day - 1)...(day + 1), in: zone).contains {
      $0.start * 1000 <= milliseconds && milliseconds < $0.end * 1000
    }
  }

  /// The next instant after `milliseconds` at which `isActive` flips, or nil
  /// if it never does (the windows cover the whole week). Windows that
  /// overlap or touch are one stretch: no flip where one hands over to the next.
  public func nextTransition(after milliseconds: Int64, in zone: ZoneOffsets) -> Int64? {
    let day = localDay(of: milliseconds, in: zone)
    // A flip, if there is one, comes within a week and a day; the stretches
    // are complete up to the start of the first day not read.
    let last = day + 9
    let complete = resolve(wall: (last + 1) * secondsPerDay, in: zone)
    for stretch in merged(intervals(days: (day - 1)...last, in: zone)) {
      for edge in [stretch.start, stretch.end] where edge * 1000 > milliseconds {
        return edge < complete ? edge * 1000 : nil
      }
    }
    return nil
  }

  /// The windows opened on local days `days` (days since 1970-01-01), as
  /// instants in seconds; empty ones (wholly in a gap) are left out.
  func intervals(days: ClosedRange<Int64>, in zone: ZoneOffsets) -> [(start: Int64, end: Int64)] {
    var intervals: [(start: Int64, end: Int64)] = []
    for day in days {
      let weekday = Self.weekday(ofLocalDay: day)
      for window in windows where window.days.contains(weekday) {
        let midnight = day * secondsPerDay
        let endDay = window.pastMidnight ? midnight + secondsPerDay : midnight
        let start = resolve(wall: midnight + Int64(window.start) * 60, in: zone)
        let end = resolve(wall: endDay + Int64(window.end) * 60, in: zone)
        if start < end { intervals.append((start, end)) }
      }
    }
    return intervals
  }

  /// 1970-01-01 was a Thursday.
  static func weekday(ofLocalDay day: Int64) -> Day {
    Day(rawValue: Int(((day + 3) % 7 + 7) % 7))!
  }
}

private let secondsPerDay: Int64 = 86_400

private func floorDivide(_ value: Int64, _ divisor: Int64) -> Int64 {
  let quotient = value / divisor
  return value % divisor < 0 ? quotient - 1 : quotient
}

private func localDay(of milliseconds: Int64, in zone: ZoneOffsets) -> Int64 {
  let seconds = floorDivide(milliseconds, 1000)
  return floorDivide(seconds + zone.secondsEast(seconds), secondsPerDay)
}

/// The first instant whose local time reads `wall` (local seconds since the
/// epoch) or later. Offsets stay within ±14 h, so the offsets in force 14 h
/// either side cover it, unless a zone changes twice within 28 h.
private func resolve(wall: Int64, in zone: ZoneOffsets) -> Int64 {
  let reach: Int64 = 14 * 3600
  let offsets = [zone.secondsEast(wall - reach), zone.secondsEast(wall + reach)]
  // An instant at which the clock reads exactly `wall`; the earliest one is
  // the first reading of a repeated time.
  let exact = offsets.map { wall - $0 }.filter { wall - zone.secondsEast($0) == $0 }
  if let first = exact.min() { return first }
  // In a gap: the clock jumps past `wall` at the change of offset, found by
  // bisection between the two readings that miss it.
  let before = offsets[0]
  var low = wall - offsets[1]
  var high = wall - before
  while high - low > 1 {
    let middle = low + (high - low) / 2
    if zone.secondsEast(middle) == before { low = middle } else { high = middle }
  }
  return high
}

/// Sorted, with overlapping or touching intervals joined.
private func merged(_ intervals: [(start: Int64, end: Int64)]) -> [(start: Int64, end: Int64)] {
  var result: [(start: Int64, end: Int64)] = []
  for interval in intervals.sorted(by: { $0.start < $1.start }) {
    if let last = result.last, interval.start <= last.end {
      result[result.count - 1].end = max(last.end, interval.end)
    } else {
      result.append(interval)
    }
  }
  return result
}
