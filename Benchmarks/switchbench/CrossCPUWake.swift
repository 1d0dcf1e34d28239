import Glibc
import SwitchSystem
import Synchronization

/// How long a thread blocked in `read` on one CPU takes to run again when a
/// thread on another CPU writes to its socket after `gapSeconds` of quiet:
/// the machine's own wake-up latency, a floor under any request latency
/// that needs a sleeping thread on another CPU (the `get` client, the loop,
/// the log reader). On a VM whose idle CPUs halt it is the hypervisor's
/// scheduling latency, tens to hundreds of microseconds. Both threads are
/// the benchmark's own, pinned to CPUs 0 and 1.
func crossCPUWake(gapSeconds: Double, wakes: Int) throws -> LoadResult {
  guard sysconf(Int32(_SC_NPROCESSORS_ONLN)) >= 2 else {
    throw BenchError("cross-CPU wake-up: one CPU only")
  }
  var pair: [Int32] = [-1, -1]
  guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &pair) == 0 else {
    throw BenchError.errno("socketpair")
  }
  let (near, far) = (pair[0], pair[1])
  defer {
    close(near)
    close(far)
  }
  // The sleeper sends back how long after the write it ran.
  let sleeper = startJoinableThread {
    pinToCPU(1)
    var sent: UInt64 = 0
    while read(far, &sent, 8) == 8 {
      var late = nowNanoseconds() - sent
      guard write(far, &late, 8) == 8 else { return }
    }
  }
  let measured = Measured()
  let waker = startJoinableThread {
    pinToCPU(0)
    var latencies: [UInt64] = []
    for _ in 0..<wakes {
      usleep(UInt32(gapSeconds * 1e6))
      var sent = nowNanoseconds()
      var late: UInt64 = 0
      guard write(near, &sent, 8) == 8, read(near, &late, 8) == 8 else { break }
      latencies.append(late)
    }
    measured.latencies.withLock { $0 = latencies }
    shutdown(near, Int32(SHUT_RDWR))
  }
  pthread_join(waker, nil)
  pthread_join(sleeper, nil)
  let latencies = measured.latencies.withLock { $0 } ?? []
  guard latencies.count == wakes else { throw BenchError("cross-CPU wake-up: a wake failed") }
  var result = LoadResult()
  result.completed = wakes
  result.latencies = latencies.sorted()
  return result
}

/// What the waking thread hands back.
private final class Measured: Sendable {
  let latencies = Mutex<[UInt64]?>(nil)
}

/// Pins the calling thread to `cpu`. Glibc declares
/// `pthread_setaffinity_np` only under _GNU_SOURCE, so it is looked up.
private func pinToCPU(_ cpu: Int) {
  typealias SetAffinity = @convention(c) (pthread_t, Int, UnsafePointer<cpu_set_t>) -> Int32
  guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "pthread_setaffinity_np")
  else { return }
  var set = cpu_set_t()
  withUnsafeMutableBytes(of: &set) { bytes in
    bytes.initializeMemory(as: UInt8.self, repeating: 0)
    bytes[cpu / 8] |= UInt8(1 << (cpu % 8))
  }
  _ = unsafeBitCast(symbol, to: SetAffinity.self)(
    pthread_self(), MemoryLayout<cpu_set_t>.size, &set)
}
