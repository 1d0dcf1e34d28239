import CShim
import Glibc
import SwitchCore
import SwitchProtocol
import SwitchStore
import SwitchSystem

// Accepting connections, within MaxConnections and MaxConnectionsPerUser.
extension Server {
  // MARK: Accepting

  func acceptConnections() {
    guard let listener else { return }
    for _ in 0..<64 {
      let fd = shim_accept_nonblocking(listener.fd)
      if fd < 0 {
        if errno == EINTR || errno == ECONNABORTED { continue }
        if errno == EMFILE || errno == ENFILE {
          log.rateLimited(.warning, cause: "accept", "out of file descriptors; pausing accept")
          acceptPausedUntil = monotonicSeconds() + 0.1
          _ = shim_epoll_ctl(epoll, Int32(SHIM_EPOLL_MOD), listener.fd, 0, Self.listenerToken)
        }
        return
      }
      if connections.count >= limits.maxConnections {
        refuse(fd, .overloaded("too many connections (MaxConnections=\(limits.maxConnections))"))
        log.rateLimited(
          .warning, cause: "max-connections", "refused a connection: MaxConnections reached")
        continue
      }
      guard let peer = Peer.of(fd: fd) else {
        log.rateLimited(.warning, cause: "peercred", "refused a connection: no peer credentials")
        close(fd)
        continue
      }
      let caller = peer.caller(access)
      let held = connectionsPerUID[peer.uid, default: 0]
      if held >= limits.maxConnectionsPerUser && !caller.isAdmin {
        refuse(
          fd,
          .overloaded(
            "too many connections for uid \(peer.uid) "
              + "(MaxConnectionsPerUser=\(limits.maxConnectionsPerUser))"))
        log.rateLimited(
          .warning, cause: "max-connections-per-user",
          "refused a connection of uid \(peer.uid): MaxConnectionsPerUser reached")
        continue
      }
      connectionsPerUID[peer.uid] = held + 1
      let id = nextConnectionID
      nextConnectionID += 1
      let connection = Connection(
        id: id, fd: fd, peer: peer, caller: caller, maxFrameBytes: limits.maxFrameBytes)
      connections[id] = connection
      connection.interest = Self.readingInterest
      register(fd, token: id, events: connection.interest)
    }
  }

  /// Sends one error line to a connection we will not serve, and closes it.
  func refuse(_ fd: Int32, _ error: RPCError) {
    var w = JSONWriter(capacity: 256)
    Self.writeResponse(&w, id: .null, error: error)
    w.raw("\n")
    _ = w.bytes.withUnsafeBytes {
      send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT))
    }
    close(fd)
  }
}
