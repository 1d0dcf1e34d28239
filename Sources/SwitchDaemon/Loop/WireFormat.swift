import SwitchProtocol

/// The two wire formats of the one service: a connection speaks the one of
/// the socket it came in on, and every answer to it is framed as that one.
enum WireFormat: Sendable {
  /// JSON-RPC 2.0, one message per line.
  case jsonRPC
  /// varlink (PROTOCOL.md "varlink"), each message followed by a NUL.
  case varlink

  var terminator: UInt8 {
    switch self {
    case .jsonRPC: return UInt8(ascii: "\n")
    case .varlink: return VarlinkEncoding.terminator
    }
  }
}
