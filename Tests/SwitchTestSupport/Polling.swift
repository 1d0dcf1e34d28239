import Glibc
import SwitchSystem

/// Polls `condition` every 10 ms until it holds (true) or `seconds` pass
/// (false): the one way a test waits for something another thread or
/// process does. Deadlines are generous, never a measurement.
public func pollUntil(seconds: Double = 10, _ condition: () throws -> Bool) rethrows -> Bool {
  let deadline = monotonicSeconds() + seconds
  while true {
    if try condition() { return true }
    if monotonicSeconds() > deadline { return false }
    usleep(10_000)  // poll interval
  }
}
