import SwitchCore

/// The watches of every connection, indexed so that finding who gets a
/// change costs what the change's key has, not how many watches exist:
/// exact keys by key, prefixes by prefix (looked up for each prefix length
/// in use), and catch-all watches in a set.
struct WatchHub {
  struct Watch {
    var id: String
    var connection: UInt64
    var patterns: [KeyPattern]?
    /// While replaying `since`, the last revision sent; live events wait
    /// until the replay reaches the present.
    var replayCursor: Int64?
  }

  private(set) var watches: [String: Watch] = [:]
  private var everything: Set<String> = []
  private var byKey: [String: Set<String>] = [:]
  private var byPrefix: [String: Set<String>] = [:]
  /// How many prefix patterns have each length, to look up only those.
  private var prefixLengths: [Int: Int] = [:]
  private var nextID: UInt64 = 1

  var count: Int { watches.count }

  mutating func add(connection: UInt64, patterns: [KeyPattern]?, replayFrom: Int64?) -> String {
    let id = "w\(nextID)"
    nextID += 1
    watches[id] = Watch(
      id: id, connection: connection, patterns: patterns, replayCursor: replayFrom)
    if let patterns {
      for pattern in patterns {
        switch pattern {
        case .exact(let key): byKey[key, default: []].insert(id)
        case .prefix(let prefix):
          if byPrefix[prefix, default: []].insert(id).inserted {
            prefixLengths[prefix.utf8.count, default: 0] += 1
          }
        }
      }
    } else {
      everything.insert(id)
    }
    return id
  }

  mutating func remove(_ id: String) {
    guard let watch = watches.removeValue(forKey: id) else { return }
    guard let patterns = watch.patterns else {
      everything.remove(id)
      return
    }
    for pattern in patterns {
      switch pattern {
      case .exact(let key):
        byKey[key]?.remove(id)
        if byKey[key]?.isEmpty == true { byKey[key] = nil }
      case .prefix(let prefix):
        if byPrefix[prefix]?.remove(id) != nil {
          let length = prefix.utf8.count
          prefixLengths[length]! -= 1
          if prefixLengths[length] == 0 { prefixLengths[length] = nil }
        }
        if byPrefix[prefix]?.isEmpty == true { byPrefix[prefix] = nil }
      }
    }
  }

  mutating func setReplayCursor(_ id: String, _ cursor: Int64?) {
    watches[id]?.replayCursor = cursor
  }

  /// The ids of the watches a change of `key` goes to, each once.
  func matching(_ key: String) -> Set<String> {
    var ids = everything
    if let exact = byKey[key] { ids.formUnion(exact) }
    if !prefixLengths.isEmpty {
      let utf8 = Array(key.utf8)
      for length in prefixLengths.keys where length <= utf8.count {
        let prefix = String(decoding: utf8[0..<length], as: UTF8.self)
        if let found = byPrefix[prefix] { ids.formUnion(found) }
      }
    }
    return ids
  }
}
