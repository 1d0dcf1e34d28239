import Glibc

/// How long one durable flush takes on this disk when it comes after the
/// same idle time as the commit in each fan-out round: a floor under
/// switchd's fan-out figure that Redis pub/sub does not pay.
///
/// It appends 1 KiB (a WAL frame's size) to a file in the benchmark's
/// directory and `fdatasync`s it, after sleeping `gapSeconds`. On the VM
/// these figures were taken on, a flush right after another takes ~0.1 ms
/// and one after 3 ms of quiet 0.5-0.9 ms (the host's side of a virtual
/// disk and the wake-up of an idle virtual CPU), which is most of a Redis
/// fan-out to 1,000 subscribers.
func flushAfterIdle(directory: String, gapSeconds: Double, flushes: Int) throws -> LoadResult {
  let path = "\(directory)/flush-probe"
  let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
  if fd < 0 { throw BenchError.errno("open \(path)") }
  defer {
    close(fd)
    unlink(path)
  }
  let frame = [UInt8](repeating: 0x5A, count: 1024)
  var result = LoadResult()
  var offset: off_t = 0
  for _ in 0..<flushes {
    usleep(UInt32(gapSeconds * 1e6))
    let started = nowNanoseconds()
    let written = frame.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, offset) }
    guard written == frame.count, fdatasync(fd) == 0 else { throw BenchError.errno("flush probe") }
    result.latencies.append(nowNanoseconds() - started)
    offset += off_t(frame.count)
  }
  result.completed = flushes
  result.latencies.sort()
  return result
}
