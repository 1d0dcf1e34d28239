import SwitchCore
import SwitchProtocol

/// The Switch objects of the declared switches, by position in `catalog.sortedKeys`: each is
/// encoded once until it changes (most reads are of switches that did not change since the
/// last read), its schema members once per configuration. A `list` page is a range of
/// positions, so it reads its own entries and no hash table: its cost does not grow with the
/// number of switches.
struct SwitchEncodings {
  /// Where each declared key is in `catalog.sortedKeys` (a `KeyTable`: every
  /// call of a key looks it up here). A stored table read in place: a
  /// method of this struct doing the look-up retained each of its arrays.
  let positions: KeyTable<Int>
  private let keys: [String]
  /// Every `fenceSpacing`-th key: a prefix search runs on this small array, then inside one
  /// block of `keys`, instead of touching ~17 places of a large array (cache misses that made
  /// a page among 100,000 switches cost 1.4× one among 1,000).
  private let fences: [String]
  private static let fenceSpacing = 16
  private var entries: [Entry]
  /// Whether the switch at each position is user-scope.
  private let userScoped: [Bool]
  /// Counts what changed a Switch object as someone reads it (`invalidate`,
  /// `touch`); `stamps` holds each position's last count, so a kept list
  /// (`SwitchLists`) knows which of its objects changed since it was made.
  private(set) var stamp: UInt64 = 0
  private var stamps: [UInt64]
  /// Whether a `get` or a write's answer showed the switch at each position
  /// before (`noteRead`).
  private var readBefore: [Bool]

  private struct Entry {
    var template: SwitchTemplate?
    var bytes: [UInt8]?
    /// The State `bytes` show (the loop's record's, as every viewer's
    /// `writable` is decided from it): a `get` needs no record look-up.
    var state: SwitchState?
    /// The revision `bytes` show.
    var revision: Int64 = 0
    /// `WireEncoding.switchMiddle` of a user-scope switch, shared by its users.
    var middle: [UInt8]?
  }

  /// `sortedKeys`: the declared keys in `catalog.sortedKeys` order (by UTF-8 bytes).
  init(sortedKeys: [String], isUserScoped: (String) -> Bool = { _ in false }) {
    userScoped = sortedKeys.map(isUserScoped)
    var positions = KeyTable<Int>()
    positions.reserveCapacity(sortedKeys.count)
    for (position, key) in sortedKeys.enumerated() { positions[key] = position }
    self.positions = positions
    keys = sortedKeys
    fences = stride(from: 0, to: sortedKeys.count, by: Self.fenceSpacing).map { sortedKeys[$0] }
    entries = Array(repeating: Entry(), count: sortedKeys.count)
    stamps = Array(repeating: 0, count: sortedKeys.count)
    readBefore = Array(repeating: false, count: sortedKeys.count)
  }

  /// Notes a `get` of the switch at `position`, or a write's answer; true
  /// when one showed it before.
  mutating func noteRead(at position: Int) -> Bool {
    defer { readBefore[position] = true }
    return readBefore[position]
  }

  /// Whether what a reader sees of the switch at `position` changed after `stamp`.
  func changed(at position: Int, since stamp: UInt64) -> Bool { stamps[position] > stamp }

  /// Notes that what someone reads of the switch at `position` changed
  /// while its shared object did not (a user's own value).
  mutating func touch(at position: Int) {
    stamp += 1
    stamps[position] = stamp
  }

  /// The positions of the keys that start with `prefix` (all when nil or empty).
  func positions(withPrefix prefix: String?) -> Range<Int> {
    guard let prefix, !prefix.isEmpty else { return keys.indices }
    let p = prefix.utf8
    // The first fence not below the prefix; the first key not below it is in the block before.
    let fence = Self.lowerBound(fences, 0, fences.count, p)
    let low = Self.lowerBound(
      keys, max(0, fence - 1) * Self.fenceSpacing, min(keys.count, fence * Self.fenceSpacing), p)
    var end = low
    while end < keys.count && keys[end].utf8.starts(with: p) { end += 1 }
    return low..<end
  }

