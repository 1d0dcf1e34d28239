import CShim
import Glibc
import SwitchCore
import SwitchProtocol
import SwitchStore
import SwitchSystem

// Accepting connections, within MaxConnections and MaxConnectionsPerUser.
extension Server {
  // MARK: Accepting

  /// Accepts on the socket of `wire`: both sockets' connections are served
  /// alike, under the same limits (counted together) and peer credentials.
  func acceptConnections(_ wire: WireFormat) {
    let (listener, token) =
      wire == .varlink
      ? (varlinkListener, Self.varlinkListenerToken) : (self.listener, Self.listenerToken)
    guard let listener else { return }
    for _ in 0..<64 {
      let fd = shim_accept_nonblocking(listener.fd)
      if fd < 0 {
        if errno == EINTR || errno == ECONNABORTED { continue }
        if errno == EMFILE || errno == ENFILE {
          log.rateLimited(.warning, cause: "accept", "out of file descriptors; pausing accept")
          acceptPausedUntil = monotonicSeconds() + 0.1
          _ = shim_epoll_ctl(epoll, Int32(SHIM_EPOLL_MOD), listener.fd, 0, token)
        }
        return
      }
      if connections.count >= limits.maxConnections {
        refuse(
          fd, wire, .overloaded("too many connections (MaxConnections=\(limits.maxConnections))"))
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
          fd, wire,
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
        id: id, fd: fd, peer: peer, caller: caller, maxFrameBytes: limits.maxFrameBytes,
        wire: wire)
      if access.authorization == .polkit {
        connection.processStartTime = ProcessStartTime.of(pid: peer.pid)
      }
      connections[id] = connection
      connection.interest = Self.readingInterest
      register(fd, token: id, events: connection.interest)
    }
  }

  /// Sends one error line to a connection we will not serve, and closes it.
  func refuse(_ fd: Int32, _ wire: WireFormat, _ error: RPCError) {
    var w = JSONWriter(capacity: 256)
    var ticket = Ticket(connection: 0, slot: 0, part: 0, id: .null)
    if wire == .varlink { ticket.varlink = VarlinkReply() }
    Self.writeResponse(&w, to: ticket, error: error)
    w.append(wire.terminator)
    _ = w.withBytes {
      send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT))
    }
    close(fd)
  }
}
