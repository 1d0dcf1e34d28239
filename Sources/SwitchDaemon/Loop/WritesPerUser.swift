/// The writes each uid has at the writer, so that one user's flood cannot
/// fill every group commit (issue 12): a group carries at most `limit`
/// writes of any one non-administrator, however many connections that user
/// opens, so another user's lone write waits for groups of bounded size.
/// A connection whose uid is at the limit waits, and is resumed when a
/// write of that uid is answered. Owned by the event loop.
struct WritesPerUser {
  let limit: Int
  private var inFlight: [UInt32: Int] = [:]
  /// Connections waiting for their uid to drop below the limit.
  private var waiting: [UInt32: Set<UInt64>] = [:]

  init(limit: Int) { self.limit = limit }

  /// Whether a write of `uid` may be handed over now. If not, `connection`
  /// is remembered and handed back by `finished` once it may.
  mutating func mayHandOver(uid: UInt32, connection: UInt64) -> Bool {
    if inFlight[uid, default: 0] < limit { return true }
    waiting[uid, default: []].insert(connection)
    return false
  }

  /// A write of `uid` went to the writer.
  mutating func handedOver(uid: UInt32) { inFlight[uid, default: 0] += 1 }

  /// `count` writes of `uid` were answered (or their connection closed).
  /// - Returns: the connections to resume, now that `uid` is below the limit.
  mutating func finished(uid: UInt32, count: Int = 1) -> Set<UInt64> {
    guard count > 0, let held = inFlight[uid] else { return [] }
    inFlight[uid] = held > count ? held - count : nil
    guard inFlight[uid, default: 0] < limit else { return [] }
    return waiting.removeValue(forKey: uid) ?? []
  }

  /// Writes `uid` has in flight (for tests).
  func count(uid: UInt32) -> Int { inFlight[uid, default: 0] }
}