  /// The first index in `start..<end` whose key is not below `p` (`end` when none is).
  private static func lowerBound(
    _ sorted: [String], _ start: Int, _ end: Int, _ p: String.UTF8View
  ) -> Int {
    var low = start
    var high = end
    while low < high {
      let mid = (low + high) / 2
      if sorted[mid].utf8.lexicographicallyPrecedes(p) { low = mid + 1 } else { high = mid }
    }
    return low
  }

  func bytes(at position: Int) -> [UInt8]? { entries[position].bytes }

  /// Whether the schema members of the switch at `position` are kept.
  func hasTemplate(at position: Int) -> Bool { entries[position].template != nil }

  /// The kept object at `position` if it shows `revision`.
  func bytes(at position: Int, revision: Int64) -> [UInt8]? {
    entries[position].revision == revision ? entries[position].bytes : nil
  }

  /// The State of the switch at `position` while its encoding is kept.
  func state(at position: Int) -> SwitchState? { entries[position].state }

  func isUserScoped(at position: Int) -> Bool { userScoped[position] }

  /// The schema members of the Switch at `position`, made once per
  /// configuration from its `definition` (nil: no longer declared).
  mutating func template(
    at position: Int, definition: () -> SwitchDefinition?
  ) -> SwitchTemplate? {
    if let template = entries[position].template { return template }
    guard let definition = definition() else { return nil }
    let template = SwitchTemplate(definition)
    entries[position].template = template
    return template
  }

  /// Encodes the Switch at `position` and keeps it until `invalidate`.
  /// `state`: the loop's record's (a user-scope `record` is as a user who
  /// never set it reads it).
  mutating func encode(
    at position: Int, template: SwitchTemplate, record: SwitchRecord, state: SwitchState,
    policySource: SourceLocation?, observed: Bool?
  ) -> [UInt8] {
    var w = JSONWriter(capacity: template.objectCapacity)
    WireEncoding.writeSwitch(
      &w, template: template, record: record, policySource: policySource, observed: observed)
    // One array for the cache and the caller (each `w.bytes` is a copy).
    let bytes = w.bytes
    entries[position] = Entry(
      template: template, bytes: bytes, state: state, revision: record.revision)
    return bytes
  }

  /// The members every user reads alike of the user-scope Switch at
  /// `position` (`WireEncoding.switchMiddle`), kept until `invalidate`.
  mutating func middle(
    at position: Int, template: SwitchTemplate, state: SwitchState,
    policySource: () -> SourceLocation?
  ) -> [UInt8] {
    if let middle = entries[position].middle { return middle }
    let middle = WireEncoding.switchMiddle(
      template: template, state: state, policySource: policySource())
    entries[position].middle = middle
    return middle
  }

  /// Forgets the encoding of `key`'s Switch (it changed), not its schema members.
  mutating func invalidate(_ key: String) {
    if let position = positions[key] { invalidate(at: position) }
  }

  /// The same, by position.
  mutating func invalidate(at position: Int) {
    touch(at: position)
    entries[position].bytes = nil
    entries[position].state = nil
    entries[position].middle = nil
  }
}

extension Server {
  /// The schema members of `definition`'s Switch: the cached ones while
  /// its key is declared (at `position`, which the caller has looked up),
  /// else made now.
  func template(of definition: SwitchDefinition, at position: Int?) -> SwitchTemplate {
    guard let position, let template = encodings.template(at: position, definition: { definition })
    else { return SwitchTemplate(definition) }
    return template
  }

  /// The Switch object of a declared `key`; nil for a key the schema does not declare.
  func encodedSwitch(_ key: String) -> [UInt8]? {
    guard let position = encodings.positions[key] else { return nil }
    return encodedSwitch(at: position)
  }

  /// The Switch object at `position` in `catalog.sortedKeys`, encoded once until it changes.
  func encodedSwitch(at position: Int) -> [UInt8]? {
    encodedSwitch(at: position, record: records[catalog.sortedKeys[position]])
  }

