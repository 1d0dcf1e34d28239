import Glibc
import SwitchCore
import SwitchTestSupport
import Testing

@testable import SwitchStore

/// A commit refuses once the database or its WAL is not the file opened,
/// and the inotify watch that spares each commit its `stat`s misses no move
/// and raises no false alarm.
@Suite struct DatabaseFilesTests {
  enum Move: String, CaseIterable {
    case databaseRemoved, databaseRenamed, databaseReplaced, walRemoved, walReplaced
  }

  @Test(arguments: Move.allCases)
  func aMoveJustBeforeACommitRefusesIt(_ move: Move) throws {
    try withTemporaryDirectory { directory in
      let path = directory + "/s.db"
      let store = try SwitchStore(path: path)
      defer { store.close() }
      try commitEach(store, 1...3)
      #expect(store.files?.isWatching == true, "inotify is refused on this machine")
      switch move {
      case .databaseRemoved: unlink(path)
      case .databaseRenamed: rename(path, directory + "/elsewhere.db")
      case .databaseReplaced:
        try writeWholeFile(directory + "/new.db", [])
        rename(directory + "/new.db", path)
      case .walRemoved: unlink(path + "-wal")
      case .walReplaced:
        try writeWholeFile(directory + "/new-wal", [])
        rename(directory + "/new-wal", path + "-wal")
      }
      // No pause: the kernel queued the event inside the call above.
      let error = storeError { () throws(StoreError) in
        try store.commit([sampleChange(4, key: "wifi", checked: true)])
      }
      guard case .filesMoved(let reported, _)? = error else {
        Issue.record("expected .filesMoved, got \(String(describing: error))")
        return
      }
      #expect(reported == path)
      // And it stays refused.
      #expect(
        storeError { () throws(StoreError) in
          try store.commit([sampleChange(4, key: "wifi", checked: true)])
        } != nil)
    }
  }

  @Test func otherFilesComingAndGoingBesideItAreNoAlarm() throws {
    try withTemporaryDirectory { directory in
      let path = directory + "/s.db"
      let store = try SwitchStore(path: path)
      defer { store.close() }
      for revision in Int64(1)...40 {
        let other = directory + "/backup-\(revision).db"
        try writeWholeFile(other, [1, 2, 3])
        if revision % 3 == 0 { rename(other, directory + "/kept-\(revision).db") }
        if revision % 2 == 0 { unlink(other) }
        try store.commit([sampleChange(revision, key: "wifi", checked: revision % 2 == 0)])
      }
      #expect(try store.currentRevision() == 40)
      #expect(store.files?.isWatching == true)
    }
  }

  /// The folder itself moved (the watch follows the folder, whose move it
  /// reports): the files are no longer at their path.
  @Test func theFolderMovedRefusesTheNextCommit() throws {
    try withTemporaryDirectory { directory in
      let folder = directory + "/state"
      mkdir(folder, 0o700)
      let path = folder + "/s.db"
      let store = try SwitchStore(path: path)
      defer { store.close() }
      try commitEach(store, 1...2)
      #expect(rename(folder, directory + "/moved") == 0)
      let error = storeError { () throws(StoreError) in
        try store.commit([sampleChange(3, key: "wifi", checked: true)])
      }
      guard case .filesMoved? = error else {
        Issue.record("expected .filesMoved, got \(String(describing: error))")
        return
      }
    }
  }
}
