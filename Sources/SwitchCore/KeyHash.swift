/// A hash of a switch key for the tables on every call's path (issue 26):
/// Swift's String hash is SipHash-1-3 through `Hasher`, ~250 instructions
/// for a ten-byte key before the table is even probed (callgrind), and a
/// toggle looked up its key in five tables. This one mixes the UTF-8 bytes
/// eight at a time, ~70 instructions with the access to the bytes. A
/// `HashedKey` is hashed once under seed 0 and a table's seed mixed in
/// after (one exclusive or); the tables by key and user mix the user
/// into the seed (`HashedKey.hash(user:seed:)`).
///
/// It is not keyed against an attacker who chooses keys to collide (keys
/// that collide do so in every table and every process): the tables it
/// serves hold only keys the configuration declares or the database
/// stores, so a client can look keys up but never add one, and a lookup
/// of an unknown key costs one probe sequence of declared keys.
public enum KeyHash {
  /// The hash of `key` under `seed` (a table's own, `_rawHashValue(seed:)`).
  @inlinable
  public static func of(_ key: String, seed: Int) -> Int {
    let hashed = key.utf8.withContiguousStorageIfAvailable { mix($0, seed: seed) }
    if let hashed { return hashed }
    return mix(Array(key.utf8), seed: seed)  // a bridged string: never one of ours
  }

  @inlinable @inline(__always)
  static func mix(_ bytes: UnsafeBufferPointer<UInt8>, seed: Int) -> Int {
    let count = bytes.count
    var h =
      UInt64(bitPattern: Int64(seed)) ^ (UInt64(truncatingIfNeeded: count) &* 0x9E37_79B9_7F4A_7C15)
    var tail: UInt64 = 0
    if let base = bytes.baseAddress {
      let raw = UnsafeRawPointer(base)
      var offset = 0
      while offset + 8 <= count {
        h = fold(h, raw.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
        offset += 8
      }
      // The last 0–7 bytes in at most three loads, not a byte at a time
      // (~40 instructions of a ten-byte key's ~60, callgrind).
      var shift: UInt64 = 0
      if count - offset >= 4 {
        tail = UInt64(raw.loadUnaligned(fromByteOffset: offset, as: UInt32.self))
        offset += 4
        shift = 32
      }
      if count - offset >= 2 {
        tail |= UInt64(raw.loadUnaligned(fromByteOffset: offset, as: UInt16.self)) << shift
        offset += 2
        shift += 16
      }
      if count - offset >= 1 {
        tail |= UInt64(raw.load(fromByteOffset: offset, as: UInt8.self)) << shift
      }
    }
    h = fold(h, tail)
    return Int(bitPattern: UInt(truncatingIfNeeded: finalized(h)))
  }

  /// Every bit of `h` into every bit of the result (MurmurHash3's fmix64):
  /// a table indexes by the low bits, and a fold leaves a difference in a
  /// word's upper half (the last bytes of `org.example.devices.toggle.c17`)
  /// out of them: 1,000 such keys fell into 146 of 1,024 buckets (tests).
  @inlinable @inline(__always)
  static func finalized(_ h: UInt64) -> UInt64 {
    var h = h
    h ^= h >> 33
    h &*= 0xFF51_AFD7_ED55_8CCD
    h ^= h >> 33
    h &*= 0xC4CE_B9FE_1A85_EC53
    return h ^ (h >> 33)
  }

  @inlinable
  static func mix(_ bytes: [UInt8], seed: Int) -> Int {
    bytes.withUnsafeBufferPointer { mix($0, seed: seed) }
  }

  /// A hash made under seed 0, under `seed` instead (a table's own): the
  /// seed only permutes the table's buckets, so one exclusive or does (a
  /// fold cost ~12 instructions a look-up, callgrind).
  @inlinable @inline(__always)
  public static func reseeded(_ hash: Int, seed: Int) -> Int { hash ^ seed }

  /// One word into the state: multiply, then fold the high bits down
  /// (the tables index by the low bits).
  @inlinable @inline(__always)
  static func fold(_ h: UInt64, _ word: UInt64) -> UInt64 {
    let m = (h ^ word) &* 0xBF58_476D_1CE4_E5B9
    return m ^ (m >> 31)
  }
}

/// A String key of a hash table hashed with `KeyHash` (see there for why,
/// and for which tables). Equal when the strings are.
public struct HashedKey: Hashable, Sendable {
  public let string: String
  /// `string`'s KeyHash, made once. A table mixes its own seed into it
  /// (`_rawHashValue`), and `==` tells keys apart by it before their text:
  /// Swift's tables keep no hashes, so each occupied bucket on a probe
  /// sequence (~2.7 a look-up) compared two Strings, ~90 instructions each
  /// for keys past 15 bytes, ~1.3k of a toggle with 29-byte keys (callgrind).
  public let hash: Int

  @inlinable
  public init(_ string: String) {
    self.string = string
    hash = KeyHash.of(string, seed: 0)
  }

  @inlinable
  public static func == (a: HashedKey, b: HashedKey) -> Bool {
    a.hash == b.hash && a.string == b.string
  }

  @inlinable
  public func hash(into hasher: inout Hasher) { hasher.combine(hash) }

  /// What a Dictionary or Set calls for its bucket (the seed is the
  /// table's): `hash(into:)`'s default would run SipHash.
  @inlinable
  public func _rawHashValue(seed: Int) -> Int { KeyHash.reseeded(hash, seed: seed) }

  /// The hash of this key and a user (nil: the switch itself) under a
  /// table's `seed`: the tables by key and user (the log's chains, the
  /// writer's users' values and timers), where SipHash cost more than the
  /// rest of a look-up (~600 instructions a toggle of a user-scope switch,
  /// callgrind). The user goes through `fmix64` with the key's hash, not
  /// only into the low bits a table indexes by: uids a table's size apart
  /// (containers' ranges, 65,536 apart) would share a bucket (tests).
  @inlinable
  public func hash(user: UInt32?, seed: Int) -> Int {
    guard let user else { return KeyHash.reseeded(hash, seed: seed) }
    let mixed = KeyHash.finalized(
      UInt64(bitPattern: Int64(hash)) ^ ((UInt64(user) &+ 1) &* 0x9E37_79B9_7F4A_7C15))
    return KeyHash.reseeded(Int(bitPattern: UInt(truncatingIfNeeded: mixed)), seed: seed)
  }
}

/// A literal key, hashed (tests and fixed keys).
extension HashedKey: ExpressibleByStringLiteral {
  public init(stringLiteral value: String) { self.init(value) }
}
