/// `Schedule=` of a policy section: the weekly windows, in local wall-clock
/// time, during which the section holds (SEMANTICS.md rule 22).
///
/// Only the text and its meaning live here; when a window starts and ends on
/// a real clock is `Schedule+Next.swift`.
public struct Schedule: Equatable, Sendable {
  /// A day of the week, Monday first as in ISO 8601.
  public enum Day: Int, CaseIterable, Sendable {
    case mon, tue, wed, thu, fri, sat, sun

    public var name: String { ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"][rawValue] }

    /// The day after, Sunday wrapping to Monday.
    var next: Day { Day(rawValue: (rawValue + 1) % 7)! }
  }

  /// `DAYS HH:MM-HH:MM`: on each of `days`, from `start` to `end`.
  public struct Window: Equatable, Sendable {
    public var days: Set<Day>
    /// Minutes after local midnight.
    public var start: Int
    /// Minutes after local midnight; before `start` means the next day's.
    public var end: Int

    public init(days: Set<Day>, start: Int, end: Int) {
      self.days = days
      self.start = start
      self.end = end
    }

    /// The window runs past midnight into the next day.
    public var pastMidnight: Bool { end < start }
  }

  public var windows: [Window]

  public init(windows: [Window]) {
    self.windows = windows
  }
}

/// Why a `Schedule=` value is not a schedule: one sentence naming the bad part.
public struct ScheduleError: Error, Equatable, Sendable {
  public var message: String
}

extension Schedule {
  /// Parses `Mon..Fri 08:00-16:00; Sat,Sun 10:00-12:00`.
  ///
  /// A range may wrap over the week's end (`Fri..Mon` is Friday to Monday):
  /// the week is a cycle and the reading is unambiguous. A range from a day
  /// to itself is refused, since it could mean one day or the whole week.
  public init(parsing text: String) throws(ScheduleError) {
    let pieces = text.split(separator: ";", omittingEmptySubsequences: false)
    var windows: [Window] = []
    for (index, piece) in pieces.enumerated() {
      let window = trimmed(piece)
      if window.isEmpty {
        throw ScheduleError(
          message: pieces.count == 1
            ? "the schedule is empty: write windows such as Mon..Fri 08:00-16:00"
            : "window \(index + 1) is empty: windows are separated by a single ';'")
      }
      windows.append(try Self.window(window))
    }
    self.init(windows: windows)
  }

  private static func window(_ text: Substring) throws(ScheduleError) -> Window {
    // The hours are the last word; everything before is the days, which may
    // have blanks after their commas.
    guard let blank = text.lastIndex(where: isBlank) else {
      throw ScheduleError(
        message: "window \"\(text)\" needs days and hours, as in Mon..Fri 08:00-16:00")
    }
    let days = try Self.days(trimmed(text[..<blank]))
    let hours = text[text.index(after: blank)...]
    let ends = hours.split(separator: "-", omittingEmptySubsequences: false)
    guard ends.count == 2 else {
      throw ScheduleError(
        message: "\"\(hours)\" in window \"\(text)\" is not HH:MM-HH:MM")
    }
    let start = try minutes(ends[0], in: text)
    let end = try minutes(ends[1], in: text)
    if start == end {
      throw ScheduleError(
        message: "window \"\(text)\" starts and ends at the same time")
    }
    return Window(days: days, start: start, end: end)
  }

  private static func days(_ text: Substring) throws(ScheduleError) -> Set<Day> {
    var days = Set<Day>()
    for item in text.split(separator: ",", omittingEmptySubsequences: false) {
      let item = trimmed(item)
      guard let dots = item.firstRange(of: "..") else {
        days.insert(try day(item))
        continue
      }
      let first = try day(item[..<dots.lowerBound])
      let last = try day(item[dots.upperBound...])
      if first == last {
        throw ScheduleError(
          message: "the range \"\(item)\" starts and ends on one day: write \(first.name)")
      }
      var day = first
      days.insert(day)
      while day != last {
        day = day.next
        days.insert(day)
      }
    }
    return days
  }

  private static func day(_ text: Substring) throws(ScheduleError) -> Day {
    let name = text.lowercased()
    if let day = Day.allCases.first(where: { $0.name.lowercased() == name }) { return day }
    throw ScheduleError(
      message: text.isEmpty
        ? "a day is missing in the days of a window (two commas, or a range without an end)"
        : "\"\(text)\" is not a day: use Mon, Tue, Wed, Thu, Fri, Sat or Sun")
  }

  /// `HH:MM`, two digits each, as minutes after midnight.
  private static func minutes(_ text: Substring, in window: Substring) throws(ScheduleError)
    -> Int
  {
    let digits = Array(text.utf8)
    func value(_ range: Range<Int>) -> Int? {
      var value = 0
      for byte in digits[range] {
        guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
        value = value * 10 + Int(byte - UInt8(ascii: "0"))
      }
      return value
    }
    guard digits.count == 5, digits[2] == UInt8(ascii: ":"), let hour = value(0..<2),
      let minute = value(3..<5), hour <= 23, minute <= 59
    else {
      throw ScheduleError(
        message: "\"\(text)\" in window \"\(window)\" is not a time: use HH:MM, hours 00-23 "
          + "and minutes 00-59")
    }
    return hour * 60 + minute
  }
}

private func isBlank(_ character: Character) -> Bool { character == " " || character == "\t" }

private func trimmed(_ text: Substring) -> Substring {
  guard let first = text.firstIndex(where: { !isBlank($0) }),
    let last = text.lastIndex(where: { !isBlank($0) })
  else { return text[text.endIndex...] }
  return text[first...last]
}
