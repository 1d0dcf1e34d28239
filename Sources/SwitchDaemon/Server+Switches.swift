import SwitchCore
import SwitchProtocol

/// The Switch objects of the declared switches, by position in `catalog.sortedKeys`: each is
/// encoded once until it changes (most reads are of switches that did not change since the
/// last read), its schema members once per configuration. A `list` page is a range of
/// positions, so it reads its own entries and no hash table: its cost does not grow with the
/// number of switches.
struct SwitchEncodings {
  /// Where each declared key is in `catalog.sortedKeys`.
  let positions: [String: Int]
  private var entries: [Entry]

  private struct Entry {
    var template: SwitchTemplate?
    var bytes: [UInt8]?
  }

  init(_ catalog: Catalog) {
    var positions: [String: Int] = [:]
    positions.reserveCapacity(catalog.sortedKeys.count)
    for (position, key) in catalog.sortedKeys.enumerated() { positions[key] = position }
    self.positions = positions
    entries = Array(repeating: Entry(), count: catalog.sortedKeys.count)
  }

  func bytes(at position: Int) -> [UInt8]? { entries[position].bytes }

  /// Encodes the Switch at `position` and keeps it until `invalidate`.
  mutating func encode(
    at position: Int, definition: SwitchDefinition, record: SwitchRecord,
    policySource: SourceLocation?
  ) -> [UInt8] {
    let template = entries[position].template ?? SwitchTemplate(definition)
    var w = JSONWriter(capacity: 512)
    WireEncoding.writeSwitch(&w, template: template, record: record, policySource: policySource)
    entries[position] = Entry(template: template, bytes: w.bytes)
    return w.bytes
  }

  /// Forgets the encoding of `key`'s Switch (it changed), not its schema members.
  mutating func invalidate(_ key: String) {
    if let position = positions[key] { entries[position].bytes = nil }
  }
}

extension Server {
  /// The Switch object of a declared `key`; nil for a key the schema does not declare.
  func encodedSwitch(_ key: String) -> [UInt8]? {
    guard let position = encodings.positions[key] else { return nil }
    return encodedSwitch(at: position)
  }

  /// The Switch object at `position` in `catalog.sortedKeys`, encoded once until it changes.
  func encodedSwitch(at position: Int) -> [UInt8]? {
    if let bytes = encodings.bytes(at: position) { return bytes }
    let key = catalog.sortedKeys[position]
    guard let definition = catalog.switches[key], let record = records[key] else { return nil }
    return encodings.encode(
      at: position, definition: definition, record: record,
      policySource: Rules.policySource(state: record.state, rule: catalog.policies[key]))
  }

  /// Writes the Switch object of a declared `key`.
  func writeSwitch(_ w: inout JSONWriter, key: String) {
    if let bytes = encodedSwitch(key) { w.raw(bytes) }
  }

  /// Writes a JSON array of the Switch objects at `positions`.
  func writeSwitches<Positions: Sequence<Int>>(_ w: inout JSONWriter, _ positions: Positions) {
    w.raw("[")
    var first = true
    for position in positions {
      guard let bytes = encodedSwitch(at: position) else { continue }
      if !first { w.raw(",") }
      first = false
      w.raw(bytes)
    }
    w.raw("]")
  }

  func writeList(_ w: inout JSONWriter, prefix: String?) {
    w.raw("{\"revision\":")
    w.int(revision)
    w.raw(",\"switches\":")
    writeSwitches(&w, positions(withPrefix: prefix))
    w.raw("}")
  }

  /// The positions of the declared keys with `prefix`: a binary search to
  /// the first, so a page costs what it returns.
  func positions(withPrefix prefix: String?) -> Range<Int> {
    let keys = catalog.sortedKeys
    guard let prefix, !prefix.isEmpty else { return keys.indices }
    let p = prefix.utf8
    var low = 0
    var high = keys.count
    while low < high {
      let mid = (low + high) / 2
      if keys[mid].utf8.lexicographicallyPrecedes(p) { low = mid + 1 } else { high = mid }
    }
    var end = low
    while end < keys.count && keys[end].utf8.starts(with: p) { end += 1 }
    return low..<end
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
