import Glibc
import SwitchProtocol

/// Why a conversation with the daemon failed (the transport, not a refusal).
enum ClientError: Error, Equatable {
  /// `connect` failed: nothing listens there, or we may not reach it.
  case unreachable(path: String, errno: Int32)
  /// The path does not fit in `sockaddr_un`.
  case pathTooLong(path: String)
  /// No reply within the receive timeout.
  case timedOut(path: String, seconds: Int)
  /// The daemon closed the connection (it stopped, or dropped a slow watcher).
  case closed(path: String)
  /// The daemon sent a line that is not a JSON-RPC 2.0 message.
  case malformed(path: String)
  /// A system call failed after the connection was made.
  case system(path: String, call: String, errno: Int32)

  /// One sentence for stderr, without the `switchctl: ` prefix.
  var sentence: String {
    switch self {
    case .unreachable(let path, let code):
      return "cannot reach switchd at \(path): \(describeErrno(code)) (is it running?)"
    case .pathTooLong(let path):
      return "cannot reach switchd at \(path): the socket path is longer than "
        + "\(DaemonClient.maxPathBytes) bytes"
    case .timedOut(let path, let seconds):
      return "switchd at \(path) did not answer within \(seconds) seconds; it may be stuck"
    case .closed(let path):
      return "switchd at \(path) closed the connection before answering"
    case .malformed(let path):
      return "switchd at \(path) sent a reply that is not JSON-RPC 2.0"
    case .system(let path, let call, let code):
      return "talking to switchd at \(path) failed: \(call): \(describeErrno(code))"
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
  /// `sun_path` holds 108 bytes including the terminating NUL.
  static let maxPathBytes = 107
  /// A reply larger than this is refused rather than buffered without end.
  static let maxReplyBytes = 256 << 20

  let path: String
  private let fd: Int32
  private var framer = LineFramer(maxFrameBytes: DaemonClient.maxReplyBytes)
  private var notifications: [(method: String, params: JSONValue)] = []
  private var notificationIndex = 0
  private var nextID: Int64 = 1
  private let receiveTimeout: Int?
  private var chunk = [UInt8](repeating: 0, count: 65_536)

  private init(path: String, fd: Int32, receiveTimeout: Int?) {
    self.path = path
    self.fd = fd
    self.receiveTimeout = receiveTimeout
  }

  deinit { Glibc.close(fd) }

  /// Connects to the daemon's socket. A path starting with `@` names an
  /// abstract socket. `receiveTimeout` (seconds) bounds each wait for bytes,
  /// so a wedged daemon cannot hang a script; nil waits forever (watch).
  static func connect(to path: String, receiveTimeout: Int?) throws(ClientError) -> DaemonClient {
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    var bytes = Array(path.utf8)
    let abstract = bytes.first == UInt8(ascii: "@")
    if abstract { bytes[0] = 0 }
    guard !bytes.isEmpty, bytes.count <= maxPathBytes else { throw .pathTooLong(path: path) }
    withUnsafeMutableBytes(of: &address.sun_path) { raw in
      raw.copyBytes(from: bytes)
      raw[bytes.count] = 0
    }
    // An abstract name is exactly its bytes; a path includes its NUL.
    let length = socklen_t(
      MemoryLayout<sockaddr_un>.offset(of: \.sun_path)! + bytes.count + (abstract ? 0 : 1))

    let fd = Glibc.socket(AF_UNIX, Int32(SOCK_STREAM.rawValue | SOCK_CLOEXEC.rawValue), 0)
    guard fd >= 0 else { throw .system(path: path, call: "socket", errno: errno) }
    let client = DaemonClient(path: path, fd: fd, receiveTimeout: receiveTimeout)
    let result = withUnsafePointer(to: &address) { pointer in
      pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, length) }
    }
    if result != 0 {
      let code = errno
      // After EINTR the connection completes in the background; for a Unix
      // socket that is immediate, and a second connect reports EISCONN.
      guard code == EINTR || code == EISCONN else { throw .unreachable(path: path, errno: code) }
    }
    if let receiveTimeout {
      var limit = timeval(tv_sec: receiveTimeout, tv_usec: 0)
      for option in [SO_RCVTIMEO, SO_SNDTIMEO] {
        setsockopt(fd, SOL_SOCKET, option, &limit, socklen_t(MemoryLayout<timeval>.size))
      }
    }
    return client
  }

  /// Sends one request and waits for its response.
  func call(
    _ method: Method, _ params: [JSONMember]
  ) throws(ClientError) -> Result<JSONValue, RemoteError> {
    let id = nextID
    nextID += 1
    try send(RequestEncoding.line(id: id, method: method, params: params))
    while true {
      switch try nextMessage() {
      case .notification(let name, let params):
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

  private func receive() throws(ClientError) {
    while true {
      let count = chunk.withUnsafeMutableBytes { Glibc.recv(fd, $0.baseAddress, $0.count, 0) }
      if count > 0 {
        chunk.withUnsafeBytes { framer.append(UnsafeRawBufferPointer(rebasing: $0[..<count])) }
        return
      }
      if count == 0 { throw .closed(path: path) }
      let code = errno
      switch code {
      case EINTR: continue
      case EAGAIN, EWOULDBLOCK:
        throw .timedOut(path: path, seconds: receiveTimeout ?? 0)
      case ECONNRESET: throw .closed(path: path)
      default: throw .system(path: path, call: "recv", errno: code)
      }
    }
  }

  private func send(_ bytes: [UInt8]) throws(ClientError) {
    var offset = 0
    while offset < bytes.count {
      let count = bytes.withUnsafeBytes { raw in
        Glibc.send(fd, raw.baseAddress! + offset, raw.count - offset, Int32(MSG_NOSIGNAL))
      }
      if count >= 0 {
        offset += count
        continue
      }
      let code = errno
      switch code {
      case EINTR: continue
      case EAGAIN, EWOULDBLOCK:
        throw .timedOut(path: path, seconds: receiveTimeout ?? 0)
      case EPIPE, ECONNRESET: throw .closed(path: path)
      default: throw .system(path: path, call: "send", errno: code)
      }
    }
  }
}
