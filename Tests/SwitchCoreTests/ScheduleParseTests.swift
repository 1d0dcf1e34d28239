import Testing

@testable import SwitchCore

private typealias Day = Schedule.Day

private func window(_ days: Set<Day>, _ start: String, _ end: String) -> Schedule.Window {
  func minutes(_ text: String) -> Int {
    let parts = text.split(separator: ":").map { Int($0)! }
    return parts[0] * 60 + parts[1]
  }
  return Schedule.Window(days: days, start: minutes(start), end: minutes(end))
}

private let weekdays: Set<Day> = [.mon, .tue, .wed, .thu, .fri]

struct ScheduleParseTests {
  @Test(arguments: [
    (
      "Mon..Fri 08:00-16:00; Sat,Sun 10:00-12:00",
      [window(weekdays, "08:00", "16:00"), window([.sat, .sun], "10:00", "12:00")]
    ),
    ("Mon..Wed,Sat 00:00-23:59", [window([.mon, .tue, .wed, .sat], "00:00", "23:59")]),
    // A range wraps over the week's end.
    ("Fri..Mon 22:00-07:00", [window([.fri, .sat, .sun, .mon], "22:00", "07:00")]),
    ("Sat..Sun 09:00-10:00", [window([.sat, .sun], "09:00", "10:00")]),
    ("Sun..Mon 09:00-10:00", [window([.sun, .mon], "09:00", "10:00")]),
    // Day names in any case, blanks after commas and around windows.
    (
      "mon, WED 08:00-09:00 ;  Tue\t12:30-13:00",
      [
        window([.mon, .wed], "08:00", "09:00"), window([.tue], "12:30", "13:00"),
      ]
    ),
    ("Sun 23:00-00:00", [window([.sun], "23:00", "00:00")]),
    ("Mon,Mon 08:00-09:00", [window([.mon], "08:00", "09:00")]),
  ])
  func parses(text: String, windows: [Schedule.Window]) throws {
    #expect(try Schedule(parsing: text) == Schedule(windows: windows))
  }

  @Test func aWindowEndingBeforeItsStartRunsPastMidnight() throws {
    let schedule = try Schedule(parsing: "Mon..Fri 22:00-07:00; Mon 08:00-09:00")
    #expect(schedule.windows.map(\.pastMidnight) == [true, false])
  }

  @Test(arguments: [
    ("", "the schedule is empty: write windows such as Mon..Fri 08:00-16:00"),
    ("Mon 08:00-16:00;", "window 2 is empty: windows are separated by a single ';'"),
    (
      "Mon 08:00-16:00;;Tue 08:00-09:00", "window 2 is empty: windows are separated by a single ';'"
    ),
    ("Mon", "window \"Mon\" needs days and hours, as in Mon..Fri 08:00-16:00"),
    ("08:00-09:00", "window \"08:00-09:00\" needs days and hours, as in Mon..Fri 08:00-16:00"),
    ("Mo 08:00-09:00", "\"Mo\" is not a day: use Mon, Tue, Wed, Thu, Fri, Sat or Sun"),
    ("Monday 08:00-09:00", "\"Monday\" is not a day: use Mon, Tue, Wed, Thu, Fri, Sat or Sun"),
    ("Mon..Mon 08:00-09:00", "the range \"Mon..Mon\" starts and ends on one day: write Mon"),
    (
      "Mon,,Tue 08:00-09:00",
      "a day is missing in the days of a window (two commas, or a range without an end)"
    ),
    (
      "Mon.. 08:00-09:00",
      "a day is missing in the days of a window (two commas, or a range without an end)"
    ),
    (
      "Mon 8:00-09:00",
      "\"8:00\" in window \"Mon 8:00-09:00\" is not a time: use HH:MM, hours 00-23 and "
        + "minutes 00-59"
    ),
    (
      "Mon 24:00-01:00",
      "\"24:00\" in window \"Mon 24:00-01:00\" is not a time: use HH:MM, hours 00-23 and "
        + "minutes 00-59"
    ),
    (
      "Mon 08:00-09:60",
      "\"09:60\" in window \"Mon 08:00-09:60\" is not a time: use HH:MM, hours 00-23 and "
        + "minutes 00-59"
    ),
    ("Mon 08:00", "\"08:00\" in window \"Mon 08:00\" is not HH:MM-HH:MM"),
    (
      "Mon 08:00-09:00-10:00",
      "\"08:00-09:00-10:00\" in window \"Mon 08:00-09:00-10:00\" is not HH:MM-HH:MM"
    ),
    ("Mon 08:00-08:00", "window \"Mon 08:00-08:00\" starts and ends at the same time"),
  ])
  func refuses(text: String, message: String) {
    #expect(throws: ScheduleError(message: message)) { try Schedule(parsing: text) }
  }
}
