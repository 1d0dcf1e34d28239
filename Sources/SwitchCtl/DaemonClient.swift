import Glibc
import SwitchCore
import SwitchProtocol
import SwitchSystem

/// Why a conversation with the daemon failed (the transport, not a refusal).
enum ClientError: Error, Equatable {
  /// `connect` failed: nothing listens there, or we may not reach it.
  /// `staleSocket`: the path is a socket file nobody listens on, left by
  /// a daemon that stopped without removing it (a crash, SIGKILL).
  case unreachable(path: String, errno: Int32, staleSocket: Bool = false)
  /// Something that is not a socket is at the path (`kind`: "a regular
  /// file", "a directory", …): connect says only "Connection refused".
  case notASocket(path: String, kind: String)
  /// The path does not fit in `sockaddr_un` (or is empty): a usage error,
  /// exit 2, since no daemon can listen there.
  case pathTooLong(path: String)
  /// No reply within the receive timeout.
  case timedOut(path: String, seconds: Int)
  /// The path names switchd's varlink socket (beside switchd.sock, and
  /// offered by completion), which waits for a NUL that a JSON-RPC line
  /// never sends: refused before connecting (it timed out after 30 s, an
  /// audit). A usage error, exit 2.
  case varlinkSocket(path: String)
  /// More notifications than `DaemonClient.maxQueuedNotificationBytes`
  /// came before a call's answer.
  case flooded(path: String)
  /// The daemon closed the connection (it stopped, or dropped a slow watcher).
  case closed(path: String)
  /// The daemon sent a line that is not a JSON-RPC 2.0 message.
  case malformed(path: String)
  /// A system call failed after the connection was made.
  case system(path: String, call: String, errno: Int32)
  /// Nobody reads the output a wait was for any more (`outputToFollow`).
  case outputGone

  /// One sentence for stderr, without the `switchctl: ` prefix.
  var sentence: String {
    switch self {
    case .unreachable(let path, _, staleSocket: true):
      // `switchd &` alone listens at the user's default path, which this
      // one need not be (--socket, $SWITCHD_SOCKET): the path is named.
      let start =
        path == DefaultPaths.systemSocket
        ? "sudo systemctl start switchd"
        : "switchd --socket \(path) & (or remove \(path))"
      return "switchd is not running: \(path) is a stale socket left by a daemon that stopped; "
        + "start it with: \(start)"
    case .unreachable(let path, let code, _) where code == EACCES || code == EPERM:
      return "cannot reach switchd at \(path): \(describeErrno(code)): you may not open this "
        + "socket (its mode, SocketMode= in switchd.conf, or a folder on its path)"
    case .unreachable(let path, let code, _):
      return "cannot reach switchd at \(path): \(describeErrno(code)) (is it running?)"
    case .notASocket(let path, let kind):
      return "cannot reach switchd at \(path): it is \(kind), not a socket; give --socket"
        + " (or $SWITCHD_SOCKET) the socket switchd listens on"
    case .pathTooLong(let path):
      return "the socket path \(path) is \(path.utf8.count) bytes long, and a Unix socket path "
        + "holds at most \(UnixSocketAddress.maxPathBytes): give --socket (or $SWITCHD_SOCKET) "
        + "a shorter one, such as a symbolic link to the socket"
    case .varlinkSocket(let path):
      return "\(path) is switchd's varlink socket; switchctl speaks JSON-RPC, on switchd.sock "
        + "beside it (varlinkctl speaks varlink)"
    case .timedOut(let path, let seconds):
      return
        "switchd at \(path) did not answer within \(Output.count(seconds, "second")); it may be stuck"
    case .closed(let path):
      return "switchd at \(path) closed the connection before answering"
    case .flooded(let path):
      return
        "switchd at \(path) sent more than \(DaemonClient.maxQueuedNotificationBytes >> 20) MiB "
        + "of notifications before its answer; gave up"
    case .malformed(let path):
      return "switchd at \(path) sent a reply that is not JSON-RPC 2.0"
    case .system(let path, let call, let code):
      return "talking to switchd at \(path) failed: \(call): \(describeErrno(code))"
    case .outputGone:
      return "nobody reads standard output any more"
    }
  }
}

