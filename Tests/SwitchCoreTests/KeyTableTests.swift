import Testing

@testable import SwitchCore

/// The key tables of the write path hash with `KeyHash` (issue 26): they
/// must still behave as a Dictionary of String keys, and the hash must
/// spread keys that differ in one byte, in length, or only past the first
/// eight bytes.
@Suite struct KeyTableTests {
  @Test func readsWritesRemovesAndIteratesLikeADictionary() {
    var table: KeyTable<Int> = ["wifi": 1, "bluetooth": 2]
    table["notifications.marketing-emails.weekly-digest"] = 3
    table["wifi"] = 10
    #expect(table["wifi"] == 10)
    #expect(table["bluetooth"] == 2)
    #expect(table["notifications.marketing-emails.weekly-digest"] == 3)
    #expect(table["Wifi"] == nil)
    #expect(table.count == 3)
    table.removeValue(forKey: "bluetooth")
    table["nothing"] = nil
    #expect(table["bluetooth"] == nil)
    let pairs = Dictionary(uniqueKeysWithValues: table.map { ($0.key, $0.value) })
    #expect(pairs == ["wifi": 10, "notifications.marketing-emails.weekly-digest": 3])
    #expect(Set(table.keys) == ["wifi", "notifications.marketing-emails.weekly-digest"])
  }

  @Test func aDefaultValueIsPutInPlaceToChange() {
    // How the users' values are written: by key, then by uid.
    var table: KeyTable<[UInt32: Bool]> = [:]
    table["email", default: [:]][1000] = true
    table["email", default: [:]][1001] = false
    #expect(table["email"] == [1000: true, 1001: false])
    #expect(table["absent", default: [:]].isEmpty)
    #expect(table["absent"] == nil)
    #expect(table.count == 1)
  }

  @Test func keysThatDifferLateSpreadOverATablesBucketsUnderAnySeed() {
    // A table mixes its seed into a key's kept hash with one exclusive or:
    // 1,000 keys differing only in their last bytes still fill about as
    // many of 1,024 buckets as random ones would (~632), whatever the seed.
    let keys = (0..<1000).map { HashedKey("org.example.devices.toggle.c\($0)") }
    for seed in [0, 1, 0x5bd1_e995, -7] {
      let buckets = Set(keys.map { $0._rawHashValue(seed: seed) & 1023 })
      #expect(buckets.count > 580, "seed \(seed): \(buckets.count) buckets")
    }
  }

  @Test func aUsersValuesTableReadsAndWritesLikeADictionary() {
    func value(_ revision: Int64) -> UserValue {
      UserValue(checked: revision % 2 == 0, revision: revision, changedAt: revision)
    }
    var table: UserValueTable = [1000: value(1)]
    #expect(table.updateValue(value(2), forKey: 1000) == value(1))
    #expect(table.updateValue(value(3), forKey: 1001) == nil)
    table[1002] = value(4)
    table[1001] = nil
    #expect(table[1000] == value(2) && table[1001] == nil && table[1002] == value(4))
    #expect(table.count == 2 && !table.isEmpty)
    let pairs = Dictionary(uniqueKeysWithValues: table.map { ($0.key, $0.value) })
    #expect(pairs == [1000: value(2), 1002: value(4)])
    #expect(table == [1002: value(4), 1000: value(2)])
    // Consecutive uids, as a machine's accounts are, spread over the buckets.
    let buckets = Set(
      (UInt32(1000)..<2000).map { UserValueTable.UID($0)._rawHashValue(seed: 9) & 1023 })
    #expect(buckets.count > 580)
  }

  @Test func aSlotReadsAndWritesInPlace() {
    var table = KeyTable(["vpn": 1])
    let slot = table.index(forKey: "vpn")
    #expect(slot != nil)
    if let slot { table[slot: slot] += 41 }
    #expect(table["vpn"] == 42)
    #expect(table.index(forKey: "absent") == nil)
  }

  @Test func equalKeysHashAlikeAndTheSeedChangesTheHash() {
    let key = "dev.wifi.enabled"
    // The same text from two different strings: one native, one built.
    let built = String(decoding: Array(key.utf8), as: UTF8.self)
    #expect(KeyHash.of(key, seed: 7) == KeyHash.of(built, seed: 7))
    #expect(HashedKey(key) == HashedKey(built))
    #expect(KeyHash.of(key, seed: 7) != KeyHash.of(key, seed: 8))
  }

  @Test func everyByteOfTheLastWordCounts() {
    // The bytes after the last whole eight are read four, two and one at a
    // time: a change of any one of them, at every length, changes the hash.
    for count in 1...23 {
      let bytes = (0..<count).map { UInt8(ascii: "a") + UInt8($0 % 26) }
      let base = KeyHash.of(String(decoding: bytes, as: UTF8.self), seed: 3)
      for changed in (count / 8 * 8)..<count {
        var other = bytes
        other[changed] = UInt8(ascii: "_")
        #expect(KeyHash.of(String(decoding: other, as: UTF8.self), seed: 3) != base)
      }
    }
  }

  @Test func keysThatDifferInOneByteOrInLengthSpreadOverTheLowBits() {
    // Tables index by the low bits: 20,000 keys like a large schema's,
    // differing in their last bytes, in a middle byte past the first word,
    // or only in length, must land in nearly as many buckets of 2^16.
    var keys: [String] = []
    for n in 0..<10_000 { keys.append("settings.group.switch-\(n)") }
    for n in 0..<5_000 { keys.append("a\(n)b.suffix-that-is-long") }
    for n in 1...5_000 { keys.append(String(repeating: "x", count: n % 64) + "\(n / 64)") }
    let buckets = Set(keys.map { KeyHash.of($0, seed: 12_345) & 0xFFFF })
    // Uniform hashing of 20,000 keys into 65,536 buckets fills ~17,600.
    #expect(buckets.count > 16_500)
    #expect(Set(keys).count == keys.count)
  }
}
