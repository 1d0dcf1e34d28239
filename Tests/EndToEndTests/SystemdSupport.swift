import Glibc
import SwitchSystem
import SwitchTestSupport

/// systemd's side of the sd_notify protocol, for tests: an AF_UNIX datagram
/// socket bound at a path or an abstract name, whose address goes into the
/// daemon's `NOTIFY_SOCKET`. Every datagram is split into its assignment
/// lines (`READY=1`, `STATUS=...`), kept in arrival order with the sender's
/// pid (SO_PASSCRED, as systemd checks `NotifyAccess=main`).
final class NotifyListener {
  struct Message: CustomStringConvertible {
    var line: String
    /// The sending process, from SCM_CREDENTIALS.
    var pid: pid_t?
    var time: Double

    var description: String { line }
  }

  private(set) var fd: Int32
  /// The value for `NOTIFY_SOCKET`: the path, or `@name` for an abstract socket.
  let address: String
  private let path: String?
  /// Received but not yet consumed by `waitFor`.
  private var queue: [Message] = []

  private static let credentialsType: Int32 = 2  // SCM_CREDENTIALS (a GNU enum, not imported)

  /// Binds a socket file at `path`.
  convenience init(path: String) throws {
    try self.init(address: path, path: path)
  }

  /// Binds `name` in the abstract namespace (`NOTIFY_SOCKET=@name`).
  convenience init(abstractName name: String) throws {
    try self.init(address: "@" + name, path: nil)
  }