  /// The same, given the loop's record of the switch (read only when the
  /// object must be encoded again: a caller that holds it spares a look-up).
  func encodedSwitch(at position: Int, record: @autoclosure () -> SwitchRecord?) -> [UInt8]? {
    if let bytes = encodings.bytes(at: position) { return bytes }
    let key = catalog.sortedKeys[position]
    guard let template = encodings.template(at: position, definition: { catalog.switches[key] }),
      let record = record()
    else { return nil }
    let parts = objectParts(key, scope: template.scope, record: record)
    return encodings.encode(
      at: position, template: template, record: parts.record, state: record.state,
      policySource: parts.policySource, observed: parts.observed)
  }

  /// What a Switch object shows of `record` besides its schema: a
  /// user-scope switch shared by every viewer as a user who never set it
  /// reads it. Each table is asked only when it can hold something for
  /// this switch (a look-up hashes the key: this runs after every change).
  private func objectParts(_ key: String, scope: Scope, record: SwitchRecord)
    -> (record: SwitchRecord, policySource: SourceLocation?, observed: Bool?)
  {
    var shown = record
    if scope == .user, let definition = catalog.switches[key] {
      shown = Visibility.record(record, own: nil, definition: definition)
    }
    let state = record.state
    return (
      shown, Rules.policySource(state: state, rule: policy(of: key, holding: state)),
      observations[key]
    )
  }

  /// The object `encodedSwitch` would keep, written with `caller`'s
  /// `writable` and nothing kept (`writeSwitchAsSeen(keeping: false)`).
  func writeUnkeptSwitch(_ w: inout JSONWriter, at position: Int, for caller: Caller, scope: Scope)
  {
    let key = catalog.sortedKeys[position]
    guard let definition = catalog.switches[key], let record = records[key] else { return }
    let parts = objectParts(key, scope: definition.scope, record: record)
    // Straight from the definition: a template made for one object cost
    // more than the object.
    WireEncoding.writeSwitch(
      &w, definition: definition, record: parts.record, policySource: parts.policySource,
      observed: parts.observed,
      writable: writability(key, state: record.state, for: caller, scope: scope))
  }

  /// Whether `caller` may change `key`'s value now, and if not why
  /// (`writable`, `writableReason`).
  func writability(_ key: String, for caller: Caller, scope: Scope = .system) -> Writability {
    guard let record = records[key] else { return .refused(.unknownSwitch(key: key)) }
    return writability(key, state: record.state, for: caller, scope: scope)
  }

  /// The same of `key`'s switch in `state` (the loop's record's).
  func writability(
    _ key: String, state: SwitchState, for caller: Caller, scope: Scope = .system
  ) -> Writability {
    Rules.writability(
      key: key, state: state, policy: policy(of: key, holding: state), caller: caller,
      scope: scope)
  }

  /// `key`'s policy rule when the rules read it for a switch in `state`
  /// (`Rules.readsPolicy`); nil else, without a look-up.
  func policy(of key: String, holding state: SwitchState) -> PolicyRule? {
    guard Rules.readsPolicy(state) else { return nil }
    return catalog.policies[key]
  }

  /// Writes the Switch object of a declared `key` as `viewpoint` reads it
  /// (`writable` and `writableReason` for `caller`).
  func writeSwitchAsSeen(
    _ w: inout JSONWriter, key: String, for caller: Caller, viewpoint: Viewpoint
  ) {
    guard let position = encodings.positions[key] else { return }
    writeSwitchAsSeen(&w, at: position, for: caller, viewpoint: viewpoint)
  }

  /// Writes a JSON array of the Switch objects at `positions` as `viewpoint`
  /// reads them (`writable` and `writableReason` for `caller`); system
  /// switches' objects are encoded once until they change.
  func writeSwitches<Positions: Sequence<Int>>(
    _ w: inout JSONWriter, _ positions: Positions, for caller: Caller, viewpoint: Viewpoint
  ) {
    let stored = positions.lazy.filter { self.isStored(at: $0) }
    ResultEncoding.writeArray(&w, stored) { w, position in
      writeSwitchAsSeen(&w, at: position, for: caller, viewpoint: viewpoint)
    }
  }

