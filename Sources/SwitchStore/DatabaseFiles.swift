import Glibc

/// The database file and its WAL as the writer opened them, to notice when
/// either is removed, renamed or replaced while switchd runs. SQLite would
/// go on writing into the unlinked file and every write would be lost at
/// the next start, so once that happens the store refuses to commit: what
/// it acknowledged before is all that is acknowledged.
///
/// A commit asks before it writes. The answer comes from an inotify watch
/// on the folder (`FolderWatch`): the kernel queues its events inside the
/// unlink or rename itself, so a move that happened before the commit is
/// in the queue (or, once an event loop reads the watch, flagged by it
/// before the writes it reads in a later turn reach the writer). Only
/// when something happened in the folder are the files looked at (`stat`).
/// Without a watch (inotify refused, or its watch gone) every commit looks.
final class DatabaseFiles {
  private struct Identity: Equatable {
    var device: UInt64
    var inode: UInt64
  }

  let path: String
  private let database: Identity?
  /// Taken when first seen: SQLite creates the WAL on the first transaction.
  private var wal: Identity?
  /// Set once the files were found moved; it stays set.
  private(set) var lost: String?
  /// The watch on the folder, nil when inotify refused one.
  let watch: FolderWatch?

  init(path: String) {
    self.path = path
    // Watched before the identities are taken: a move between the two is
    // then either seen by the stat or queued.
    watch = FolderWatch(folderOf: path)
    database = Self.identity(of: path)
    wal = Self.identity(of: path + "-wal")
  }

  /// Whether the folder is watched (else each check looks at the files).
  var isWatching: Bool { watch?.isWatching ?? false }

  /// Nil while both files are the ones opened; else what happened to them.
  func check() -> String? {
    if let lost { return lost }
    guard let database else { return nil }
    if wal != nil, let watch, watch.nothingHappened() { return nil }
    if let found = Self.identity(of: path), found == database {
      let walPath = path + "-wal"
      guard let wal else {
        wal = Self.identity(of: walPath)
        return nil
      }
      if Self.identity(of: walPath) == wal { return nil }
      lost = "its write-ahead log \(walPath) was removed or replaced"
    } else {
      lost = "\(path) was removed, renamed or replaced"
    }
    return lost
  }

  private static func identity(of path: String) -> Identity? {
    var status = stat()
    guard stat(path, &status) == 0 else { return nil }
    return Identity(device: UInt64(status.st_dev), inode: UInt64(status.st_ino))
  }
}
