import CSQLite
import CSQLiteVFS

/// A failed SQLite call, with the C facts kept as SQLite reported them.
///
/// `code` is the primary result code (`SQLITE_FULL`, `SQLITE_BUSY`, ...), `extendedCode` the
/// extended one (`SQLITE_IOERR_FSYNC`, ...); callers classify by these, never by `message`.
public struct SQLiteError: Error, Equatable, Sendable, CustomStringConvertible {
  /// The primary result code: the low 8 bits of `extendedCode`.
  public var code: Int32
  /// The extended result code.
  public var extendedCode: Int32
  /// SQLite's own English message (`sqlite3_errmsg`), or ours for errors found above SQLite.
  public var message: String
  /// What was being done, and on which file: for a person reading the log.
  public var context: String

  /// Makes an error from its parts as given.
  public init(code: Int32, extendedCode: Int32, message: String, context: String) {
    self.code = code
    self.extendedCode = extendedCode
    self.message = message
    self.context = context
  }

  /// "SQLite error 13/13 (database or disk is full) during commit on /x/y.db".
  public var description: String {
    "SQLite error \(code)/\(extendedCode) (\(message)) during \(context)"
  }
}

extension SQLiteError {
  /// Makes an error whose primary code is derived from `extendedCode`.
  init(extendedCode: Int32, message: String, context: String) {
    self.init(
      code: extendedCode & 0xff, extendedCode: extendedCode, message: message, context: context)
  }

  /// The error a handle reports for `resultCode`: read at once, before another call replaces it.
  init(handle: OpaquePointer?, resultCode: Int32, context: @autoclosure () -> String) {
    // With extended result codes on, `resultCode` is already extended; the handle's message
    // belongs to the call that just failed as long as nothing ran in between.
    var message: String
    if let handle, let text = sqlite3_errmsg(handle) {
      message = String(cString: text)
    } else {
      message = String(cString: sqlite3_errstr(resultCode))
    }
    // SQLite says only "unable to open database file" when the VFS refused
    // a file someone else made (ClaimedFiles.c): say which and why. Taken
    // whatever the code, so that it never outlives the failure it explains.
    if let refused = switchd_take_refused_claim(), resultCode & 0xff == SQLITE_CANTOPEN {
      message = String(cString: refused)
    }
    self.init(extendedCode: resultCode, message: message, context: context())
  }

  /// A misuse found by this module (a closed connection, a broken precondition).
  static func misuse(_ message: String, context: String) -> SQLiteError {
    SQLiteError(extendedCode: SQLITE_MISUSE, message: message, context: context)
  }

  /// Content that SQLite read fine but that cannot be what we wrote: a damaged database.
  static func corrupt(_ message: String, context: String) -> SQLiteError {
    SQLiteError(extendedCode: SQLITE_CORRUPT, message: message, context: context)
  }
}
