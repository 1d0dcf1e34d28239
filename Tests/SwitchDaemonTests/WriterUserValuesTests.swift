import SwitchCore
import Testing

@testable import SwitchDaemon

/// The writer's copy of users' own values: one look-up of a key for a read
/// and a write, what a failed commit puts back, and what the next
/// checkpoint writes.
@Suite struct WriterUserValuesTests {
  static func value(_ checked: Bool, _ revision: Int64) -> UserValue {
    UserValue(checked: checked, revision: revision, changedAt: revision * 1000)
  }

  @Test func valuesAreKeptPerKeyAndUser() {
    var users = WriterUserValues()
    users.set("email", user: 1000, Self.value(false, 1))
    users.set("email", user: 1001, Self.value(true, 2))
    users.set("chat", user: 1000, Self.value(true, 3))
    users.set("email", user: 1000, Self.value(true, 4))
    #expect(users.value("email", user: 1000) == Self.value(true, 4))
    #expect(users.value("email", user: 1001) == Self.value(true, 2))
    #expect(users.value("chat", user: 1000) == Self.value(true, 3))
    #expect(users.value("chat", user: 1001) == nil)
    #expect(users.value("absent", user: 1000) == nil)
  }

  @Test func aRollBackPutsBackWhatTheGroupReplacedNewestFirst() {
    var users = WriterUserValues()
    users.set("email", user: 1000, Self.value(false, 1))
    users.committed()
    // A group that sets the same value twice, and a value never set before.
    users.set("email", user: 1000, Self.value(true, 2))
    users.set("email", user: 1000, Self.value(false, 3))
    users.set("chat", user: 1000, Self.value(true, 4))
    let undone = users.rollBack()
    #expect(undone.map(\.key) == ["email", "email", "chat"])
    #expect(users.value("email", user: 1000) == Self.value(false, 1))
    #expect(users.value("chat", user: 1000) == nil)
    #expect(users.values["chat"] == nil, "a key whose last value went back is gone")
  }

  /// What a rebuild of the timers reads: the values with deadlines now,
  /// whether loaded with one, set with one since, or put back with one by
  /// a failed commit; a value whose deadline went is forgotten.
  @Test func theValuesWithDeadlinesAreKnownWithoutReadingEveryValue() {
    var timed = Self.value(false, 1)
    timed.expiresAt = 1_800_000_000_000
    var users = WriterUserValues()
    users.load(
      ["email": [1000: timed, 1001: Self.value(true, 2)]],
      withDeadlines: [UserKey(key: "email", user: 1000)])
    #expect(users.withDeadlines().map(\.user) == [1000])
    users.set("chat", user: 1002, timed)
    users.committed()
    #expect(users.withDeadlines().map(\.user).sorted() == [1000, 1002])
    users.set("email", user: 1000, Self.value(true, 3))
    users.committed()
    #expect(users.withDeadlines().map(\.user) == [1002])
    // A failed commit puts back a value with a deadline the rebuild forgot.
    users.set("chat", user: 1002, Self.value(true, 4))
    users.committed()
    #expect(users.withDeadlines().isEmpty)
    users.set("chat", user: 1002, Self.value(false, 5))
    _ = users.rollBack()
    #expect(users.withDeadlines().isEmpty)
    users.load(["chat": [1002: timed]], withDeadlines: [])
    users.set("chat", user: 1002, Self.value(true, 6))
    _ = users.rollBack()
    #expect(users.withDeadlines().map(\.key) == ["chat"])
  }

  @Test func theCheckpointWritesEachCommittedValueOnce() {
    var users = WriterUserValues()
    users.set("email", user: 1000, Self.value(false, 1))
    users.set("email", user: 1000, Self.value(true, 2))
    users.set("email", user: 1001, Self.value(true, 3))
    users.committed()
    users.set("chat", user: 1000, Self.value(true, 4))
    _ = users.rollBack()
    let rows = users.rowsToCheckpoint.sorted { ($0.key, $0.user) < ($1.key, $1.user) }
    #expect(rows.map(\.key) == ["email", "email"])
    #expect(rows.map(\.user) == [1000, 1001])
    #expect(rows.map(\.value) == [Self.value(true, 2), Self.value(true, 3)])
    users.checkpointed()
    #expect(users.rowsToCheckpoint.isEmpty)
  }

  @Test func whatWaitsForTheCheckpointIsBoundedIfItNeverComes() {
    // One user's value written over and over with no checkpoint (it keeps
    // failing): the repeats are made unique once they pile up.
    var users = WriterUserValues()
    for revision in 1...Int64(3 * WriterUserValues.changedBound) {
      users.set("email", user: 1000, Self.value(revision % 2 == 0, revision))
      users.committed()
      #expect(users.changedCount <= WriterUserValues.changedBound + 1)
    }
    let last = Int64(3 * WriterUserValues.changedBound)
    #expect(users.rowsToCheckpoint.map(\.value) == [Self.value(last % 2 == 0, last)])
  }

  @Test func aKeyWithDifferentUsersHashesApart() {
    // The tables by key and user mix the user into the seed: the same key
    // for users 0, 1, 1000 and none (the switch itself) are four hashes.
    let email: HashedKey = "email"
    let hashes = Set([nil, 0, 1, 1000].map { email.hash(user: $0, seed: 7) })
    #expect(hashes.count == 4)
    // Users of one key spread over a table's buckets (1,024 random hashes
    // fill ~647 of 1,024), consecutive uids and uids a table's size apart
    // (containers' ranges, 65,536 apart) alike: the user is mixed through
    // the whole hash, not only into the low bits a table indexes by.
    for spacing in [1, 1024, 65_536] as [UInt32] {
      let buckets = Set((0..<1024).map { email.hash(user: UInt32($0) &* spacing, seed: 7) & 1023 })
      #expect(buckets.count > 560, "uids \(spacing) apart fill \(buckets.count) of 1,024 buckets")
    }
    // And a thousand users of one key are each found, once committed.
    var users = WriterUserValues()
    for uid in UInt32(1000)..<2000 { users.set("email", user: uid, Self.value(uid % 2 == 0, 1)) }
    users.committed()
    #expect(
      (UInt32(1000)..<2000).allSatisfy { users.value("email", user: $0)?.checked == ($0 % 2 == 0) })
    #expect(users.rowsToCheckpoint.count == 1000)
  }
}
