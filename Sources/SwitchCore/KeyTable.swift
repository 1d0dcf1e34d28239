/// A table by switch key whose look-ups hash with `KeyHash` instead of
/// SipHash: the tables a write looks its key up in (the schema, the
/// writer's and the loop's records). Reads and writes like a Dictionary of
/// String keys; iterating it yields `(key, value)` pairs.
public struct KeyTable<Value>: Sequence {
  public typealias Index = Dictionary<HashedKey, Value>.Index
  @usableFromInline var table: [HashedKey: Value]

  public init() { table = [:] }

  public init(_ entries: [String: Value]) {
    table = [:]
    table.reserveCapacity(entries.count)
    for (key, value) in entries { table[HashedKey(key)] = value }
  }

  @inlinable
  public subscript(key: String) -> Value? {
    // An empty table (observations, most of the time) costs no hash.
    get { table.isEmpty ? nil : table[HashedKey(key)] }
    set { table[HashedKey(key)] = newValue }
  }

  /// A look-up by a key hashed before: a write's key is hashed once, and
  /// each of the seven tables it visits on both threads had hashed it
  /// again (~60 instructions each, callgrind).
  @inlinable
  public subscript(key: HashedKey) -> Value? {
    get { table.isEmpty ? nil : table[key] }
    set { table[key] = newValue }
  }

  /// The value of `key`, or `defaultValue` put there when it has none, to
  /// change in place (as Dictionary's).
  public subscript(key: String, default defaultValue: @autoclosure () -> Value) -> Value {
    get { self[HashedKey(key), default: defaultValue()] }
    _modify { yield &self[HashedKey(key), default: defaultValue()] }
  }

  public subscript(key: HashedKey, default defaultValue: @autoclosure () -> Value) -> Value {
    get { table[key] ?? defaultValue() }
    _modify { yield &table[key, default: defaultValue()] }
  }

  /// Where `key` is, for a read and a write back with one look-up.
  @inlinable
  public func index(forKey key: String) -> Index? {
    table.isEmpty ? nil : table.index(forKey: HashedKey(key))
  }

  @inlinable
  public func index(forKey key: HashedKey) -> Index? {
    table.isEmpty ? nil : table.index(forKey: key)
  }

  /// The value at `slot` (`index(forKey:)`); the key stays.
  @inlinable
  public subscript(slot slot: Index) -> Value {
    // Read in place: a getter copied the value (a nested table: a retain
    // and a release) for a look-up into it.
    _read { yield table.values[slot] }
    _modify { yield &table.values[slot] }
  }

  public var count: Int { table.count }
  public var isEmpty: Bool { table.isEmpty }
  public var keys: LazyMapSequence<Dictionary<HashedKey, Value>.Keys, String> {
    table.keys.lazy.map(\.string)
  }
  public var values: Dictionary<HashedKey, Value>.Values { table.values }

  public mutating func reserveCapacity(_ count: Int) { table.reserveCapacity(count) }

  @discardableResult
  public mutating func removeValue(forKey key: String) -> Value? {
    table.removeValue(forKey: HashedKey(key))
  }

  public func makeIterator() -> Iterator { Iterator(base: table.makeIterator()) }

  public struct Iterator: IteratorProtocol {
    var base: Dictionary<HashedKey, Value>.Iterator
    public mutating func next() -> (key: String, value: Value)? {
      base.next().map { (key: $0.key.string, value: $0.value) }
    }
  }
}

extension KeyTable: ExpressibleByDictionaryLiteral {
  public init(dictionaryLiteral elements: (String, Value)...) {
    self.init()
    for (key, value) in elements { self[key] = value }
  }
}

extension KeyTable: Equatable where Value: Equatable {}
extension KeyTable: Sendable where Value: Sendable {}
