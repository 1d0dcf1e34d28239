import Glibc

/// The declared keys longer than 15 UTF-8 bytes, each one String that every
/// table holding the key shares (issue 26).
///
/// A key of up to 15 bytes is a small String: its bytes live in the value,
/// and two equal ones compare as two words. A longer key is a heap object,
/// and a request's key decoded into a String of its own cost, per toggle
/// of an 18-byte key: an allocation and a free (~400 instructions), and a
/// byte-by-byte compare at each table that found it (~600; `HashedKey`'s
/// `==` compares the text once the hashes agree). Two Strings that share
/// their storage compare equal at the first word. So the decoder takes a
/// declared key's String from here (`key(_:)`), and the catalog, the
/// stored records and values, and the next configuration share theirs
/// (`shared(_:)`, `Catalog.sharingKeys(with:)`).
///
/// Only speed depends on it: a key not found here is made a String of its
/// own and compares equal all the same.
public struct KeyInterner: Sendable {
  /// Open addressing, by `KeyHash` under seed 0 (a `HashedKey`'s own), at
  /// most half full; nil: an empty slot.
  private let slots: [HashedKey?]

  /// Keys of at most this many bytes are small Strings: nothing to share.
  public static let smallKeyBytes = 15

  public init() { slots = [] }

  public init(_ keys: some Sequence<String>) {
    let long = keys.filter { $0.utf8.count > Self.smallKeyBytes }
    guard !long.isEmpty else {
      slots = []
      return
    }
    var capacity = 8
    while capacity < 2 * long.count { capacity *= 2 }
    var slots = [HashedKey?](repeating: nil, count: capacity)
    for key in long {
      let hashed = HashedKey(key)
      var index = hashed.hash & (capacity - 1)
      while let other = slots[index] {
        if other == hashed { break }
        index = (index + 1) & (capacity - 1)
      }
      slots[index] = hashed
    }
    self.slots = slots
  }

  public var isEmpty: Bool { slots.isEmpty }

  /// The shared String of the declared key whose UTF-8 bytes are `bytes`;
  /// nil when no declared long key has them.
  public func key(_ bytes: UnsafeBufferPointer<UInt8>) -> String? {
    guard bytes.count > Self.smallKeyBytes, !slots.isEmpty else { return nil }
    return find(hash: KeyHash.mix(bytes, seed: 0)) { candidate in
      candidate.string.utf8.withContiguousStorageIfAvailable { stored in
        guard stored.count == bytes.count, let a = stored.baseAddress, let b = bytes.baseAddress
        else { return false }
        return memcmp(a, b, bytes.count) == 0
      } ?? false
    }?.string
  }

  /// `key` with its declared String, when it is a declared long key; else `key`.
  public func shared(_ key: HashedKey) -> HashedKey {
    guard key.string.utf8.count > Self.smallKeyBytes, !slots.isEmpty else { return key }
    return find(hash: key.hash) { $0 == key } ?? key
  }

  /// `key`'s declared String, when it is a declared long key; else `key`.
  public func shared(_ key: String) -> String {
    guard key.utf8.count > Self.smallKeyBytes, !slots.isEmpty else { return key }
    return shared(HashedKey(key)).string
  }

  private func find(hash: Int, where matches: (HashedKey) -> Bool) -> HashedKey? {
    let mask = slots.count - 1
    var index = hash & mask
    while let candidate = slots[index] {
      if candidate.hash == hash && matches(candidate) { return candidate }
      index = (index + 1) & mask
    }
    return nil
  }
}
