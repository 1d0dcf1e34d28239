/// RFC 3339 UTC timestamps with milliseconds, as the wire carries them:
/// `2026-11-30T03:40:00.123Z`. Pure arithmetic, no Foundation, no locale.
public enum Timestamp {
  /// Formats milliseconds since the Unix epoch.
  public static func iso8601(milliseconds ms: Int64) -> String {
    var out: [UInt8] = []
    out.reserveCapacity(24)
    append(milliseconds: ms, to: &out)
    return String(decoding: out, as: UTF8.self)
  }

  /// Appends the formatted timestamp (without quotes) to `out`.
  ///
  /// Formats into a 24-byte stack buffer and appends it once: one append per
  /// byte cost more than the arithmetic (every event and Switch object has one).
  public static func append(milliseconds ms: Int64, to out: inout [UInt8]) {
    format(milliseconds: ms) { out.append(contentsOf: $0) }
  }

  /// The same into a `JSONWriter` (every event and Switch object has one),
  /// the date copied from the writer's last one when the day is the same.
  public static func append(milliseconds ms: Int64, to w: inout JSONWriter) {
    var date = w.lastDate
    format(milliseconds: ms, date: &date) { w.append(UnsafeRawBufferPointer($0)) }
    w.lastDate = date
  }

  /// A day and its formatted date, `YYYY-MM-DD` (10 bytes): the calendar
  /// arithmetic and ten digits were most of a timestamp's cost (callgrind).
  struct DateText {
    var day: Int64 = .min
    var text: (UInt64, UInt16) = (0, 0)
  }

  private static func format(
    milliseconds ms: Int64, _ body: (UnsafeMutableBufferPointer<UInt8>) -> Void
  ) {
    var date = DateText()
    format(milliseconds: ms, date: &date, body)
  }

