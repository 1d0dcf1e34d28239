import Glibc

/// The database file and its WAL as the writer opened them, to notice when
/// either is removed, renamed or replaced while switchd runs. SQLite would
/// go on writing into the unlinked file and every write would be lost at
/// the next start, so once that happens the store refuses to commit: what
/// it acknowledged before is all that is acknowledged.
struct DatabaseFiles {
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

  init(path: String) {
    self.path = path
    database = Self.identity(of: path)
    wal = Self.identity(of: path + "-wal")
  }

  /// Nil while both files are the ones opened; else what happened to them.
  mutating func check() -> String? {
    if let lost { return lost }
    guard let database else { return nil }
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
