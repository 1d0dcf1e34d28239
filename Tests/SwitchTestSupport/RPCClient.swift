import Glibc
import SwitchProtocol
import SwitchSystem

/// A blocking line client for tests: send a request, read lines.
public final class RPCClient {
  public private(set) var fd: Int32
  private var buffer: [UInt8] = []
  private var nextID: Int64 = 1
  /// Notifications read while waiting for a response.
  public var notifications: [JSONValue] = []

  public init(socketPath: String, receiveTimeout: Double = 20) throws {
    fd = try connectUnixSocket(socketPath)
    setReceiveTimeout(receiveTimeout)
  }

  /// A client on a socket already connected (`connect(asUser:)`), which it then owns.
  public init(connected: Int32, receiveTimeout: Double = 20) {
    fd = connected
    setReceiveTimeout(receiveTimeout)
  }

  private func setReceiveTimeout(_ receiveTimeout: Double) {
    var tv = timeval(tv_sec: Int(receiveTimeout), tv_usec: 0)
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
  }

  /// Closes once: a second close could hit a descriptor number that a
  /// test running in parallel was given in between.
  public func close() {
    if fd >= 0 { Glibc.close(fd) }
    fd = -1
  }

  deinit { close() }

  public func send(raw text: String) throws {
    guard sendAll(fd, Array(text.utf8)) else { throw FixtureError("send failed: errno \(errno)") }
  }

  /// Reads one line (without its newline); nil at end of stream or timeout.
  public func readLine() -> String? {
    while true {
      if let newline = buffer.firstIndex(of: 10) {
        let line = Array(buffer[..<newline])
        buffer.removeSubrange(...newline)
        return String(decoding: line, as: UTF8.self)
      }
      var chunk = [UInt8](repeating: 0, count: 65_536)
      let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
      if n <= 0 { return nil }
      buffer += chunk[0..<n]
    }
  }

  public func readJSON() throws -> JSONValue {
    guard let line = readLine() else { throw FixtureError("no line from the daemon") }
    return try JSONParser.parse(line, maxDepth: 512)
  }

  /// Sends a request and returns the whole response object (result or
  /// error), keeping notifications that arrive first.
  public func call(_ method: String, _ params: String = "{}") throws -> JSONValue {
    let id = nextID
    nextID += 1
    try send(
      raw: "{\"jsonrpc\":\"2.0\",\"id\":\(id),\"method\":\"\(method)\",\"params\":\(params)}\n")
    while true {
      let message = try readJSON()
      if message["method"] != nil {
        notifications.append(message)
        continue
      }
      guard message["id"]?.int64Value == id else {
        throw FixtureError("unexpected response \(message.jsonText)")
      }
      return message
    }
  }

  /// `call`, expecting a result.
  public func result(_ method: String, _ params: String = "{}") throws -> JSONValue {
    let response = try call(method, params)
    guard let result = response["result"] else {
      throw FixtureError("\(method) failed: \(response.jsonText)")
    }
    return result
  }

  /// `call`, expecting an error; returns `error`.
  public func error(_ method: String, _ params: String = "{}") throws -> JSONValue {
    let response = try call(method, params)
    guard let error = response["error"] else {
      throw FixtureError("\(method) did not fail: \(response.jsonText)")
    }
    return error
  }

  /// The next `changed` notification's params (already read ones first).
  public func nextEvent() throws -> JSONValue {
    if !notifications.isEmpty { return notifications.removeFirst()["params"] ?? .null }
    let message = try readJSON()
    guard message["method"]?.stringValue == "changed" else {
      throw FixtureError("expected an event, got \(message.jsonText)")
    }
    return message["params"] ?? .null
  }
}

/// Sends all of `bytes` (retrying short sends and EINTR); false when the peer is gone.
public func sendAll(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
  var offset = 0
  while offset < bytes.count {
    let n = bytes.withUnsafeBytes {
      Glibc.send(fd, $0.baseAddress! + offset, bytes.count - offset, Int32(MSG_NOSIGNAL))
    }
    if n < 0 && errno == EINTR { continue }
    if n <= 0 { return false }
    offset += n
  }
  return true
}

/// A connected Unix stream socket, or an error (the descriptor is closed on
/// failure, once). `receiveBuffer` sets SO_RCVBUF before connecting.
public func connectUnixSocket(_ path: String, receiveBuffer: Int32? = nil) throws -> Int32 {
  let address = try UnixSocketAddress(path)
  let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue | SOCK_CLOEXEC.rawValue), 0)
  guard fd >= 0 else { throw FixtureError("socket failed: errno \(errno)") }
  if var size = receiveBuffer {
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
  }
  let rc = address.withSockaddr { connect(fd, $0, $1) }
  guard rc == 0 else {
    let error = errno
    Glibc.close(fd)
    throw FixtureError("connect \(path) failed: errno \(error)")
  }
  return fd
}
