import Glibc
import SwitchProtocol

/// `--for SPAN`, `--until TIME` and `--confirm SPAN` (SEMANTICS.md rules
/// 20–22) as a person writes them. Spans as systemd writes them (`90s`,
/// `15m`, `1h 30m`, `1h30m`, `2d`, `1w`; a bare number is seconds); times as
/// `HH:MM` (the next such local time) or a full timestamp (`2026-12-02T16:00:00Z`,
/// or local `2026-12-02 16:00`).
enum TimeArgument {
  /// Why a span or time is not one: a sentence for `UsageError`.
  struct Problem: Error {
    var message: String
  }

  /// Seconds of a span.
  static func span(_ text: String) -> Result<Int64, Problem> {
    let units: [(names: [String], seconds: Int64)] = [
      (["s", "sec", "secs", "second", "seconds"], 1),
      (["m", "min", "mins", "minute", "minutes"], 60),
      (["h", "hr", "hrs", "hour", "hours"], 3600),
      (["d", "day", "days"], 86_400),
      (["w", "week", "weeks"], 604_800),
    ]
    var total: Int64 = 0
    var rest = Substring(text.lowercased())
    var parts = 0
    while true {
      rest = rest.drop { $0 == " " }
      if rest.isEmpty { break }
      let digits = rest.prefix { $0.isASCII && $0.isNumber }
      guard !digits.isEmpty, let number = Int64(digits) else {
        return .failure(
          Problem(message: "'\(text)' is not a time span (write 90s, 15m, 1h 30m or 2d)"))
      }
      rest = rest.dropFirst(digits.count).drop { $0 == " " }
      let word = rest.prefix { $0.isLetter }
      rest = rest.dropFirst(word.count)
      let unit: Int64
      if word.isEmpty {
        unit = 1
      } else if let found = units.first(where: { $0.names.contains(String(word)) }) {
        unit = found.seconds
      } else {
        return .failure(
          Problem(message: "'\(word)' in '\(text)' is not a unit of time (s, m, h, d or w)"))
      }
      let (product, overflow) = number.multipliedReportingOverflow(by: unit)
      guard !overflow, total <= Int64.max - product else {
        return .failure(Problem(message: "'\(text)' is too long a time span"))
      }
      total += product
      parts += 1
    }
    guard parts > 0, total > 0 else {
      return .failure(Problem(message: "a time span must be longer than 0 s"))
    }
    return .success(total)
  }

  /// Milliseconds since the epoch of a time, after `now` (milliseconds).
  static func time(_ text: String, now: Int64) -> Result<Int64, Problem> {
    let trimmed = text.trimmingCharacters(in: " ")
    // A full timestamp, as the daemon reads one: 2026-12-02T16:00:00Z, +01:00, ….
    if let exact = Timestamp.milliseconds(rfc3339: trimmed) { return .success(exact) }
    var date: (Int32, Int32, Int32)?
    var clock = trimmed
    if trimmed.count == 16, trimmed.dropFirst(10).first == " " || trimmed.dropFirst(10).first == "T"
    {
      let day = trimmed.prefix(10).split(separator: "-").compactMap { Int32($0) }
      guard day.count == 3 else { return .failure(Problem(message: notATime(text))) }
      date = (day[0], day[1], day[2])
      clock = String(trimmed.suffix(5))
    }
    let fields = clock.split(separator: ":", omittingEmptySubsequences: false)
    guard clock.count == 5, fields.count == 2, let hour = Int32(fields[0]),
      let minute = Int32(fields[1]), (0...23).contains(hour), (0...59).contains(minute)
    else { return .failure(Problem(message: notATime(text))) }
    var now = time_t(now / 1000)
    var parts = tm()
    localtime_r(&now, &parts)
    if let date {
      parts.tm_year = date.0 - 1900
      parts.tm_mon = date.1 - 1
      parts.tm_mday = date.2
    }
    parts.tm_hour = hour
    parts.tm_min = minute
    parts.tm_sec = 0
    parts.tm_isdst = -1
    var seconds = Int64(mktime(&parts))
    if date == nil && seconds <= Int64(now) {
      // HH:MM already passed today: tomorrow's.
      parts.tm_mday += 1
      parts.tm_isdst = -1
      seconds = Int64(mktime(&parts))
    }
    return .success(seconds * 1000)
  }

  private static func notATime(_ text: String) -> String {
    "'\(text)' is not a time (write HH:MM, 2026-12-02 16:00 or 2026-12-02T16:00:00Z)"
  }
}

extension String {
  fileprivate func trimmingCharacters(in character: Character) -> String {
    String(drop { $0 == character }.reversed().drop { $0 == character }.reversed())
  }
}