/// A blocking JSON-RPC client on one Unix stream socket.
///
/// switchctl makes one call (or one watch) per process, so blocking calls on
/// the main thread are the simplest correct shape: no event loop, no threads,
/// nothing to start up. Responses are matched by id; notifications that
/// arrive while a call waits are queued for `nextNotification`, because the
/// protocol lets them come before or after the response they relate to.
final class DaemonClient {
  /// A reply larger than this is refused rather than buffered without end.
  static let maxReplyBytes = 256 << 20
  /// Notifications a call queues while it waits for its answer, at most:
  /// switchd sends none before the answer on a connection of switchctl's
  /// (one watch, answered first), so more is something else at the socket
  /// flooding the caller, which is refused rather than buffered without end.
  static let maxQueuedNotificationBytes = 16 << 20

  let path: String
  private let socket: Descriptor
  /// Not private: a test waits on it for the daemon's close.
  var fd: Int32 { socket.raw }
  private var framer = LineFramer(maxFrameBytes: DaemonClient.maxReplyBytes)
  private var notifications: [(method: String, params: JSONValue)] = []
  private var notificationIndex = 0
  /// The bytes of the lines `notifications` holds.
  private var queuedNotificationBytes = 0
  /// The length of the line `nextMessage` returned last.
  private var lastLineBytes = 0
  /// While a call waits: when its `receiveTimeout` runs out, for the whole
  /// call, not for each `recv` (a trickle of bytes must not keep it waiting).
  private var callDeadline: Double?
  /// The seconds the call in progress may take (`call`'s `timeout`, else
  /// `receiveTimeout`), for the sentence when they run out.
  private var callLimit: Int?
  private var nextID: Int64 = 1
  private let receiveTimeout: Int?
  private var chunk = [UInt8](repeating: 0, count: 65_536)
  /// Descriptors the daemon passed with its lines (`backup`'s copy), oldest
  /// first; closed with the client unless taken.
  private var passed: [Int32] = []
  /// The descriptor the caller prints what it reads to (a watch's standard
  /// output): while a wait has no deadline, its reader leaving (a pipe's
  /// reader closed it, a terminal hung up) ends the wait with `outputGone`.
  /// Without it `watch | head -1` went on until a second change came to be
  /// written (and fail).
  var outputToFollow: Int32?

  private init(path: String, socket: consuming Descriptor, receiveTimeout: Int?) {
    self.path = path
    self.socket = socket
    self.receiveTimeout = receiveTimeout
    self.callLimit = receiveTimeout
  }

  deinit {
    for descriptor in passed { Glibc.close(descriptor) }
  }

  /// The oldest descriptor the daemon passed and nobody took yet; the
  /// caller owns it. `backup` passes its copy with its answer.
  func takePassedDescriptor() -> Int32? {
    passed.isEmpty ? nil : passed.removeFirst()
  }

  /// Connects to the daemon's socket. A path starting with `@` names an
  /// abstract socket. `receiveTimeout` (seconds) bounds each wait for bytes,
  /// so a wedged daemon cannot hang a script; nil waits forever (watch).
  static func connect(to path: String, receiveTimeout: Int?) throws(ClientError) -> DaemonClient {
    let receiveTimeout = receiveTimeout.flatMap { $0 > 0 ? $0 : nil }  // 0 is none, as for recv
    guard let address = try? UnixSocketAddress(path) else { throw .pathTooLong(path: path) }
    if path == VarlinkInterface.name || path.hasSuffix("/" + VarlinkInterface.name) {
      throw .varlinkSocket(path: path)
    }
    let fd = Glibc.socket(AF_UNIX, Int32(SOCK_STREAM.rawValue | SOCK_CLOEXEC.rawValue), 0)
    guard fd >= 0 else { throw .system(path: path, call: "socket", errno: errno) }
    let client = DaemonClient(path: path, socket: Descriptor(fd), receiveTimeout: receiveTimeout)
    if address.withSockaddr({ Glibc.connect(fd, $0, $1) }) != 0 {
      let code = errno
      // After EINTR the connection completes in the background; for a Unix
      // socket that is immediate, and a second connect reports EISCONN.
      guard code == EINTR || code == EISCONN else {
        if code == ECONNREFUSED, let kind = nonSocketKind(path) {
          throw .notASocket(path: path, kind: kind)
        }
        throw .unreachable(
          path: path, errno: code, staleSocket: code == ECONNREFUSED && isSocketFile(path))
      }
    }
    if let receiveTimeout {
      var limit = timeval(tv_sec: receiveTimeout, tv_usec: 0)
      for option in [SO_RCVTIMEO, SO_SNDTIMEO] {
        setsockopt(fd, SOL_SOCKET, option, &limit, socklen_t(MemoryLayout<timeval>.size))
      }
    }
    return client
  }

