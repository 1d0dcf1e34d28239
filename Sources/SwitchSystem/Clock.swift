import Glibc

/// Seconds on the monotonic clock: for deadlines and durations, never for
/// times shown to people.
public func monotonicSeconds() -> Double {
  var ts = timespec()
  clock_gettime(CLOCK_MONOTONIC, &ts)
  return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
}

/// Milliseconds since the Unix epoch on the wall clock this process reads:
/// for change times and deadlines.
public func wallClockMilliseconds() -> Int64 {
  var ts = timespec()
  clock_gettime(CLOCK_REALTIME, &ts)
  return Int64(ts.tv_sec) * 1000 + Int64(ts.tv_nsec) / 1_000_000
}

/// Seconds east of UTC in the machine's local time zone at an instant
/// (seconds since the epoch), with its daylight-saving rules: `TZ` when
/// set, else /etc/localtime, looked at again (`tzset`) each time.
public func localOffsetSeconds(at seconds: Int64) -> Int64 {
  tzset()
  var time = time_t(seconds)
  var parts = tm()
  guard localtime_r(&time, &parts) != nil else { return 0 }
  return Int64(parts.tm_gmtoff)
}
