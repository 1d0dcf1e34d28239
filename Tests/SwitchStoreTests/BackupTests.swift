import Glibc
import SwitchCore
import SwitchTestSupport
import Testing

@testable import SwitchStore

/// `backup(into:)`: a copy of the database as of one commit, taken on a
/// read-only store while the writer keeps committing, that a store opens as
/// any other.
@Suite struct BackupTests {
  /// A start on a copy older than the revision switchd had announced
  /// (`markRestored`): the revision jumps above it and stays there across
  /// opens, the next change follows it (the log skips the numbers between,
  /// reusing none), and the floor a watch may resume from is kept.
  @Test func aRestoredDatabaseNumbersOnAboveTheAnnouncedRevision() throws {
    try withTemporaryDirectory { directory in
      let path = directory + "/switches.db"
      do {
        let store = try SwitchStore(path: path)
        defer { store.close() }
        try commitEach(store, 1...3)
        #expect(try store.resumeFloor() == 0)
        try store.markRestored(at: 8)
        #expect(try store.currentRevision() == 8)
        #expect(try store.resumeFloor() == 8)
        // Never lowered: a later, lower mark changes nothing.
        try store.markRestored(at: 5)
        #expect(try store.currentRevision() == 8)
        try commitEach(store, 9...10)
      }
      let store = try SwitchStore(path: path)
      defer { store.close() }
      #expect(try store.currentRevision() == 10)
      #expect(try store.resumeFloor() == 8)
      #expect(
        try store.changes(after: 0, upTo: .max, limit: 100).map(\.revision) == [1, 2, 3, 9, 10])
      #expect(try store.loadSwitches().map(\.revision) == [10])
      // What pruning is measured by: rows, not the span 1...10 (the writer
      // pruned after every commit while the gap made the span look long).
      #expect(try store.logRowCount() == 5)
      try commitEach(store, 11...12)
      #expect(try store.logRowCount() == 7)
      #expect(try store.prune(keep: 4) == 3)
      #expect(try store.logRowCount() == 4)
      #expect(
        try store.changes(after: 0, upTo: .max, limit: 100).map(\.revision) == [9, 10, 11, 12])
    }
  }

  @Test func aCopyFromAReadOnlyStoreIsTheDatabaseAsOfOneCommit() throws {
    try withTemporaryDirectory { directory in
      let path = directory + "/switches.db"
      let writer = try SwitchStore(path: path)
      defer { writer.close() }
      try commitEach(writer, 1...40, keys: ["wifi", "bluetooth"])
      // The rows hold revision 40, the log goes on after: the copy must have both.
      try writer.checkpointFromLog()
      try commitEach(writer, 41...50, keys: ["wifi", "bluetooth"])

      let reader = try SwitchStore(path: path, mode: .readOnly)
      defer { reader.close() }
      let copyPath = directory + "/copy.db"
      try reader.backup(into: copyPath)
      // Commits after the copy are not in it.
      try commitEach(writer, 51...55)

      let copy = try SwitchStore(path: copyPath, mode: .readOnly)
      defer { copy.close() }
      #expect(try copy.currentRevision() == 50)
      #expect(try copy.changes(after: 0, upTo: .max, limit: 1000).map(\.revision) == Array(1...50))
      let switches = try copy.loadSwitches()
      #expect(switches.map(\.key) == ["bluetooth", "wifi"])
      #expect(switches.map(\.revision) == [50, 49])
      #expect(switches.map(\.state.checked) == [true, false])
      // A plain rollback-journal file: nothing beside it to carry along.
      #expect(!fileExists(copyPath + "-wal"))
      #expect(!fileExists(copyPath + "-journal"))
    }
  }

  @Test func aCopyOpensReadWriteAndGoesOnFromItsRevision() throws {
    try withTemporaryDirectory { directory in
      let path = directory + "/switches.db"
      let writer = try SwitchStore(path: path)
      try commitEach(writer, 1...5)
      try writer.backup(into: directory + "/copy.db")
      writer.close()

      let restored = try SwitchStore(path: directory + "/copy.db")
      defer { restored.close() }
      #expect(try restored.currentRevision() == 5)
      try commitEach(restored, 6...7)
      #expect(try restored.currentRevision() == 7)
    }
  }

  @Test func aFileWithContentIsRefusedAndLeftAsItWas() throws {
    try withTemporaryDirectory { directory in
      let store = try SwitchStore(path: directory + "/switches.db")
      defer { store.close() }
      try commitEach(store, 1...3)
      let target = directory + "/taken.db"
      try writeWholeFile(target, Array("not a database".utf8))
      #expect(storeError { () throws(StoreError) in try store.backup(into: target) } != nil)
      #expect(try readWholeFileBytes(target) == Array("not a database".utf8))
    }
  }
}
