import Glibc

/// When a process started, in clock ticks since boot: field 22 of
/// `/proc/PID/stat`. With the pid it names one process for good (a pid
/// can be reused, a pid and start time cannot), which is how polkit
/// identifies a `unix-process` subject.
public enum ProcessStartTime {
  /// The start time of `pid`, nil when it cannot be read (the process is gone).
  public static func of(pid: Int32) -> UInt64? {
    let fd = open("/proc/\(pid)/stat", O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { return nil }
    defer { close(fd) }
    var buffer = [UInt8](repeating: 0, count: 1024)
    let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
    guard n > 0 else { return nil }
    return parse(buffer[0..<n])
  }

  /// Field 22 of a stat line. The command name (field 2) is in parentheses
  /// and may hold spaces and parentheses itself, so fields are counted from
  /// the last `)`.
  public static func parse(_ line: ArraySlice<UInt8>) -> UInt64? {
    guard let close = line.lastIndex(of: UInt8(ascii: ")")) else { return nil }
    // After ") " come field 3 (state) onwards: field 22 is the 20th of them.
    let fields = line[line.index(after: close)...].split(separator: UInt8(ascii: " "))
    guard fields.count >= 20 else { return nil }
    var value: UInt64 = 0
    for byte in fields[19] {
      guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
      let (times, overflow1) = value.multipliedReportingOverflow(by: 10)
      let (sum, overflow2) = times.addingReportingOverflow(UInt64(byte - UInt8(ascii: "0")))
      if overflow1 || overflow2 { return nil }
      value = sum
    }
    return fields[19].isEmpty ? nil : value
  }
}
