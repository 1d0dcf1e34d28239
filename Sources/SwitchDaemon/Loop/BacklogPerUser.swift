/// The unsent answer bytes each uid's connections hold, so that one user
/// cannot make the daemon hold answers without bound by asking for large
/// ones on many connections and reading none. A connection takes no new
/// request once its unsent bytes pass the high-water mark, but the answer
/// that took it there can be megabytes (a `list` or `watch` snapshot of
/// every switch, ~5.3 MB with 10,000; a batch's, up to 4 MiB): 256
/// connections of one uid each holding a 4 MiB batch answer were 1 GiB.
///
/// Counted: the whole unsent bytes of each connection above the mark (a
/// connection under it is counted as none: its bound is the mark; an
/// administrator's as none: it is not held). Once a
/// uid's count passes `limit`, its connections take no new request until
/// they read; a connection held so is handed back by `changed` when the
/// count falls to the limit again. Administrators are exempt, as from
/// MaxConnectionsPerUser (`Server.mayTakeRequests`). Owned by the event loop.
struct BacklogPerUser {
  /// `Limits.backlogPerUser`; a reload may change it.
  var limit: Int
  private var counted: [UInt32: Int] = [:]
  /// Connections that stopped taking requests because their uid was over.
  private var waiting: [UInt32: Set<UInt64>] = [:]
  /// The uids over the limit: empty nearly always, so that a request
  /// framed costs one look at it.
  private(set) var over: Set<UInt32> = []

  init(limit: Int) { self.limit = limit }

  /// Whether `connection` of `uid` may take a new request now. If not, it
  /// is remembered and handed back by `changed` once it may.
  mutating func mayTake(uid: UInt32, connection: UInt64) -> Bool {
    guard over.contains(uid) else { return true }
    waiting[uid, default: []].insert(connection)
    return false
  }

  /// A connection of `uid` holds `delta` more counted bytes (fewer when
  /// negative: it sent, or closed).
  /// - Returns: the connections to resume, now that `uid` is within the limit.
  mutating func changed(uid: UInt32, by delta: Int) -> Set<UInt64> {
    let now = counted[uid, default: 0] + delta
    counted[uid] = now > 0 ? now : nil
    if now > limit {
      over.insert(uid)
      return []
    }
    guard over.remove(uid) != nil else { return [] }
    return waiting.removeValue(forKey: uid) ?? []
  }

  /// `connection` of `uid` closed: it is not handed back.
  mutating func forget(uid: UInt32, connection: UInt64) {
    guard waiting[uid]?.remove(connection) != nil, waiting[uid]?.isEmpty == true else { return }
    waiting[uid] = nil
  }

  /// After the limit changed (a reload) and the counts with it: which uids
  /// are over is decided again, and every connection held is handed back
  /// (one still over is held again when it is pumped).
  mutating func reconsider() -> [UInt64] {
    over = Set(counted.filter { $0.value > limit }.keys)
    let held = waiting.values.flatMap { $0 }
    waiting.removeAll()
    return held
  }

  /// The bytes counted against `uid` (for tests).
  func count(uid: UInt32) -> Int { counted[uid, default: 0] }

  /// The connections of `uid` held until it falls back (for tests).
  func held(uid: UInt32) -> Int { waiting[uid]?.count ?? 0 }
}
