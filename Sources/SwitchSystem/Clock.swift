import Glibc

/// Seconds on the monotonic clock: for deadlines and durations, never for
/// times shown to people.
public func monotonicSeconds() -> Double {
  var ts = timespec()
  clock_gettime(CLOCK_MONOTONIC, &ts)
  return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
}