  /// Sends one request and waits for its response, at most `timeout`
  /// seconds when given (a watch's answer on a connection that then waits
  /// for events without end), else the connection's `receiveTimeout`.
  func call(
    _ method: Method, _ params: [JSONMember], timeout: Int? = nil
  ) throws(ClientError) -> Result<JSONValue, RemoteError> {
    let id = nextID
    nextID += 1
    callLimit = timeout ?? receiveTimeout
    callDeadline = callLimit.map { monotonicSeconds() + Double($0) }
    defer {
      callDeadline = nil
      callLimit = receiveTimeout
      setReceiveTimeout(receiveTimeout.map(Double.init))  // for what is read after the call
    }
    do throws(ClientError) {
      try send(RequestEncoding.line(id: id, method: method, params: params))
    } catch {
      // A daemon that refuses the connection (`Overloaded` past
      // MaxConnections) writes why and closes, and the send can fail
      // before that line is read: it is still there to read.
      guard case .closed = error else { throw error }
      while let message = try? nextMessage() {
        if case .response(let responseID, let outcome) = message, responseID == .null,
          case .failure = outcome
        {
          return outcome
        }
      }
      throw error
    }
    while true {
      switch try nextMessage() {
      case .notification(let name, let params):
        queuedNotificationBytes += lastLineBytes
        guard queuedNotificationBytes <= Self.maxQueuedNotificationBytes else {
          throw .flooded(path: path)
        }
        notifications.append((name, params))
      case .response(let responseID, let outcome):
        if case .number(let number) = responseID, number.int64 == id { return outcome }
        // An error the daemon could not tie to a request (`id: null`), such
        // as `Overloaded` for a connection past MaxConnections, answers the
        // one request we have in flight.
        if responseID == .null, case .failure = outcome { return outcome }
      }
    }
  }

  /// The next notification, queued or read from the socket; responses
  /// that arrive meanwhile belong to no call and are dropped.
  func nextNotification() throws(ClientError) -> (method: String, params: JSONValue) {
    if notificationIndex < notifications.count {
      let next = notifications[notificationIndex]
      notificationIndex += 1
      if notificationIndex == notifications.count {
        notifications.removeAll()
        notificationIndex = 0
        queuedNotificationBytes = 0
      }
      return next
    }
    while true {
      if case .notification(let name, let params) = try nextMessage() { return (name, params) }
    }
  }

  // MARK: Bytes

  private func nextMessage() throws(ClientError) -> ClientMessage {
    while true {
      switch framer.next() {
      case .line(let line):
        lastLineBytes = line.count
        guard let message = ClientMessage.parse(Array(line)) else {
          throw .malformed(path: path)
        }
        return message
      case .oversized:
        throw .malformed(path: path)
      case nil:
        try receive()
      }
    }
  }

  /// `SO_RCVTIMEO` of `seconds` (at least 1 µs: zero would mean none);
  /// nil: none.
  private func setReceiveTimeout(_ seconds: Double?) {
    let micros = seconds.map { max(1, Int($0 * 1e6)) } ?? 0
    var limit = timeval(tv_sec: micros / 1_000_000, tv_usec: micros % 1_000_000)
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
  }

