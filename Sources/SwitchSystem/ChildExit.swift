import CShim
import Glibc

/// Waiting for a child program to exit without reaping it: its process
/// group id stays taken until it is reaped, so the group can be killed
/// after (`ApplyProcess`, `ReadBackProcess`).
enum ChildExit {
  /// Waits until child `pid` has exited (true) or `deadline` (monotonic
  /// seconds) passes (false). Meanwhile `output`, when not -1, is read as
  /// it comes with `read` (which returns false once it is closed), so that
  /// a program that writes a lot never blocks on a full pipe.
  static func wait(
    _ pid: Int32, until deadline: Double, draining output: Int32 = -1,
    _ read: (Int32) -> Bool = { _ in false }
  ) -> Bool {
    let exitFD = shim_pidfd_open(pid)
    defer { if exitFD >= 0 { _ = close(exitFD) } }
    var outputOpen = output >= 0
    var exitReadable = exitFD
    while true {
      let exited = shim_child_exited(pid)
      if exited == 1 { return true }
      // Not a child to wait for (reaped elsewhere): its exit cannot be
      // seen, and a readable pidfd would make every poll return at once.
      if exited < 0 { exitReadable = -1 }
      let remaining = Int64(((deadline - monotonicSeconds()) * 1000).rounded(.up))
      if remaining <= 0 { return false }
      // poll leaves an entry of fd -1 alone. Without a pidfd (an old
      // kernel) the exit is looked for every 10 ms.
      var polled = [
        pollfd(fd: outputOpen ? output : -1, events: Int16(POLLIN), revents: 0),
        pollfd(fd: exitReadable, events: Int16(POLLIN), revents: 0),
      ]
      let wait = exitReadable >= 0 ? remaining : min(remaining, 10)
      let ready = polled.withUnsafeMutableBufferPointer { buffer in
        poll(buffer.baseAddress, nfds_t(buffer.count), Int32(min(wait, Int64(Int32.max))))
      }
      if ready > 0, outputOpen, polled[0].revents != 0 { outputOpen = read(output) }
    }
  }
}
