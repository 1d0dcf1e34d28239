import SwitchCore
import SwitchProtocol

/// One `watch`: its patterns, and where a replay of `since` has got to.
final class Watch {
  let id: String
  /// Every `changed` event to this watch starts with these bytes, and ends
  /// with `eventEnd` (a JSON-RPC notification, or a varlink reply).
  let eventHead: [UInt8]
  let eventEnd: [UInt8]
  /// A varlink `Watch`: its events are replies, and it has no id on the wire.
  let isVarlink: Bool
  let connection: UInt64
  /// The connection itself, so that publishing to a watch looks nothing up
  /// (the hub drops the watch when the connection closes; nil only where
  /// the hub is used alone).
  let owner: Connection?
  let patterns: [KeyPattern]?
  /// Whose world it shows: the caller's, the user it named, or every user's.
  let viewpoint: Viewpoint
  /// While replaying `since`, the last revision sent; live events wait
  /// until the replay reaches the present.
  var replayCursor: Int64?
  /// The next replay page is being read by the log reader.
  var replayReading = false
  /// Its call read as another user with polkit's grant (Authorization=
  /// polkit): it stands while polkit is the authority (`endWatchesBeyondRights`).
  var grantedByPolkit = false
  /// The last `matching` call that found this watch: a watch that matches
  /// through several patterns is still visited once.
  fileprivate var stamp: UInt64 = 0

  init(
    id: String, connection: UInt64, owner: Connection?, patterns: [KeyPattern]?,
    viewpoint: Viewpoint, replayCursor: Int64?, varlink: Bool = false
  ) {
    self.id = id
    self.owner = owner
    self.viewpoint = viewpoint
    self.isVarlink = varlink
    self.eventHead = varlink ? VarlinkEncoding.eventHead : WireEncoding.changedEventHead(watch: id)
    self.eventEnd = varlink ? VarlinkEncoding.eventEnd : WireEncoding.changedEventEnd
    self.connection = connection
    self.patterns = patterns
    self.replayCursor = replayCursor
  }

  func matches(_ key: String) -> Bool { Self.matches(patterns, key) }

  /// No patterns: every key.
  static func matches(_ patterns: [KeyPattern]?, _ key: String) -> Bool {
    patterns?.contains { $0.matches(key) } ?? true
  }

  /// What the log reader needs to write this watch's replay pages, for a
  /// viewer whose rights say whose actors it sees.
  func replayFormat(viewer: Caller) -> ReplayFormat {
    ReplayFormat(head: eventHead, end: eventEnd, patterns: patterns, viewer: viewer)
  }
}

/// How the events of one watch are written: what the log reader needs to
/// write a replay page the loop only has to send.
struct ReplayFormat: Sendable {
  let head: [UInt8]
  let end: [UInt8]
  let patterns: [KeyPattern]?
  /// Whose rights decide which actors it is shown.
  let viewer: Caller
}

/// The watches of every connection, indexed so that finding who gets a
/// change costs what the change's key has, not how many watches exist:
/// exact keys by key, prefixes by prefix (looked up for each prefix length
/// in use), and catch-all watches in a list. Owned by the event loop.
struct WatchHub {
  private(set) var watches: [String: Watch] = [:]
  private var everything: [Watch] = []
  private var byKey: [String: [Watch]] = [:]
  private var byPrefix: [String: [Watch]] = [:]
  /// How many prefix patterns have each length, to look up only those.
  private var prefixLengths: [Int: Int] = [:]
  private var nextID: UInt64 = 1
  private var stamp: UInt64 = 0

  var count: Int { watches.count }

  mutating func add(
    connection: UInt64, owner: Connection? = nil, patterns: [KeyPattern]?,
    viewpoint: Viewpoint = .everyone, replayFrom: Int64?, varlink: Bool = false
  ) -> String {
    let id = "w\(nextID)"
    nextID += 1
    let watch = Watch(
      id: id, connection: connection, owner: owner, patterns: patterns, viewpoint: viewpoint,
      replayCursor: replayFrom, varlink: varlink)
    watches[id] = watch
    guard let patterns else {
      everything.append(watch)
      return id
    }
    for pattern in Set(patterns) {
      switch pattern {
      case .exact(let key): byKey[key, default: []].append(watch)
      case .prefix(let prefix):
        byPrefix[prefix, default: []].append(watch)
        prefixLengths[prefix.utf8.count, default: 0] += 1
      }
    }
    return id
  }

  mutating func remove(_ id: String) {
    guard let watch = watches.removeValue(forKey: id) else { return }
    guard let patterns = watch.patterns else {
      everything.removeAll { $0 === watch }
      return
    }
    for pattern in Set(patterns) {
      switch pattern {
      case .exact(let key):
        byKey[key]?.removeAll { $0 === watch }
        if byKey[key]?.isEmpty == true { byKey[key] = nil }
      case .prefix(let prefix):
        byPrefix[prefix]?.removeAll { $0 === watch }
        if byPrefix[prefix]?.isEmpty == true { byPrefix[prefix] = nil }
        let length = prefix.utf8.count
        prefixLengths[length, default: 1] -= 1
        if prefixLengths[length] == 0 { prefixLengths[length] = nil }
      }
    }
  }

  /// Calls `body` once for each watch a change of `key` goes to.
  mutating func forEachMatch(_ key: String, _ body: (Watch) -> Void) {
    stamp &+= 1
    let current = stamp
    func visit(_ list: [Watch]) {
      for watch in list where watch.stamp != current {
        watch.stamp = current
        body(watch)
      }
    }
    visit(everything)
    // (An empty table answers without hashing the key: Swift's own fast path.)
    if let exact = byKey[key] { visit(exact) }
    if !prefixLengths.isEmpty {
      let utf8 = Array(key.utf8)
      for length in prefixLengths.keys where length <= utf8.count {
        if let found = byPrefix[String(decoding: utf8[0..<length], as: UTF8.self)] {
          visit(found)
        }
      }
    }
  }

  /// The ids of the watches a change of `key` goes to (for tests and logs).
  mutating func matching(_ key: String) -> Set<String> {
    var ids: Set<String> = []
    forEachMatch(key) { ids.insert($0.id) }
    return ids
  }
}