  /// Answers `pending` with the result `body` writes, the array of the
  /// Switch objects at `positions` where it calls `switches` (a `list`, a
  /// `watch` snapshot of every switch or of a prefix). A large range comes
  /// from its kept array (`keptList`), queued as it is and shared
  /// (`answer(_:on:around:_:)`); a small one is written as asked.
  func answer(
    _ pending: PendingRequest, on connection: Connection, switchesAt positions: Range<Int>,
    for caller: Caller, viewpoint: Viewpoint,
    _ body: (inout JSONWriter, _ switches: (inout JSONWriter) -> Void) -> Void
  ) {
    guard positions.count >= Self.smallestKeptList else {
      return answer(pending, on: connection) { w in
        body(&w) { writeSwitches(&$0, positions, for: caller, viewpoint: viewpoint) }
      }
    }
    // A notification wants no answer: nothing to make, or to push out of the cache.
    guard pending.answer != nil else { return }
    answer(
      pending, on: connection, around: keptList(positions, for: caller, viewpoint: viewpoint), body)
  }

  /// The Switch objects at `positions` as `viewpoint` reads them, comma-
  /// separated: the array kept for the same question, made again from
  /// what changed since it was made, so that asked again it costs that.
  func keptList(_ positions: Range<Int>, for caller: Caller, viewpoint: Viewpoint) -> [UInt8] {
    let key = SwitchLists.Key(positions: positions, caller: caller, viewpoint: viewpoint)
    let stamp = encodings.stamp
    let old = switchLists.take(key)
    let list: SwitchLists.Kept
    if let old, old.stamp == stamp {
      list = old
    } else {
      list = SwitchLists.make(
        key, stamp: stamp, from: old,
        changed: { self.encodings.changed(at: $0, since: $1) },
        stored: { self.isStored(at: $0) },
        write: {
          self.writeSwitchAsSeen(&$0, at: $1, for: caller, viewpoint: viewpoint, keeping: false)
        })
    }
    let bytes = list.bytes
    switchLists.keep(list)
    return bytes
  }

  /// Below this many positions a list is written as it is asked: it costs
  /// little, and would push a large one out of the cache.
  static let smallestKeptList = 64

  /// The snapshot of the switches matching `patterns` (all when nil).
  func writeSwitches(
    _ w: inout JSONWriter, matching patterns: [KeyPattern]?, for caller: Caller,
    viewpoint: Viewpoint
  ) {
    writeSwitches(&w, positions(matching: patterns), for: caller, viewpoint: viewpoint)
  }

  /// Whether the declared switch at `position` has a record. It always
  /// has (the writer inserts it); one that does not is left out of lists.
  /// Its object kept is proof enough, without a look-up; else the look-up
  /// finds it without copying the record out (a user-scope switch's `get`
  /// as a user: ~400 instructions, callgrind).
  func isStored(at position: Int) -> Bool {
    encodings.state(at: position) != nil
      || records.index(forKey: catalog.sortedKeys[position]) != nil
  }

  /// The positions of the declared keys with `prefix`: a search to the
  /// first, so a page costs what it returns.
  func positions(withPrefix prefix: String?) -> Range<Int> {
    encodings.positions(withPrefix: prefix)
  }

  /// The positions of the declared keys matching any of `patterns` (all when
  /// nil), in key order, each once; costs what matches, not how many exist.
  func positions(matching patterns: [KeyPattern]?) -> [Int] {
    guard let patterns else { return Array(catalog.sortedKeys.indices) }
    var found: Set<Int> = []
    for pattern in patterns {
      switch pattern {
      case .exact(let key): if let position = encodings.positions[key] { found.insert(position) }
      case .prefix(let prefix): found.formUnion(positions(withPrefix: prefix))
      }
    }
    return found.sorted()
  }
}
