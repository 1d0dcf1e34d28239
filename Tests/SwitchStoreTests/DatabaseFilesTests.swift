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

  /// Once an event loop took the watch over (`FolderWatch.handOver`), a
  /// commit reads nothing: the loop polls the watch, finds it readable
  /// after the move (the kernel queued the event inside the call) and
  /// drains it, and the next commit looks at the files and refuses.
  @Test(arguments: [Move.databaseRenamed, .walRemoved])
  func aMoveTheLoopDrainedRefusesTheNextCommit(_ move: Move) throws {
    try Self.withWatchHandedOver { directory, path, store, watch, descriptor in
      #expect(!Self.isReadable(descriptor))
      try commitEach(store, 3...4)
      #expect(!Self.isReadable(descriptor), "a commit made an event the loop would wake for")
      if move == .databaseRenamed {
        rename(path, directory + "/elsewhere.db")
      } else {
        unlink(path + "-wal")
      }
      #expect(Self.isReadable(descriptor))
      #expect(watch.drain())
      #expect(!Self.isReadable(descriptor))
      let error = storeError { () throws(StoreError) in
        try store.commit([sampleChange(5, key: "wifi", checked: true)])
      }
      guard case .filesMoved? = error else {
        Issue.record("expected .filesMoved, got \(String(describing: error))")
        return
      }
    }
  }

  /// After the hand-over the writer leaves the watch's events to the loop:
  /// a name created beside the database stays queued through commits, and
  /// once drained costs the next commit one look, which finds its files.
  @Test func afterTheHandOverCommitsLeaveTheEventsToTheLoop() throws {
    try Self.withWatchHandedOver { directory, _, store, watch, descriptor in
      try writeWholeFile(directory + "/backup.db", [1, 2, 3])
      try commitEach(store, 3...4)
      #expect(Self.isReadable(descriptor), "a commit read the loop's events")
      #expect(watch.drain())
      try commitEach(store, 5...6)
      #expect(try store.currentRevision() == 6)
    }
  }

  /// A store in a folder of its own, two commits in, its watch taken over
  /// as a loop would take it: `body` gets the folder, the database's path,
  /// the store, its watch and the watch's descriptor.
  static func withWatchHandedOver(
    _ body: (String, String, SwitchStore, FolderWatch, Int32) throws -> Void
  ) throws {
    try withTemporaryDirectory { directory in
      let path = directory + "/s.db"
      let store = try SwitchStore(path: path)
      defer { store.close() }
      try commitEach(store, 1...2)
      let watch = try #require(store.folderWatch, "inotify is refused on this machine")
      watch.handOver()
      try body(directory, path, store, watch, watch.descriptor)
    }
  }

  /// Whether `descriptor` has events queued, without waiting.
  static func isReadable(_ descriptor: Int32) -> Bool {
    var entry = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
    return poll(&entry, 1, 0) == 1 && entry.revents & Int16(POLLIN) != 0
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