  /// Formats into a 24-byte stack buffer and hands it to `body`; `date`
  /// is the last day formatted, used when `ms` falls on it and replaced
  /// when not.
  private static func format(
    milliseconds ms: Int64, date: inout DateText,
    _ body: (UnsafeMutableBufferPointer<UInt8>) -> Void
  ) {
    let millis = Int((ms % 1000 + 1000) % 1000)
    let seconds = (ms - Int64(millis)) / 1000
    var days = seconds / 86_400
    var secondOfDay = seconds % 86_400
    if secondOfDay < 0 {
      secondOfDay += 86_400
      days -= 1
    }
    let second = Int(secondOfDay)
    withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 24) { text in
      let raw = UnsafeMutableRawPointer(text.baseAddress!)
      if date.day == days {
        withUnsafeBytes(of: date.text) { raw.copyMemory(from: $0.baseAddress!, byteCount: 10) }
      } else {
        let (year, month, day) = civil(fromDays: days)
        let fourDigits = max(0, Int(year))
        pair(fourDigits / 100, into: text, at: 0)
        pair(fourDigits, into: text, at: 2)
        text[4] = UInt8(ascii: "-")
        pair(month, into: text, at: 5)
        text[7] = UInt8(ascii: "-")
        pair(day, into: text, at: 8)
        date.day = days
        withUnsafeMutableBytes(of: &date.text) {
          $0.baseAddress!.copyMemory(from: raw, byteCount: 10)
        }
      }
      text[10] = UInt8(ascii: "T")
      pair(second / 3600, into: text, at: 11)
      text[13] = UInt8(ascii: ":")
      pair(second % 3600 / 60, into: text, at: 14)
      text[16] = UInt8(ascii: ":")
      pair(second % 60, into: text, at: 17)
      text[19] = UInt8(ascii: ".")
      text[20] = UInt8(ascii: "0") + UInt8(millis / 100)
      pair(millis, into: text, at: 21)
      text[23] = UInt8(ascii: "Z")
      body(text)
    }
  }

  /// The milliseconds since the Unix epoch of a timestamp exactly as
  /// `iso8601` writes it; nil for any other text (a month 13, a missing `Z`,
  /// another RFC 3339 form of the same time).
  public static func milliseconds(_ text: String) -> Int64? {
    guard let ms = milliseconds(rfc3339: text), iso8601(milliseconds: ms) == text else {
      return nil
    }
    return ms
  }

  /// The milliseconds since the Unix epoch of any RFC 3339 time a client
  /// may send: seconds with or without a fraction (of any length; what is
  /// finer than a millisecond is dropped), `Z` or an offset (`+01:00`),
  /// `T` or `t` (Python's `isoformat() + "Z"`, `date -Iseconds`). nil for
  /// anything else, a date that does not exist included, and a leap second
  /// (`:60`: switchd's clock has none to name). What switchd writes
  /// (`iso8601`) is one such time.
  public static func milliseconds(rfc3339 text: String) -> Int64? {
    let b = Array(text.utf8)
    guard b.count >= 20 else { return nil }
    func number(_ start: Int, _ width: Int) -> Int64? {
      guard start + width <= b.count else { return nil }
      var value: Int64 = 0
      for byte in b[start..<start + width] {
        guard byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") else { return nil }
        value = value * 10 + Int64(byte - UInt8(ascii: "0"))
      }
      return value
    }
    func separator(_ at: Int, _ allowed: String) -> Bool { allowed.utf8.contains(b[at]) }
    guard let year = number(0, 4), separator(4, "-"), let month = number(5, 2), separator(7, "-"),
      let day = number(8, 2), separator(10, "Tt"), let hour = number(11, 2), separator(13, ":"),
      let minute = number(14, 2), separator(16, ":"), let second = number(17, 2),
      (1...12).contains(month), (1...31).contains(day), hour <= 23, minute <= 59, second <= 59
    else { return nil }
    // The day exists in its month: it is the same day written back.
    let days = Self.days(fromCivil: year, month, day)
    guard civil(fromDays: days) == (year, Int(month), Int(day)) else { return nil }
    var at = 19
    var millis: Int64 = 0
    if b[at] == UInt8(ascii: ".") {
      at += 1
      let start = at
      while at < b.count, b[at] >= UInt8(ascii: "0") && b[at] <= UInt8(ascii: "9") {
        if at - start < 3 { millis = millis * 10 + Int64(b[at] - UInt8(ascii: "0")) }
        at += 1
      }
      guard at > start else { return nil }
      for _ in min(at - start, 3)..<3 { millis *= 10 }
    }
    guard at < b.count else { return nil }
    var offsetMinutes: Int64 = 0
    if b[at] == UInt8(ascii: "Z") || b[at] == UInt8(ascii: "z") {
      at += 1
    } else {
      guard separator(at, "+-"), let hours = number(at + 1, 2), at + 3 < b.count,
        separator(at + 3, ":"), let minutes = number(at + 4, 2), hours <= 23, minutes <= 59
      else { return nil }
      offsetMinutes = (hours * 60 + minutes) * (b[at] == UInt8(ascii: "-") ? -1 : 1)
      at += 6
    }
    guard at == b.count else { return nil }
    let local = ((days * 24 + hour) * 60 + minute) * 60 + second
    return (local - offsetMinutes * 60) * 1000 + millis
  }

  /// Howard Hinnant's civil-to-days algorithm, the inverse of `civil(fromDays:)`.
  public static func days(fromCivil year: Int64, _ month: Int64, _ day: Int64) -> Int64 {
    let y = month <= 2 ? year - 1 : year
    let era = (y >= 0 ? y : y - 399) / 400
    let yoe = y - era * 400
    let doy = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
    return era * 146_097 + doe - 719_468
  }

  /// Howard Hinnant's days-to-civil algorithm (proleptic Gregorian).
  public static func civil(fromDays z0: Int64) -> (Int64, Int, Int) {
    let z = z0 + 719_468
    let era = (z >= 0 ? z : z - 146_096) / 146_097
    let doe = z - era * 146_097
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
    let y = yoe + era * 400
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
    let mp = (5 * doy + 2) / 153
    let d = Int(doy - (153 * mp + 2) / 5 + 1)
    let m = Int(mp < 10 ? mp + 3 : mp - 9)
    return (m <= 2 ? y + 1 : y, m, d)
  }

  /// Writes the last two decimal digits of `value` (not negative) at
  /// `offset`, from a table of the hundred pairs: a division and a
  /// remainder per digit cost more than the rest of a timestamp (every
  /// answer to a write and every event has one, callgrind).
  private static func pair(
    _ value: Int, into text: UnsafeMutableBufferPointer<UInt8>, at offset: Int
  ) {
    let pairs: StaticString = """
      00010203040506070809101112131415161718192021222324252627282930313233343536373839\
      40414243444546474849505152535455565758596061626364656667686970717273747576777879\
      8081828384858687888990919293949596979899
      """
    let index = value % 100 * 2
    text[offset] = pairs.utf8Start[index]
    text[offset + 1] = pairs.utf8Start[index + 1]
  }
}
