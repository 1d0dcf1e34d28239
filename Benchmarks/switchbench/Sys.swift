import Glibc
import SwitchSystem
import Synchronization

// Small wrappers over Glibc for the benchmark: clocks, Unix sockets, files,
// threads. Everything here is blocking and bounded by the caller's deadlines.

/// Monotonic time in nanoseconds.
func nowNanoseconds() -> UInt64 {
  var ts = timespec()
  clock_gettime(CLOCK_MONOTONIC, &ts)
  return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
}

/// Monotonic time in seconds.
func nowSeconds() -> Double { Double(nowNanoseconds()) / 1e9 }

/// Sleeps for `seconds` (bounded, EINTR-safe enough for a benchmark).
func sleepSeconds(_ seconds: Double) {
  guard seconds > 0 else { return }
  var ts = timespec(tv_sec: Int(seconds), tv_nsec: Int((seconds - Double(Int(seconds))) * 1e9))
  var rest = timespec()
  while nanosleep(&ts, &rest) != 0 && errno == EINTR { ts = rest }
}

/// A failure of the benchmark itself (not a slow result).
struct BenchError: Error, CustomStringConvertible {
  var description: String
  init(_ description: String) { self.description = description }

  /// The last errno, named after `call`.
  static func errno(_ call: String) -> BenchError {
    BenchError("\(call): \(String(cString: strerror(Glibc.errno)))")
  }
}

// MARK: Unix sockets

/// Connects a blocking stream socket to `path`; -1 with errno on failure.
/// Connects to `path` as `uid` (gid the same number): the daemon's
/// SO_PEERCRED then says `uid`. Root only. It switches the effective ids of
/// the whole process for the moment of `connect`, so call it before any
/// client thread starts, as `runClosedLoop` does.
func connectUnix(_ path: String, asUID uid: UInt32) -> Int32 {
  guard setegid(uid) == 0 else { return -1 }
  guard seteuid(uid) == 0 else {
    _ = setegid(0)
    return -1
  }
  let fd = connectUnix(path)
  let saved = errno
  _ = seteuid(0)
  _ = setegid(0)
  errno = saved
  return fd
}

func connectUnix(_ path: String) -> Int32 {
  guard let address = try? UnixSocketAddress(path) else {
    errno = ENAMETOOLONG
    return -1
  }
  let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue | SOCK_CLOEXEC.rawValue), 0)
  if fd < 0 { return -1 }
  let rc = address.withSockaddr { address, length in
    retryingEINTR { Glibc.connect(fd, address, length) }
  }
  if rc != 0 {
    let saved = errno
    close(fd)
    errno = saved
    return -1
  }
  return fd
}

/// Binds and listens on `path` (removing a stale file first).
func listenUnix(_ path: String, backlog: Int32 = 1024) throws -> Int32 {
  guard let address = try? UnixSocketAddress(path) else {
    throw BenchError("path too long: \(path)")
  }
  unlink(path)
  let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue | SOCK_CLOEXEC.rawValue), 0)
  if fd < 0 { throw BenchError.errno("socket") }
  let rc = address.withSockaddr { bind(fd, $0, $1) }
  if rc != 0 {
    close(fd)
    throw BenchError.errno("bind \(path)")
  }
  if listen(fd, backlog) != 0 {
    close(fd)
    throw BenchError.errno("listen")
  }
  return fd
}

func setNonBlocking(_ fd: Int32) {
  let flags = fcntl(fd, F_GETFL)
  _ = fcntl(fd, F_SETFL, flags | O_NONBLOCK)
}

/// Sends all of `bytes` on a blocking socket; false when the peer is gone.
func sendAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Bool {
  var sent = 0
  while sent < bytes.count {
    let n = retryingEINTR {
      send(fd, bytes.baseAddress! + sent, bytes.count - sent, Int32(MSG_NOSIGNAL))
    }
    if n <= 0 { return false }
    sent += n
  }
  return true
}

