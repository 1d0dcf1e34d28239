import SwitchCore
import SwitchProtocol

/// The arrays of Switch objects the last few `list` and `watch` snapshots
/// answered, each kept with where every switch's object ends in it, so
/// that the same question asked again costs what changed since, not every
/// switch. A list of 1,000 switches made from the cached objects cost the
/// loop ~2.1M instructions (callgrind), ~0.4 ms in one go: a client
/// listing again and again held every other client's `get` for that long
/// (p99 5-7× idle). Made again from the kept array, only the switches
/// whose objects changed since (`SwitchEncodings.stamp`) are written; the
/// rest is copied in runs.
///
/// An array is kept for one caller's rights and viewpoint (they decide
/// `writable`, `writableReason` and a user-scope switch's value) and a
/// range of positions; a reload starts a new cache, as it starts new
/// encodings. Bounded: `slots` arrays, `maxBytes` in all (10,000
/// switches' list is ~5.4 MB; one larger is made each time, not kept).
struct SwitchLists {
  struct Key: Equatable {
    var positions: Range<Int>
    /// The caller's rights (`Caller.rights`): two processes of one user share a list.
    var caller: Caller
    var viewpoint: Viewpoint

    init(positions: Range<Int>, caller: Caller, viewpoint: Viewpoint) {
      self.positions = positions
      self.caller = caller.rights
      self.viewpoint = viewpoint
    }
  }

  struct Kept {
    var key: Key
    /// `SwitchEncodings.stamp` when it was made: a position stamped later changed since.
    var stamp: UInt64
    /// The objects, comma-separated, without the brackets.
    var bytes: [UInt8]
    /// Where the object at `key.positions.lowerBound + i` (with the comma
    /// before it) ends in `bytes`; a switch with no record writes nothing.
    var ends: [Int]
  }

  static let slots = 4
  static let maxBytes = 8 << 20

  /// Most recently used last.
  private var kept: [Kept] = []
  private var keptBytes = 0

  var count: Int { kept.count }

  /// The array kept for `key`, taken out of the cache (`keep` puts it back).
  mutating func take(_ key: Key) -> Kept? {
    guard let index = kept.firstIndex(where: { $0.key == key }) else { return nil }
    keptBytes -= kept[index].bytes.count
    return kept.remove(at: index)
  }

  /// Keeps `list` as the most recently used, dropping the least recently
  /// used beyond the bounds; one over `maxBytes` is not kept.
  mutating func keep(_ list: consuming Kept) {
    guard list.bytes.count <= Self.maxBytes else { return }
    while !kept.isEmpty
      && (kept.count >= Self.slots || keptBytes + list.bytes.count > Self.maxBytes)
    {
      keptBytes -= kept.removeFirst().bytes.count
    }
    keptBytes += list.bytes.count
    kept.append(list)
  }

  mutating func removeAll() {
    kept.removeAll()
    keptBytes = 0
  }

  /// The array for `key` as of `stamp`: from `old` (kept for the same key)
  /// with only the positions `changed` since it was made written again, or
  /// all written when there is none. `stored`: whether the position's
  /// switch has a record (one without writes nothing); `write` writes its
  /// object.
  static func make(
    _ key: Key, stamp: UInt64, from old: Kept?, changed: (Int, UInt64) -> Bool,
    stored: (Int) -> Bool, write: (inout JSONWriter, Int) -> Void
  ) -> Kept {
    if let old,
      let remade = remake(old, stamp: stamp, changed: changed, stored: stored, write: write)
    {
      return remade
    }
    // Written in place, never copied whole: a writer's buffer copied into
    // the array at the end held the list twice for a moment (10.6 MB of
    // VmHWM with 10,000 switches). Reserved generously: what is never
    // written adds nothing to the resident set (fresh pages stay unmapped;
    // memory malloc reuses was resident already).
    var bytes: [UInt8] = []
    bytes.reserveCapacity(max(old?.bytes.count ?? 0, key.positions.count * Self.roomPerObject))
    var ends: [Int] = []
    ends.reserveCapacity(key.positions.count)
    var one = JSONWriter(capacity: 1024)
    for position in key.positions {
      if stored(position) {
        one.removeAll()
        if !bytes.isEmpty { one.raw(",") }
        write(&one, position)
        one.withBytes { bytes.append(contentsOf: $0) }
      }
      ends.append(bytes.count)
    }
    return Kept(key: key, stamp: stamp, bytes: bytes, ends: ends)
  }

  /// Bytes reserved a Switch object when a list is first made (~530 with
  /// a label and a description of a sentence each).
  static let roomPerObject = 1024

  /// `old` with the positions changed since its stamp written again; nil
  /// when a switch gained or lost its record (only a reload does that, and
  /// it starts a new cache), so the caller writes every position.
  private static func remake(
    _ old: Kept, stamp: UInt64, changed: (Int, UInt64) -> Bool, stored: (Int) -> Bool,
    write: (inout JSONWriter, Int) -> Void
  ) -> Kept? {
    let positions = old.key.positions
    var bytes: [UInt8] = []
    bytes.reserveCapacity(old.bytes.count + old.bytes.count / 8)
    var ends = old.ends
    var one = JSONWriter(capacity: 1024)
    var runStart = 0  // in old.bytes: the unchanged bytes not yet copied start here
    var shift = 0  // an unchanged object's end in `bytes` minus its end in old.bytes
    for i in 0..<positions.count {
      let position = positions.lowerBound + i
      guard changed(position, old.stamp) else {
        ends[i] = old.ends[i] + shift
        continue
      }
      let oldStart = i == 0 ? 0 : old.ends[i - 1]
      let hadObject = old.ends[i] > oldStart
      guard stored(position) == hadObject else { return nil }
      bytes.append(contentsOf: old.bytes[runStart..<oldStart])
      if hadObject {
        one.removeAll()
        // The comma goes where the old one was: after any object before.
        if oldStart > 0 { one.raw(",") }
        write(&one, position)
        one.withBytes { bytes.append(contentsOf: $0) }
      }
      ends[i] = bytes.count
      runStart = old.ends[i]
      shift = bytes.count - old.ends[i]
    }
    bytes.append(contentsOf: old.bytes[runStart...])
    return Kept(key: old.key, stamp: stamp, bytes: bytes, ends: ends)
  }
}
