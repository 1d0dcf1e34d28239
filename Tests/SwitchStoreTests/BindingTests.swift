import CSQLite
import SwitchCore
import SwitchTestSupport
import Testing

@testable import SwitchStore

/// A log row names its key by number (`keys`, migration 10), its holders
/// are bound from static strings. Keys short enough to live inside the
/// String value and keys on the heap, one group after another through the
/// same statement, read back as written, each key numbered once.
@Suite struct BindingTests {
  @Test func keysAndCausesOfEveryLengthAndKindReadBackAsWritten() throws {
    try withTemporaryDirectory { directory in
      let store = try SwitchStore(path: directory + "/s.db")
      defer { store.close() }
      let keys = [
        "a", "wifi", "fifteen.bytes.k", "sixteen.bytes.ke",
        "a.much.longer.key-that-lives-on-the-heap.and.is.well.past-the-inline-limit",
      ]
      let causes: [Cause] = [.set, .toggle, .policy, .dependency, .expiry]
      var written: [Change] = []
      var revision: Int64 = 0
      for round in 0..<3 {
        var group: [Change] = []
        for (index, key) in keys.enumerated() {
          revision += 1
          var change = sampleChange(
            revision, key: key, checked: (index + round) % 2 == 0,
            cause: causes[(index + round) % causes.count])
          if index == 2 {
            // Not free: the other statement, with its holder bound from a static string.
            change.state.heldBy = .admin
            change.state.readOnly = true
          }
          group.append(change)
        }
        try store.commit(group)
        written += group
      }
      let read = try store.changes(after: 0, upTo: revision, limit: 100)
      #expect(read.map(\.key) == written.map(\.key))
      #expect(read.map(\.cause) == written.map(\.cause))
      #expect(read.map(\.state) == written.map(\.state))
      #expect(try store.connection.textRows("SELECT key FROM keys ORDER BY key") == keys.sorted())
    }
  }

  /// A group goes in as multi-row inserts of 16, 8 and 4 rows, then single
  /// rows (`SQL.insertChangesSizes`), each row's key bound as its number:
  /// groups of every size from 1 to 21, each row and each key's history
  /// read back as written (a wrong row offset, key number or
  /// `key_previous` shows here).
  @Test func groupsOfEverySizeReadBackAsWritten() throws {
    try withTemporaryDirectory { directory in
      let store = try SwitchStore(path: directory + "/s.db")
      defer { store.close() }
      let keys = [
        "wifi", "bt", String(repeating: "k", count: 128), String(repeating: "long", count: 50),
        "a.much.longer.key-that-lives-on-the-heap.and.is.well.past-the-inline-limit",
      ]
      let actors: [Actor] = [.peer(uid: 1000, gid: 100, pid: 7), .policy, .timer]
      var written: [Change] = []
      var revision: Int64 = 0
      for size in 1...21 {
        var group: [Change] = []
        for row in 0..<size {
          revision += 1
          var change = sampleChange(
            revision, key: keys[(row * 3 + size) % keys.count], checked: (row + size) % 2 == 0,
            cause: row % 2 == 0 ? .toggle : .set, actor: actors[(row + size) % actors.count])
          if (row + size) % 7 == 0 {
            change.user = UInt32(1000 + row)
          }
          group.append(change)
        }
        try store.commit(group)
        written += group
      }
      #expect(try store.changes(after: 0, upTo: revision, limit: 1000) == written)
      for key in keys {
        let history = try store.history(key: key, before: nil, limit: 1000)
        #expect(history == written.filter { $0.key == key && $0.user == nil }.reversed())
      }
    }
  }

