import Glibc
import SwitchSystem
import Testing

/// `/proc/PID/stat` field 22, with the pid the polkit subject that a reused
/// pid cannot pass for.
@Suite struct ProcessStartTimeTests {
  static func parse(_ line: String) -> UInt64? {
    ProcessStartTime.parse(ArraySlice(Array(line.utf8)))
  }

  @Test func field22IsCountedFromTheLastParenthesis() {
    let rest = "S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 987654 20 21"
    #expect(Self.parse("42 (switchctl) " + rest) == 987_654)
    // A command name may hold spaces and parentheses.
    #expect(Self.parse("42 (a b) (c)) " + rest) == 987_654)
  }

  @Test func aShortOrGarbledLineHasNone() {
    #expect(Self.parse("42 (x) S 1 2 3") == nil)
    #expect(Self.parse("no parenthesis here") == nil)
    #expect(Self.parse("42 (x) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 12x4 20") == nil)
  }

  @Test func thisProcessHasOneAndItDoesNotChange() {
    let first = ProcessStartTime.of(pid: getpid())
    #expect(first != nil)
    #expect(ProcessStartTime.of(pid: getpid()) == first)
    #expect(ProcessStartTime.of(pid: Int32.max) == nil)
  }
}