  private init(address: String, path: String?) throws {
    self.address = address
    self.path = path
    fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue | SOCK_CLOEXEC.rawValue), 0)
    guard fd >= 0 else { throw FixtureError("socket(AF_UNIX, SOCK_DGRAM) failed: errno \(errno)") }
    guard let socketAddress = try? UnixSocketAddress(address) else {
      closeOnce()
      throw FixtureError("notify socket name too long: \(address)")
    }
    if let path { unlink(path) }
    let rc = socketAddress.withSockaddr { bind(fd, $0, $1) }
    guard rc == 0 else {
      let error = errno
      closeOnce()
      throw FixtureError("bind \(address) failed: errno \(error)")
    }
    var on: Int32 = 1
    setsockopt(fd, SOL_SOCKET, SO_PASSCRED, &on, socklen_t(MemoryLayout<Int32>.size))
  }

  deinit {
    closeOnce()
    if let path { unlink(path) }
  }

  /// Closes once: deinit runs after a throwing init too, and a second close
  /// could hit a descriptor that a test running in parallel was given.
  private func closeOnce() {
    if fd >= 0 { close(fd) }
    fd = -1
  }

  /// Reads one datagram, waiting up to `timeout` seconds; its lines go to
  /// the queue. False on timeout.
  @discardableResult
  func receive(timeout: Double) -> Bool {
    var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
    let rc = poll(&pfd, 1, Int32(max(0, timeout) * 1000))
    guard rc > 0 else { return false }
    var data = [UInt8](repeating: 0, count: 4096)
    var control = [UInt64](repeating: 0, count: 16)  // 8-byte aligned cmsg space
    var controlLength = 0
    let n = data.withUnsafeMutableBytes { dataBytes in
      control.withUnsafeMutableBytes { controlBytes in
        var iov = iovec(iov_base: dataBytes.baseAddress, iov_len: dataBytes.count)
        return withUnsafeMutablePointer(to: &iov) { iovPointer in
          var message = msghdr()
          message.msg_iov = iovPointer
          message.msg_iovlen = 1
          message.msg_control = controlBytes.baseAddress
          message.msg_controllen = controlBytes.count
          let n = recvmsg(fd, &message, Int32(MSG_DONTWAIT))
          controlLength = Int(message.msg_controllen)
          return n
        }
      }
    }
    guard n >= 0 else { return false }
    let sender = control.withUnsafeBytes { senderPID($0, length: controlLength) }
    let now = monotonicSeconds()
    let text = String(decoding: data[0..<n], as: UTF8.self)
    for line in text.split(separator: "\n") {
      queue.append(Message(line: String(line), pid: sender, time: now))
    }
    return true
  }

  /// The pid in an SCM_CREDENTIALS control message (struct cmsghdr is
  /// size_t len, int level, int type, then the data; struct ucred starts
  /// with the pid).
  private func senderPID(_ control: UnsafeRawBufferPointer, length: Int) -> pid_t? {
    let header = MemoryLayout<Int>.size + 8
    var offset = 0
    while offset + header <= length {
      let cmsgLength = control.loadUnaligned(fromByteOffset: offset, as: Int.self)
      let level = control.loadUnaligned(
        fromByteOffset: offset + MemoryLayout<Int>.size, as: Int32.self)
      let type = control.loadUnaligned(
        fromByteOffset: offset + MemoryLayout<Int>.size + 4, as: Int32.self)
      if level == SOL_SOCKET && type == Self.credentialsType && cmsgLength >= header + 4 {
        return control.loadUnaligned(fromByteOffset: offset + header, as: pid_t.self)
      }
      guard cmsgLength > 0 else { break }
      offset += (cmsgLength + 7) & ~7
    }
    return nil
  }

  /// Waits for the line `expected`; consumes it and everything before it.
  /// - Returns: the lines consumed, `expected` last.
  /// - Throws: when it does not arrive in time, or `child` exits first.
  @discardableResult
  func waitFor(
    _ expected: String, timeout: Double = 20, child: Child? = nil, log: () -> String = { "" }
  ) throws -> [Message] {
    try waitFor(expected, timeout: timeout, child: child, log: log) { $0 == expected }
  }

  /// Waits for a line that starts with `prefix` (`STATUS=`).
  @discardableResult
  func waitFor(
    prefix: String, timeout: Double = 20, child: Child? = nil, log: () -> String = { "" }
  ) throws -> [Message] {
    try waitFor(prefix + "...", timeout: timeout, child: child, log: log) { $0.hasPrefix(prefix) }
  }

  private func waitFor(
    _ what: String, timeout: Double, child: Child?, log: () -> String,
    matching predicate: (String) -> Bool
  ) throws -> [Message] {
    let deadline = monotonicSeconds() + timeout
    var consumed: [Message] = []
    while true {
      while !queue.isEmpty {
        let message = queue.removeFirst()
        consumed.append(message)
        if predicate(message.line) { return consumed }
      }
      let now = monotonicSeconds()
      if now >= deadline {
        throw FixtureError(
          "no \(what) within \(timeout) s on \(address); received \(consumed); log: \(log())")
      }
      if let child, child.hasExited {
        throw FixtureError(
          "switchd exited (\(child.exitStatus ?? -1)) before \(what); received \(consumed); "
            + "log: \(log())")
      }
      receive(timeout: min(0.05, deadline - now))
    }
  }

  /// Everything that arrives within the next `seconds` (and all queued before).
  func collect(for seconds: Double) -> [Message] {
    let deadline = monotonicSeconds() + seconds
    while true {
      let now = monotonicSeconds()
      if now >= deadline { break }
      receive(timeout: deadline - now)
    }
    return drain()
  }

  /// Reads what is waiting without blocking; returns and clears the queue.
  func drain() -> [Message] {
    while receive(timeout: 0) {}
    let messages = queue
    queue.removeAll()
    return messages
  }
}

/// Whether a file (of any type) exists at `path`.
func pathExists(_ path: String) -> Bool {
  var st = stat()
  return lstat(path, &st) == 0
}

/// The inode number of `path` (nil if absent): the same file, not a new one.
func inode(of path: String) -> UInt? {
  var st = stat()
  return lstat(path, &st) == 0 ? UInt(st.st_ino) : nil
}

/// Whether `path` is a socket file.
func isSocketFile(_ path: String) -> Bool {
  var st = stat()
  return lstat(path, &st) == 0 && (st.st_mode & S_IFMT) == S_IFSOCK
}

/// One connect attempt to a stream socket, no retry: true if it was accepted
/// into the backlog (the daemon listens).
func connectsAtOnce(_ path: String) -> Bool {
  (try? RPCClient(socketPath: path, receiveTimeout: 5)) != nil
}
