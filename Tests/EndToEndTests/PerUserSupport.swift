import Glibc
import SwitchProtocol
import SwitchSystem
import SwitchTestSupport
import Synchronization

/// Connections made by other uids, for the per-user tests: the daemon takes
/// a peer's uid from SO_PEERCRED, which is fixed when the peer connects. So
/// a python3 run as that uid (setpriv, as `ctl(asUser:)` does) connects and
/// hands the connected socket to the test over a Unix socket (SCM_RIGHTS);
/// the test then talks on it as that user, for as long as it likes.
extension DaemonFixture {
  private static let handOver = """
    import socket, sys
    daemon = socket.socket(socket.AF_UNIX); daemon.connect(sys.argv[1])
    test = socket.socket(socket.AF_UNIX); test.connect(sys.argv[2])
    socket.send_fds(test, [b"x"], [daemon.fileno()])
    """

  private static let handOvers = Atomic<Int>(0)

  /// A client whose connection the daemon sees as made by `uid` (gid the
  /// same, no groups), to the JSON-RPC socket or to `socket`.
  func client(asUser uid: UInt32, socket daemonSocket: String? = nil) throws -> RPCClient {
    let number = Self.handOvers.add(1, ordering: .relaxed).newValue
    let path = directory + "/handover-\(number).sock"
    let listener = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue | SOCK_CLOEXEC.rawValue), 0)
    guard listener >= 0 else { throw FixtureError("socket failed: errno \(errno)") }
    defer {
      close(listener)
      unlink(path)
    }
    let address = try UnixSocketAddress(path)
    guard address.withSockaddr({ bind(listener, $0, $1) }) == 0, listen(listener, 1) == 0 else {
      throw FixtureError("cannot listen on \(path): errno \(errno)")
    }
    chmod(path, 0o777)
    let result = runProcess([
      "/usr/bin/setpriv", "--reuid=\(uid)", "--regid=\(uid)", "--clear-groups",
      "/usr/bin/python3", "-I", "-c", Self.handOver, daemonSocket ?? socketPath, path,
    ])
    guard result.status == 0 else {
      throw FixtureError("connecting as uid \(uid) failed: \(result.stderr)")
    }
    let connection = accept(listener, nil, nil)
    guard connection >= 0 else { throw FixtureError("accept failed: errno \(errno)") }
    defer { close(connection) }
    return RPCClient(connected: try Self.receiveDescriptor(connection))
  }

  /// The descriptor sent with one byte on `connection` (SCM_RIGHTS).
  private static func receiveDescriptor(_ connection: Int32) throws -> Int32 {
    var byte: UInt8 = 0
    var control = [UInt8](repeating: 0, count: 64)
    let received = withUnsafeMutablePointer(to: &byte) { bytePointer in
      control.withUnsafeMutableBytes { controlBytes in
        var vector = iovec(iov_base: UnsafeMutableRawPointer(bytePointer), iov_len: 1)
        return withUnsafeMutablePointer(to: &vector) { vectorPointer in
          var message = msghdr()
          message.msg_iov = vectorPointer
          message.msg_iovlen = 1
          message.msg_control = controlBytes.baseAddress
          message.msg_controllen = controlBytes.count
          // Close-on-exec from the start: a process another test spawns
          // meanwhile would otherwise inherit the connection and keep it
          // open after the test closes it (a maker's leaving never seen).
          return recvmsg(connection, &message, Int32(MSG_CMSG_CLOEXEC))
        }
      }
    }
    // struct cmsghdr { size_t cmsg_len; int cmsg_level; int cmsg_type; } then the data.
    let (level, type, fd) = control.withUnsafeBytes {
      (
        $0.load(fromByteOffset: 8, as: Int32.self), $0.load(fromByteOffset: 12, as: Int32.self),
        $0.load(fromByteOffset: 16, as: Int32.self)
      )
    }
    let scmRights: Int32 = 1
    guard received == 1, level == SOL_SOCKET, type == scmRights, fd >= 0 else {
      throw FixtureError("no descriptor was handed over")
    }
    return fd
  }
}

extension RPCClient {
  /// The next event for watch `watch` whose key is `key`, skipping others.
  func nextEvent(of key: String) throws -> JSONValue {
    while true {
      let event = try nextEvent()
      if event["key"]?.stringValue == key { return event }
    }
  }
}

extension JSONValue {
  /// `checked` of a Switch object or a State.
  var checked: Bool? { self["checked"]?.boolValue }
}
