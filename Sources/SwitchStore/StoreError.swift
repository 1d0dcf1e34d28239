import CSQLite

/// Why the store could not do what was asked. Nothing was changed when one is thrown.
public enum StoreError: Error, Sendable, CustomStringConvertible {
  /// SQLite failed (disk full, I/O error, busy, read-only file, misuse, ...).
  case sqlite(SQLiteError)
  /// PRAGMA quick_check failed, or the file is not a database: never silently replaced.
  case damaged(path: String, detail: String)
  /// The file (or its WAL) was removed or replaced under the running store:
  /// nothing more is committed, since nothing more would survive a restart.
  case filesMoved(path: String, detail: String)
  /// Written by a newer switchd (user_version above ours): refused, not downgraded.
  case newerSchema(path: String, found: Int32, supported: Int32)

  /// One sentence naming the file and what to do.
  public var description: String {
    switch self {
    case .sqlite(let error):
      return "the database failed: \(error); \(StoreError.advice(for: error.code))"
    case .damaged(let path, let detail):
      return "the database \(path) is damaged (\(detail)): move it aside and restore a backup, "
        + "or delete it to start from the defaults"
    case .filesMoved(_, let detail):
      return "the database file was removed or replaced (\(detail)); nothing more is "
        + "written to it: put it back and restart switchd (a restart without it starts from "
        + "the defaults, or from the file now at that path)"
    case .newerSchema(let path, let found, let supported):
      return "the database \(path) has schema version \(found), newer than the \(supported) "
        + "this switchd supports: run the newer switchd, or move the file aside to start from "
        + "the defaults"
    }
  }
}

extension StoreError {
  /// What an operator can do about a SQLite failure, by its primary code.
  static func advice(for code: Int32) -> String {
    switch code {
    case SQLITE_FULL:
      return "free some disk space and retry"
    case SQLITE_READONLY, SQLITE_PERM, SQLITE_CANTOPEN, SQLITE_AUTH:
      return "check that the file and its directory exist and that switchd may write them"
    case SQLITE_BUSY, SQLITE_LOCKED:
      return "another process holds the database: stop it and retry"
    case SQLITE_IOERR:
      return "check the disk and the kernel log for I/O errors"
    case SQLITE_MISUSE:
      return "this is a bug in switchd: please report it"
    default:
      return "check the disk and the file's permissions"
    }
  }

  /// Classifies a SQLite failure: content SQLite cannot read (or that cannot be ours) is
  /// damage the operator must see, everything else stays a SQLite error with its codes.
  init(_ error: SQLiteError, path: String) {
    switch error.code {
    case SQLITE_NOTADB, SQLITE_CORRUPT:
      self = .damaged(path: path, detail: error.message)
    default:
      self = .sqlite(error)
    }
  }
}
