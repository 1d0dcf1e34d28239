import Glibc
import SwitchCore
import SwitchProtocol
import SwitchSystem

extension ZoneOffsets {
  /// The machine's local time zone (`TZ`, else /etc/localtime), as the
  /// daemon reads it for schedules.
  static let local = ZoneOffsets { localOffsetSeconds(at: $0) }
}

/// `--for SPAN`, `--until TIME` and `--confirm SPAN` (SEMANTICS.md rules
/// 20–22) as a person writes them. Spans as systemd writes them
/// (systemd.time(7): `90s`, `15m`, `1h 30m`, `1h30m`, `1.5h`, `2d`, `1w`,
/// `1M` a month, `500ms`; units are case-sensitive, as there: `m` is a
/// minute and `M` a month; a bare number is seconds), rounded up to whole
/// seconds; times as `HH:MM[:SS]` (the next such local time), a local
/// `2026-12-02 16:00[:00]` (or with `T`), or a timestamp with its zone
/// (`2026-12-02T16:00:00Z`, `+01:00`).
enum TimeArgument {
  /// Why a span or time is not one: a sentence for `UsageError`.
  struct Problem: Error {
    var message: String
  }

  /// systemd's units of a span, in microseconds, its precision
  /// (`parse_time` in systemd's time-util.c; a month is 30.44 days, a year
  /// 365.25, longer than `--for` may be). `secs`, `mins` and `hrs` are
  /// switchctl's own, kept from before.
  private static let units: [(names: [String], microseconds: Int64)] = [
    (["s", "sec", "secs", "second", "seconds"], 1_000_000),
    (["m", "min", "mins", "minute", "minutes"], 60_000_000),
    (["h", "hr", "hrs", "hour", "hours"], 3_600_000_000),
    (["d", "day", "days"], 86_400_000_000),
    (["w", "week", "weeks"], 604_800_000_000),
    (["M", "month", "months"], 2_629_800_000_000),
    (["y", "year", "years"], 31_557_600_000_000),
    (["ms", "msec"], 1000),
    (["us", "usec", "µs", "μs"], 1),
  ]

  /// Seconds of a span, rounded up (`500ms` is 1 s: at least what was
  /// asked). As systemd reads it: parts in any order, each a number (a
  /// `+`, digits, a fraction) and a unit, spaces or tabs between; digits
  /// past a microsecond are dropped.
  static func span(_ text: String) -> Result<Int64, Problem> {
    let notASpan = Problem(message: "'\(text)' is not a time span (write 90s, 15m, 1h 30m or 2d)")
    let tooLong = Problem(message: "'\(text)' is too long a time span")
    let isBlank = { (c: Character) in c == " " || c == "\t" }
    var total: Int64 = 0
    var rest = Substring(text)
    var parts = 0
    while true {
      rest = rest.drop(while: isBlank)
      if rest.isEmpty { break }
      if rest.first == "+" { rest = rest.dropFirst() }
      let whole = rest.prefix { $0.isASCII && $0.isNumber }
      rest = rest.dropFirst(whole.count)
      var fraction: Substring = ""
      if rest.first == "." {
        let digits = rest.dropFirst().prefix { $0.isASCII && $0.isNumber }
        // A point needs digits after it.
        guard !digits.isEmpty else { return .failure(notASpan) }
        fraction = digits.prefix(6)
        rest = rest.dropFirst(1 + digits.count)
      }
      guard !(whole.isEmpty && fraction.isEmpty), let number = whole.isEmpty ? 0 : Int64(whole)
      else { return .failure(notASpan) }
      rest = rest.drop(while: isBlank)
      let word = rest.prefix { $0.isLetter }
      rest = rest.dropFirst(word.count)
      let unit: Int64
      if word.isEmpty {
        unit = 1_000_000
      } else if let found = units.first(where: { $0.names.contains(String(word)) }) {
        unit = found.microseconds
      } else {
        return .failure(
          Problem(message: "'\(word)' in '\(text)' is not a unit of time (s, m, h, d, w, M or y)"))
      }
      let (product, overflow) = number.multipliedReportingOverflow(by: unit)
      guard !overflow, total <= Int64.max - product else { return .failure(tooLong) }
      total += product
      if !fraction.isEmpty {
        // unit × 0.fraction: the digits over 10^count (at most 10^6; a unit
        // is at most ~3.2e13, so no product overflows).
        var scale: Int64 = 1
        for _ in fraction { scale *= 10 }
        let part =
          unit / scale * (Int64(fraction) ?? 0) + unit % scale * (Int64(fraction) ?? 0) / scale
        guard total <= Int64.max - part else { return .failure(tooLong) }
        total += part
      }
      parts += 1
    }
    guard parts > 0 else { return .failure(notASpan) }  // empty, or blanks only
    guard total > 0 else {
      return .failure(Problem(message: "a time span must be longer than 0 s"))
    }
    return .success(total / 1_000_000 + (total % 1_000_000 == 0 ? 0 : 1))
  }

