import Glibc
import SwitchCore
import SwitchTestSupport
import Testing

@testable import SwitchStore

/// The files SQLite makes beside the database are made switchd's before
/// SQLite opens them (`switchd_claim_file`): in a sticky folder such as
/// `/tmp` another user may make one in the moment between switchd's start
/// check and SQLite's open, and root's SQLite would write into it.
@Suite struct ClaimedFilesTests {
  /// A sticky folder anyone may write to, as /tmp is.
  static func withStickyFolder(_ body: (String) throws -> Void) throws {
    try withTemporaryDirectory { base in
      let folder = base + "/shared"
      mkdir(folder, 0o1777)
      chmod(folder, 0o1777)
      try body(folder)
    }
  }

  static func mode(of path: String) -> mode_t {
    var status = stat()
    return lstat(path, &status) == 0 ? status.st_mode & 0o7777 : 0
  }

  /// Under the usual umask (022) SQLite would make them 0644: readable by
  /// anyone who may enter the folder. (The umask is not changed here: it
  /// is the process's, and other tests run meanwhile.)
  @Test func aNewDatabaseAndItsLogAreTheOwnersAlone() throws {
    try withTemporaryDirectory { directory in
      let path = directory + "/s.db"
      let store = try SwitchStore(path: path, mode: .readWrite)
      try store.insertNew([SwitchRecord(key: "wifi", state: SwitchState(checked: true))])
      for suffix in ["", "-wal"] {
        #expect(Self.mode(of: path + suffix) == 0o600, "\(suffix)")
      }
      store.close()
    }
  }

  @Test(.needsRoot("plants files owned by another uid"), arguments: ["-wal", "-journal"])
  func aFileAnotherUserMadeBesideTheDatabaseIsRefusedAndLeftAlone(suffix: String) throws {
    try Self.withStickyFolder { folder in
      let path = folder + "/s.db"
      // The database is there and closed (no log), as between two runs.
      if suffix != "-journal" {
        let first = try SwitchStore(path: path, mode: .readWrite)
        first.close()
      }
      let planted = path + suffix
      try writeWholeFile(planted, "")
      chmod(planted, 0o666)
      #expect(chown(planted, 65534, 65534) == 0)
      let error = storeError { () throws(StoreError) in
        let store = try SwitchStore(path: path, mode: .readWrite)
        store.close()
      }
      #expect(error != nil, "the store opened with \(suffix) of uid 65534")
      #expect(
        "\(String(describing: error))".contains(
          "refusing to use \(planted): it is owned by another user (uid 65534"),
        "\(String(describing: error))")
      var status = stat()
      #expect(lstat(planted, &status) == 0 && status.st_uid == 65534, "it was taken over")
      #expect((try? readWholeFileBytes(planted))?.isEmpty == true, "it was written")
    }
  }

  /// A journal SQLite finds at open is hot: it is played back into the
  /// database, opened without O_CREAT. One another user planted is refused
  /// as it is opened, and left as it was.
  @Test(.needsRoot("plants a journal owned by another uid"))
  func aHotJournalAnotherUserPlantedIsNeverPlayedBack() throws {
    try Self.withStickyFolder { folder in
      let path = folder + "/s.db"
      let first = try SwitchStore(path: path, mode: .readWrite)
      try first.insertNew([SwitchRecord(key: "wifi", state: SwitchState(checked: true))])
      first.close()
      // A rollback journal's magic, then a header's worth of bytes.
      let magic: [UInt8] = [0xd9, 0xd5, 0x05, 0xf9, 0x20, 0xa1, 0x63, 0xd7]
      let journal = magic + [UInt8](repeating: 0x5a, count: 1016)
      let planted = path + "-journal"
      try writeWholeFile(planted, journal)
      chmod(planted, 0o644)
      #expect(chown(planted, 65534, 65534) == 0)
      for mode in [SwitchStore.Mode.readWrite, .readOnly] {
        let error = storeError { () throws(StoreError) in
          let store = try SwitchStore(path: path, mode: mode)
          store.close()
        }
        #expect(
          "\(String(describing: error))".contains("refusing to use \(planted)"),
          "\(mode): \(String(describing: error))")
      }
      #expect(try readWholeFileBytes(planted) == journal, "the journal was touched")
    }
  }

  @Test(.needsRoot("links a file of root's that is not the database's"))
  func aHardLinkInPlaceOfTheLogIsRefused() throws {
    try Self.withStickyFolder { folder in
      let path = folder + "/s.db"
      let first = try SwitchStore(path: path, mode: .readWrite)
      first.close()
      let victim = folder + "/victim"
      try writeWholeFile(victim, "keep")
      chmod(victim, 0o600)
      #expect(link(victim, path + "-wal") == 0)
      #expect(
        storeError { () throws(StoreError) in _ = try SwitchStore(path: path, mode: .readWrite) }
          != nil)
      #expect(try readWholeFile(victim) == "keep")
    }
  }
}