func sendAll(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
  bytes.withUnsafeBytes { sendAll(fd, $0) }
}

/// Counts `\n` in a buffer (memchr-based).
func countNewlines(_ raw: UnsafeRawBufferPointer, terminator: UInt8 = 0x0A) -> Int {
  guard var p = raw.baseAddress else { return 0 }
  let end = p + raw.count
  var count = 0
  while p < end, let hit = memchr(p, Int32(terminator), end - p) {
    count += 1
    p = UnsafeRawPointer(hit) + 1
  }
  return count
}

/// Reads from a blocking socket until `lines` newlines arrived or `deadline`
/// (monotonic ns) passes; returns the bytes, or nil on EOF/timeout.
func readLines(_ fd: Int32, lines: Int, deadline: UInt64) -> [UInt8]? {
  var out: [UInt8] = []
  var buffer = [UInt8](repeating: 0, count: 65_536)
  return readLines(fd, lines: lines, deadline: deadline, into: &out, buffer: &buffer) ? out : nil
}

/// `readLines` into `out` (emptied first) through `buffer`, both kept by a
/// client that reads big answers over and over: fresh ones for each 500 KB
/// history page would cost the benchmark's own CPU, which the daemon's
/// threads share the machine with.
func readLines(
  _ fd: Int32, lines: Int, deadline: UInt64, into out: inout [UInt8], buffer: inout [UInt8]
) -> Bool {
  out.removeAll(keepingCapacity: true)
  var seen = 0
  while seen < lines {
    let now = nowNanoseconds()
    if now >= deadline { return false }
    var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
    let wait = Int32(min(1000, (deadline - now) / 1_000_000 + 1))
    if retryingEINTR({ poll(&pfd, 1, wait) }) <= 0 { continue }
    let n = buffer.withUnsafeMutableBytes { raw in
      retryingEINTR { recv(fd, raw.baseAddress, raw.count, 0) }
    }
    if n <= 0 { return false }
    buffer.withUnsafeBytes { raw in
      let chunk = UnsafeRawBufferPointer(rebasing: raw[0..<n])
      seen += countNewlines(chunk)
      out.append(contentsOf: chunk)
    }
  }
  return true
}

/// One request/response exchange on a fresh connection (for set-up steps).
func exchange(path: String, _ request: String, lines: Int = 1, timeout: Double = 30) throws
  -> String
{
  let fd = connectUnix(path)
  if fd < 0 { throw BenchError.errno("connect \(path)") }
  defer { close(fd) }
  guard sendAll(fd, Array(request.utf8)) else { throw BenchError("send to \(path) failed") }
  let deadline = nowNanoseconds() + UInt64(timeout * 1e9)
  guard let reply = readLines(fd, lines: lines, deadline: deadline) else {
    throw BenchError("no answer from \(path) to \(request.prefix(80))")
  }
  return String(decoding: reply, as: UTF8.self)
}

// MARK: Files

func writeFile(_ path: String, _ text: String) throws {
  let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
  if fd < 0 { throw BenchError.errno("open \(path)") }
  defer { close(fd) }
  var bytes = Array(text.utf8)
  var written = 0
  while written < bytes.count {
    let n = bytes.withUnsafeMutableBytes { raw in
      retryingEINTR { write(fd, raw.baseAddress! + written, raw.count - written) }
    }
    if n <= 0 { throw BenchError.errno("write \(path)") }
    written += n
  }
  bytes.removeAll()
}

func readFile(_ path: String) -> String? {
  let fd = open(path, O_RDONLY | O_CLOEXEC)
  if fd < 0 { return nil }
  defer { close(fd) }
  var out: [UInt8] = []
  var buffer = [UInt8](repeating: 0, count: 16_384)
  while true {
    let n = buffer.withUnsafeMutableBytes { raw in
      retryingEINTR { read(fd, raw.baseAddress, raw.count) }
    }
    if n <= 0 { break }
    out.append(contentsOf: buffer[0..<n])
  }
  return String(decoding: out, as: UTF8.self)
}

