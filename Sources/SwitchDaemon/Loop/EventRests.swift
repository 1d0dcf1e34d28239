import SwitchCore
import SwitchProtocol

/// The part of one change's event line after each watch's head, encoded at
/// most once per kind however many watch it: with the actor's ids or
/// without, ended as a JSON-RPC notification or as a varlink reply.
/// Four stored slots, not a dictionary: nothing to allocate per change.
/// The change is passed to each call, not kept: a copy of it was made and
/// released per change even when nobody watched (callgrind).
struct EventRests {
  private var shown: [UInt8]?
  private var hidden: [UInt8]?
  private var shownVarlink: [UInt8]?
  private var hiddenVarlink: [UInt8]?

  /// The rest of `change`'s event line, the same change on every call.
  mutating func rest(of change: Change, showingActor: Bool, varlink: Bool) -> [UInt8] {
    func cached(_ slot: inout [UInt8]?, _ end: [UInt8]) -> [UInt8] {
      if let bytes = slot { return bytes }
      let bytes = Server.eventRest(change, showingActor: showingActor, end: end)
      slot = bytes
      return bytes
    }
    switch (showingActor, varlink) {
    case (true, false): return cached(&shown, WireEncoding.changedEventEnd)
    case (false, false): return cached(&hidden, WireEncoding.changedEventEnd)
    case (true, true): return cached(&shownVarlink, VarlinkEncoding.eventEnd)
    case (false, true): return cached(&hiddenVarlink, VarlinkEncoding.eventEnd)
    }
  }
}