  /// A bind of the value a parameter already holds is skipped (SQLite keeps
  /// bindings across reset), so every other bind must still reach SQLite:
  /// a value after a NULL, a NULL after a value, a static text after
  /// another, a value bound again after a failed bind and after a kept text.
  @Test func aRepeatedBindIsSkippedAndEveryChangeStillReachesSQLite() throws {
    try withTemporaryDirectory { directory in
      let connection = try SQLiteConnection(
        path: directory + "/b.db", flags: SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE)
      defer { connection.close() }
      let select = try connection.prepareCached("SELECT ?1, ?2")
      func row() throws -> (Int64?, String?) {
        defer { select.reset() }
        #expect(try select.step())
        return (select.optionalInt64(at: 0), select.optionalText(at: 1))
      }
      try select.bind(Int64(7), at: 1)
      try select.bind("toggle" as StaticString, at: 2)
      #expect(try row() == (7, "toggle"))
      try select.bind(Int64(7), at: 1)
      try select.bind("toggle" as StaticString, at: 2)
      #expect(try row() == (7, "toggle"))
      try select.bindNull(at: 1)
      try select.bind("policy" as StaticString, at: 2)
      #expect(try row() == (nil, "policy"))
      try select.bind(Int64(7), at: 1)
      try select.bind(true, at: 1)
      #expect(try row() == (1, "policy"))
      // Out of range: SQLite refuses, and the next bind of a held value still goes through.
      #expect(throws: SQLiteError.self) { try select.bind(Int64(9), at: 3) }
      try select.bind(Int64(1), at: 1)
      try select.bind("a key", at: 2)
      #expect(try row() == (1, "a key"))
      try select.bind("policy" as StaticString, at: 2)
      #expect(try row() == (1, "policy"))
    }
  }

  /// Log rows that repeat a column and then change it (actor, user, cause)
  /// read back as written, NULLs included.
  @Test func rowsThatRepeatThenChangeAColumnReadBackAsWritten() throws {
    try withTemporaryDirectory { directory in
      let store = try SwitchStore(path: directory + "/s.db")
      defer { store.close() }
      let actors: [Actor] = [
        .peer(uid: 1000, gid: 1000, pid: 7), .peer(uid: 1000, gid: 1000, pid: 7), .system,
        .system, .peer(uid: 1000, gid: 1000, pid: 7), .peer(uid: 0, gid: 0, pid: 1), .timer,
      ]
      let users: [UInt32?] = [nil, nil, 1000, 1000, nil, 1001, nil]
      var written: [Change] = []
      for (index, actor) in actors.enumerated() {
        var change = sampleChange(
          Int64(index + 1), key: "k\(index % 2)", checked: index % 3 == 0,
          cause: index < 3 ? .toggle : .set, actor: actor)
        change.user = users[index]
        written.append(change)
      }
      try store.commit(Array(written[0..<4]))
      try store.commit(Array(written[4...]))
      let read = try store.changes(after: 0, upTo: Int64(written.count), limit: 100)
      #expect(read.map(\.actor) == written.map(\.actor))
      #expect(read.map(\.user) == written.map(\.user))
      #expect(read.map(\.cause) == written.map(\.cause))
      #expect(read.map(\.state.checked) == written.map(\.state.checked))
    }
  }
}

/// A tried change's `pending` text (migration 6, its administrator's flag
/// since migration 12): written and read back, the six fields older builds
/// wrote read as a non-administrator's, and anything else refused.
@Suite struct TriedChangeTextTests {
  @Test func aTriedChangeReadsBackAsWrittenAndOlderTextAsANonAdministrators() throws {
    for byAdministrator in [false, true] {
      let tried = TriedChange(
        maker: .peer(uid: 1000, gid: 100, pid: 42), makerIsAdministrator: byAdministrator,
        bootDeadline: 9000, bootID: "boot-a", revertOnDisconnect: true)
      let text = try #require(tried.storageText)
      #expect(text == "1000 100 42 9000 1 \(byAdministrator ? 1 : 0) boot-a")
      #expect(TriedChange(storageText: text) == tried)
    }
    let older = try #require(TriedChange(storageText: "1000 100 42 9000 0 boot-a"))
    #expect(older.makerIsAdministrator == false && older.revertOnDisconnect == false)
    #expect(older.bootID == "boot-a")
    for bad in [
      "1000 100 42 9000 1 2 boot-a", "1000 100 42 9000 1 1 boot-a extra", "1000 100 42 9000 1 ",
      "1000 100 42 9000 yes boot-a", "1000 100 42 9000 1",
    ] {
      #expect(TriedChange(storageText: bad) == nil, "\(bad)")
    }
  }
}
