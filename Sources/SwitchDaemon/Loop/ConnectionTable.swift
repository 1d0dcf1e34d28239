/// The open connections by id. Every request's readiness and every answer
/// looks its connection up here, and the ids are the loop's own counter,
/// never a client's choice: they are hashed with one multiply instead of
/// SipHash through `Hasher` (~90 instructions a look-up, callgrind).
struct ConnectionTable {
  struct ID: Hashable {
    let value: UInt64

    func _rawHashValue(seed: Int) -> Int {
      let mixed = (value ^ UInt64(bitPattern: Int64(seed))) &* 0x9E37_79B9_7F4A_7C15
      return Int(bitPattern: UInt(truncatingIfNeeded: mixed ^ (mixed >> 32)))
    }
  }

  private var table: [ID: Connection] = [:]

  subscript(id: UInt64) -> Connection? {
    get { table[ID(value: id)] }
    set { table[ID(value: id)] = newValue }
  }

  var values: Dictionary<ID, Connection>.Values { table.values }
  var count: Int { table.count }

  @discardableResult
  mutating func removeValue(forKey id: UInt64) -> Connection? {
    table.removeValue(forKey: ID(value: id))
  }
}