  /// Milliseconds since the epoch of a time, after `now` (milliseconds).
  static func time(
    _ text: String, now: Int64, zone: ZoneOffsets = .local
  ) -> Result<Int64, Problem> {
    let trimmed = text.trimmingCharacters(in: " ")
    // A timestamp with its zone, as the daemon reads one: 2026-12-02T16:00:00Z, +01:00, ….
    if let exact = Timestamp.milliseconds(rfc3339: trimmed) { return .success(exact) }
    let problem = Problem(message: notATime(text))
    // Else local: [YYYY-MM-DD( |T)]HH:MM[:SS].
    var date: (year: Int32, month: Int32, day: Int32)?
    var clock = Substring(trimmed)
    if trimmed.count > 10, let separator = trimmed.dropFirst(10).first,
      separator == " " || separator == "T"
    {
      let day = trimmed.prefix(10).split(separator: "-", omittingEmptySubsequences: false)
      guard day.count == 3, day[0].count == 4, day[1].count == 2, day[2].count == 2,
        let year = digits(day[0]), let month = digits(day[1]), let dayOfMonth = digits(day[2])
      else { return .failure(problem) }
      date = (year, month, dayOfMonth)
      clock = trimmed.dropFirst(11)
    }
    let fields = clock.split(separator: ":", omittingEmptySubsequences: false)
    guard fields.count == 2 || fields.count == 3, fields.allSatisfy({ $0.count == 2 }),
      let hour = digits(fields[0]), let minute = digits(fields[1]),
      let second = fields.count == 3 ? digits(fields[2]) : 0,
      (0...23).contains(hour), (0...59).contains(minute), (0...59).contains(second)
    else { return .failure(problem) }
    // The local day it names (today's, without a date: tomorrow's once
    // today's first reading of it has passed, also in the repeated autumn
    // hour whose second reading is still to come), and the instant its
    // clock first reads that time, as a `Schedule=` window's edge is found:
    // a time the spring-forward gap skips is the gap's end, one the
    // fall-back hour repeats its first reading (mktime took 02:30 in the
    // gap as 03:30, and either reading of a repeated one; an audit).
    var day = zone.localDay(ofMilliseconds: now)
    if let date {
      day = Timestamp.days(fromCivil: Int64(date.year), Int64(date.month), Int64(date.day))
      // A day that does not exist (February 30) is refused, not moved.
      let named = Timestamp.civil(fromDays: day)
      guard named.0 == Int64(date.year), named.1 == Int(date.month), named.2 == Int(date.day)
      else { return .failure(problem) }
    }
    let secondOfDay = (Int64(hour) * 60 + Int64(minute)) * 60 + Int64(second)
    var seconds = zone.firstInstant(readingLocal: day * 86_400 + secondOfDay)
    if date == nil && seconds * 1000 <= now {
      // HH:MM already passed today: tomorrow's.
      seconds = zone.firstInstant(readingLocal: (day + 1) * 86_400 + secondOfDay)
    }
    return .success(seconds * 1000)
  }

  /// The number written in `text`'s ASCII digits alone (`Int32("+8")` is 8).
  private static func digits(_ text: Substring) -> Int32? {
    text.allSatisfy { $0.isASCII && $0.isNumber } ? Int32(text) : nil
  }

  private static func notATime(_ text: String) -> String {
    "'\(text)' is not a time (write HH:MM, 2026-12-02 16:00:00 or 2026-12-02T16:00:00Z)"
  }
}

extension String {
  fileprivate func trimmingCharacters(in character: Character) -> String {
    String(drop { $0 == character }.reversed().drop { $0 == character }.reversed())
  }
}
