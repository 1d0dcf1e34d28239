import SwitchCore
import SwitchProtocol

/// A declared switch's encodings: its schema members (until the schema is reloaded) and its
/// whole Switch object (until it changes).
struct EncodedSwitch {
  let template: SwitchTemplate
  var bytes: [UInt8]?
}

extension Server {
  /// The Switch object of a declared `key`, encoded once until it changes;
  /// nil for a key the schema does not declare. One lookup when cached.
  func encodedSwitch(_ key: String) -> [UInt8]? {
    let cached = encodedSwitches[key]
    if let bytes = cached?.bytes { return bytes }
    guard let definition = catalog.switches[key], let record = records[key] else { return nil }
    let template = cached?.template ?? SwitchTemplate(definition)
    var encoded = JSONWriter(capacity: 512)
    WireEncoding.writeSwitch(
      &encoded, template: template, record: record,
      policySource: Rules.policySource(state: record.state, rule: catalog.policies[key]))
    encodedSwitches[key] = EncodedSwitch(template: template, bytes: encoded.bytes)
    return encoded.bytes
  }

  /// Writes the Switch object of a declared `key`.
  func writeSwitch(_ w: inout JSONWriter, key: String) {
    if let bytes = encodedSwitch(key) { w.raw(bytes) }
  }

  /// Writes a JSON array of the Switch objects of `keys`.
  func writeSwitches<Keys: Sequence<String>>(_ w: inout JSONWriter, _ keys: Keys) {
    w.raw("[")
    var first = true
    for key in keys {
      if !first { w.raw(",") }
      first = false
      writeSwitch(&w, key: key)
    }
    w.raw("]")
  }

  func writeList(_ w: inout JSONWriter, prefix: String?) {
    w.raw("{\"revision\":")
    w.int(revision)
    w.raw(",\"switches\":")
    writeSwitches(&w, keys(withPrefix: prefix))
    w.raw("}")
  }

  /// Declared keys with `prefix`, in order: a binary search to the first,
  /// so a page costs what it returns.
  func keys(withPrefix prefix: String?) -> ArraySlice<String> {
    let keys = catalog.sortedKeys
    guard let prefix, !prefix.isEmpty else { return keys[...] }
    let p = prefix.utf8
    var low = 0
    var high = keys.count
    while low < high {
      let mid = (low + high) / 2
      if keys[mid].utf8.lexicographicallyPrecedes(p) { low = mid + 1 } else { high = mid }
    }
    var end = low
    while end < keys.count && keys[end].utf8.starts(with: p) { end += 1 }
    return keys[low..<end]
  }

  /// Declared keys matching any of `patterns` (all when nil), sorted, each
  /// once; costs what matches, not how many switches exist.
  func keys(matching patterns: [KeyPattern]?) -> [String] {
    guard let patterns else { return Array(catalog.sortedKeys) }
    var found: Set<String> = []
    for pattern in patterns {
      switch pattern {
      case .exact(let key): if catalog.switches[key] != nil { found.insert(key) }
      case .prefix(let prefix): found.formUnion(keys(withPrefix: prefix))
      }
    }
    return found.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
  }
}