  private func receive() throws(ClientError) {
    var (count, descriptors) = (0, [Int32]())
    if callDeadline == nil, let output = outputToFollow { try waitForInput(following: output) }
    while true {
      // What is left of the call's time bounds this `recv`; the kernel may
      // end it a tick early, so only the deadline says it ran out.
      if let callDeadline {
        let left = callDeadline - monotonicSeconds()
        guard left > 0 else { throw .timedOut(path: path, seconds: callLimit ?? 0) }
        setReceiveTimeout(left)
      }
      (count, descriptors) = chunk.withUnsafeMutableBytes { buffer in
        DescriptorPassing.receive(fd, into: buffer)
      }
      if count < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) && callDeadline != nil { continue }
      break
    }
    passed += descriptors
    if count > 0 {
      chunk.withUnsafeBytes { framer.append(UnsafeRawBufferPointer(rebasing: $0[..<count])) }
      return
    }
    if count == 0 { throw .closed(path: path) }
    let code = errno
    switch code {
    case EAGAIN, EWOULDBLOCK:
      throw .timedOut(path: path, seconds: callLimit ?? 0)
    case ECONNRESET: throw .closed(path: path)
    default: throw .system(path: path, call: "recv", errno: code)
    }
  }

  /// Waits until the socket has something to read (or an error `recv`
  /// will tell), or `output` is gone: a pipe's write end reports POLLERR
  /// once its reader closed it, a terminal POLLHUP when it hangs up; a
  /// file or /dev/null reports neither (nothing is asked of it but those).
  private func waitForInput(following output: Int32) throws(ClientError) {
    var watched = [
      pollfd(fd: fd, events: Int16(POLLIN), revents: 0), pollfd(fd: output, events: 0, revents: 0),
    ]
    while true {
      let ready = poll(&watched, nfds_t(watched.count), -1)
      if ready < 0 && errno == EINTR { continue }
      if ready < 0 { return }  // `recv` then waits alone, as it did
      if watched[1].revents & Self.gone != 0 { throw .outputGone }
      if watched[0].revents != 0 { return }
    }
  }

  /// What `poll` reports of an output nobody reads any more (POLLNVAL: not
  /// a descriptor at all, which would otherwise wake the wait for ever).
  private static let gone = Int16(POLLERR | POLLHUP | POLLNVAL)

  /// Whether `output`'s reader left, waiting up to `milliseconds` for it
  /// (a watch's pause between reconnecting attempts).
  static func readerLeft(_ output: Int32, waitingMilliseconds milliseconds: Int32) -> Bool {
    var watched = pollfd(fd: output, events: 0, revents: 0)
    let deadline = monotonicSeconds() + Double(milliseconds) / 1000
    while true {
      let left = Int32(max(0, (deadline - monotonicSeconds()) * 1000))
      let ready = poll(&watched, 1, left)
      if ready < 0 && errno == EINTR { continue }
      return ready > 0 && watched.revents & gone != 0
    }
  }

  private func send(_ bytes: [UInt8]) throws(ClientError) {
    var offset = 0
    while offset < bytes.count {
      let count = bytes.withUnsafeBytes { raw in
        retryingEINTR {
          Glibc.send(fd, raw.baseAddress! + offset, raw.count - offset, Int32(MSG_NOSIGNAL))
        }
      }
      if count >= 0 {
        offset += count
        continue
      }
      let code = errno
      switch code {
      case EAGAIN, EWOULDBLOCK:
        throw .timedOut(path: path, seconds: receiveTimeout ?? 0)
      case EPIPE, ECONNRESET: throw .closed(path: path)
      default: throw .system(path: path, call: "send", errno: code)
      }
    }
  }
}

/// Whether `path` names a socket file (not a link to one, not an abstract name).
private func isSocketFile(_ path: String) -> Bool {
  var st = stat()
  return lstat(path, &st) == 0 && (st.st_mode & S_IFMT) == S_IFSOCK
}

/// What is at `path` when it is there and not a socket ("a regular file",
/// "a directory", …), as `stat` sees it (a link to a socket is a socket);
/// nil for a socket, or nothing.
private func nonSocketKind(_ path: String) -> String? {
  guard !path.hasPrefix("@") else { return nil }  // abstract: no file
  var st = stat()
  guard stat(path, &st) == 0 else { return nil }
  switch st.st_mode & S_IFMT {
  case S_IFSOCK: return nil
  case S_IFREG: return "a regular file"
  case S_IFDIR: return "a directory"
  case S_IFIFO: return "a FIFO"
  default: return "not a socket file"
  }
}