func makeDirectory(_ path: String) throws {
  if mkdir(path, 0o700) != 0 && errno != EEXIST { throw BenchError.errno("mkdir \(path)") }
}

/// Creates a fresh directory under $TMPDIR (or /tmp).
func makeTemporaryDirectory() throws -> String {
  let base = getenv("TMPDIR").map { String(cString: $0) } ?? "/tmp"
  var template = Array("\(base)/switchbench.XXXXXX".utf8CString)
  let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
  guard let made else { throw BenchError.errno("mkdtemp") }
  return String(cString: made)
}

/// Removes a directory tree (the benchmark's own temp dir only).
func removeTree(_ path: String) {
  guard let dir = opendir(path) else {
    unlink(path)
    return
  }
  var names: [String] = []
  while let entry = readdir(dir) {
    let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
      String(cString: raw.bindMemory(to: CChar.self).baseAddress!)
    }
    if name != "." && name != ".." { names.append(name) }
  }
  closedir(dir)
  for name in names {
    let child = "\(path)/\(name)"
    var st = stat()
    if lstat(child, &st) == 0 && (st.st_mode & S_IFMT) == S_IFDIR {
      removeTree(child)
    } else {
      unlink(child)
    }
  }
  rmdir(path)
}

func fileExists(_ path: String) -> Bool { access(path, F_OK) == 0 }

func isExecutable(_ path: String) -> Bool { access(path, X_OK) == 0 }

/// The first `name` found on $PATH.
func findOnPath(_ name: String) -> String? {
  guard let path = getenv("PATH").map({ String(cString: $0) }) else { return nil }
  for dir in path.split(separator: ":") where !dir.isEmpty {
    let candidate = "\(dir)/\(name)"
    if isExecutable(candidate) { return candidate }
  }
  return nil
}

/// The path of this executable.
func executablePath() -> String {
  var buffer = [UInt8](repeating: 0, count: 4096)
  let n = buffer.withUnsafeMutableBufferPointer { raw in
    raw.withMemoryRebound(to: CChar.self) { readlink("/proc/self/exe", $0.baseAddress!, 4095) }
  }
  return n > 0 ? String(decoding: buffer[0..<n], as: UTF8.self) : CommandLine.arguments[0]
}

/// The directory of this executable (where SwiftPM puts switchd and switchctl too).
func executableDirectory() -> String {
  let path = executablePath()
  guard let slash = path.lastIndex(of: "/") else { return "." }
  return String(path[..<slash])
}

/// Raises RLIMIT_NOFILE to its hard limit; returns the soft limit now in force.
@discardableResult
func raiseFileLimit() -> Int {
  var limit = rlimit()
  guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 1024 }
  if limit.rlim_cur < limit.rlim_max {
    limit.rlim_cur = limit.rlim_max
    _ = setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
    _ = getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
  }
  return Int(clamping: limit.rlim_cur)
}

// MARK: Threads

/// Runs `count` POSIX threads (`body(index)`) and waits for all of them.
/// Foundation's `Thread` would do, but raw pthreads keep Foundation out.
func runThreads(_ count: Int, _ body: @escaping @Sendable (Int) -> Void) {
  var threads: [pthread_t] = []
  for index in 0..<count {
    threads.append(startJoinableThread { body(index) })
  }
  for thread in threads { pthread_join(thread, nil) }
}

/// Per-thread results, each thread storing its own once at its end.
final class ResultSlots<T: Sendable>: Sendable {
  private let items: Mutex<[T?]>
  init(count: Int) { items = Mutex(Array(repeating: nil, count: count)) }
  func set(_ index: Int, _ value: T) { items.withLock { $0[index] = value } }
  var values: [T] { items.withLock { $0.compactMap { $0 } } }
}
