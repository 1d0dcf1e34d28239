/// Adaptive group commit: how long the writer may hold a group open for
/// writes that are surely coming.
///
/// Without it, closed-loop clients settle into two halves that alternate:
/// one half's group flushes while the other half's writes queue for the
/// next flush, so each flush carries half the writers. On a fast disk that
/// pipelining pays; on a slow one it halves throughput. The writers of the
/// group just committed are answered now and send their next write one
/// round trip later, so the writer waits for exactly those (never for
/// anyone else), at most `share` of a measured flush: waiting w delays the
/// writes in hand by w and spares each late writer a whole flush F, so any
/// w < F pays. A writer that does not come back in time is not waited for
/// again until it is in a group once more.
struct GroupCommitPacer {
  /// At most this share of a flush is spent waiting.
  static let share = 0.5
  /// And never more than this, whatever a stalled disk took (a test raises
  /// it, to drive the writer's wait without racing the clock).
  var ceilingSeconds = 0.005
  /// Weight of the newest flush in the running average.
  static let weight = 0.25

  /// The connections whose writes the last commit carried, sorted, each
  /// once. (Small sorted arrays, not Sets: a Set made, hashed into and
  /// freed per group cost ~2k instructions of a toggle, callgrind.)
  private(set) var lastGroup: [UInt64] = []
  /// A running average of how long a commit takes (its sync above all).
  private(set) var flushSeconds = 0.0

  /// Records a commit of writes from `connections` that took `seconds`.
  /// `connections` is taken as the new `lastGroup` (sorted in place) and
  /// left empty with the old one's buffer: no array made per group.
  mutating func committed(_ connections: inout [UInt64], seconds: Double) {
    swap(&lastGroup, &connections)
    connections.empty()
    Self.sortOnce(&lastGroup)
    // Connection 0 is the writer's own (a timer's write): nobody sends it again.
    if lastGroup.first == 0 { lastGroup.removeFirst() }
    flushSeconds =
      flushSeconds == 0 ? seconds : flushSeconds + Self.weight * (seconds - flushSeconds)
  }

  /// Records a turn that committed nothing: nobody is owed a wait.
  mutating func committedNothing() { lastGroup = [] }

  /// The writers of the last group not among `present`: whom to wait for.
  /// Each present writer is found in the sorted `lastGroup` and marked in a
  /// word: when all came back (the usual case under load) nothing is
  /// sorted nor allocated (callgrind).
  func awaited(present: [UInt64]) -> [UInt64] {
    guard !lastGroup.isEmpty else { return [] }
    guard lastGroup.count <= 64 else {
      let present = Self.sortedOnce(present)
      return lastGroup.filter { !Self.contains(present, $0) }
    }
    var found: UInt64 = 0
    for index in present.indices {
      if let place = Self.place(of: present[index], in: lastGroup) { found |= 1 << place }
    }
    let everyone: UInt64 = lastGroup.count == 64 ? ~0 : (1 << lastGroup.count) - 1
    if found == everyone { return [] }
    var missing: [UInt64] = []
    for place in lastGroup.indices where found & (1 << place) == 0 {
      missing.append(lastGroup[place])
    }
    return missing
  }

  /// `ids` sorted, each once (in place when the caller gives them up).
  static func sortedOnce(_ ids: consuming [UInt64]) -> [UInt64] {
    var sorted = ids
    sortOnce(&sorted)
    return sorted
  }

  /// Sorts `ids` in place and removes repeats.
  static func sortOnce(_ ids: inout [UInt64]) {
    ids.sort()
    var last: UInt64?
    ids.removeAll { id in
      defer { last = id }
      return id == last
    }
  }

  /// Whether the sorted `ids` hold `id`.
  static func contains(_ ids: [UInt64], _ id: UInt64) -> Bool {
    place(of: id, in: ids) != nil
  }

  /// Where the sorted `ids` hold `id` (a binary search); nil when they do not.
  static func place(of id: UInt64, in ids: [UInt64]) -> Int? {
    var low = 0
    var high = ids.count
    while low < high {
      let mid = (low + high) / 2
      if ids[mid] < id { low = mid + 1 } else { high = mid }
    }
    return low < ids.count && ids[low] == id ? low : nil
  }

  /// How long to wait for them, in seconds.
  var budgetSeconds: Double { min(ceilingSeconds, Self.share * flushSeconds) }
}
