import CSQLite
import Glibc

/// SQLite copies a value bound with this destructor, so the Swift buffer may go away at once.
/// The C macro is `((sqlite3_destructor_type)-1)`, which Swift does not import.
private let sqliteTransient = unsafeBitCast(
  -1, to: sqlite3_destructor_type.self)

/// One prepared statement, owned by the connection that prepared it.
///
/// Not Sendable: it belongs to its connection's thread. A cached statement is finalized by
/// `SQLiteConnection.close()` (so the close really closes the file) or, failing that, in deinit.
/// Every use is bind, step until done, `reset()`: a statement left mid-way holds a read
/// transaction open, which would pin a WAL snapshot and stop checkpoints.
final class SQLiteStatement {
  private(set) var handle: OpaquePointer?
  /// The SQL text, kept for error messages only.
  let sql: String
  /// The database path, kept for error messages only.
  let path: String

  init(handle: OpaquePointer, sql: String, path: String) {
    self.handle = handle
    self.sql = sql
    self.path = path
    // A new statement's parameters are all NULL.
    held = .allocate(capacity: Int(sqlite3_bind_parameter_count(handle)) + 1)
    held.initialize(repeating: .null)
  }

  deinit {
    sqlite3_finalize(handle)
    held.deallocate()
  }

  /// Finalizes now; later uses throw `SQLITE_MISUSE` instead of touching freed memory.
  func finalize() {
    sqlite3_finalize(handle)
    handle = nil
  }

  // MARK: Binding (indexes start at 1, as in SQLite)

  /// What a parameter holds, as far as a bind may be skipped for it: a
  /// plain value, so that the check is a compare or two.
  private struct Held: Equatable {
    enum Kind: UInt8 {
      case unknown
      case null
      case integer
      /// A `StaticString`'s bytes (the same literal has the same address):
      /// `value` is the address, `count` the length.
      case staticText
    }
    var kind: Kind
    var value: Int64 = 0
    var count: Int = 0

    static let unknown = Held(kind: .unknown)
    static let null = Held(kind: .null)
  }

  /// What each parameter holds now, by index (0 unused). SQLite keeps a
  /// binding across `reset`, and a log row repeats most of the row before
  /// it (its cause, actor, user and source): a bind of the value a
  /// parameter already holds is skipped. Each bind went through SQLite's
  /// API and freed the old value, ~90 instructions (callgrind).
  private let held: UnsafeMutableBufferPointer<Held>

  /// Whether parameter `index` holds `value` already.
  private func holds(_ value: Held, at index: Int32) -> Bool {
    let slot = Int(index)
    return slot > 0 && slot < held.count && held[slot] == value
  }

  /// Notes what a bind that returned `rc` left parameter `index` holding,
  /// then throws if it failed.
  private func bound(_ value: Held, at index: Int32, _ rc: Int32) throws(SQLiteError) {
    let slot = Int(index)
    if slot > 0 && slot < held.count { held[slot] = rc == SQLITE_OK ? value : .unknown }
    try check(rc)
  }

  func bind(_ value: Int64, at index: Int32) throws(SQLiteError) {
    let wanted = Held(kind: .integer, value: value)
    if holds(wanted, at: index) { return }
    try bound(wanted, at: index, sqlite3_bind_int64(try live(), index, value))
  }

  func bind(_ value: Bool, at index: Int32) throws(SQLiteError) {
    try bind(value ? 1 : 0, at: index)
  }

  func bind(_ value: Int64?, at index: Int32) throws(SQLiteError) {
    if let value { try bind(value, at: index) } else { try bindNull(at: index) }
  }

  func bind(_ value: String, at index: Int32) throws(SQLiteError) {
    let statement = try live()
    // Bound by length, not as a C string: an embedded NUL must not cut the text short.
    var value = value
    let rc = value.withUTF8 { bytes in
      // An empty buffer may have no address, and a NULL pointer would bind SQL NULL.
      guard let base = bytes.baseAddress, !bytes.isEmpty else {
        return sqlite3_bind_text(statement, index, "", 0, sqliteTransient)
      }
      return base.withMemoryRebound(to: CChar.self, capacity: bytes.count) {
        sqlite3_bind_text(statement, index, $0, Int32(bytes.count), sqliteTransient)
      }
    }
    try bound(.unknown, at: index, rc)
  }

  /// Binds text that lives as long as the program, without a copy (SQLITE_STATIC):
  /// SQLite's copy of a TRANSIENT text was a malloc and a free per bind (callgrind).
  func bind(_ value: StaticString, at index: Int32) throws(SQLiteError) {
    guard value.hasPointerRepresentation else { return try bind("\(value)", at: index) }
    let count = value.utf8CodeUnitCount
    let wanted = Held(
      kind: .staticText, value: Int64(Int(bitPattern: value.utf8Start)), count: count)
    if holds(wanted, at: index) { return }
    let statement = try live()
    let rc = value.utf8Start.withMemoryRebound(to: CChar.self, capacity: count) {
      sqlite3_bind_text(statement, index, $0, Int32(count), nil)
    }
    try bound(wanted, at: index, rc)
  }

  func bind(_ value: StaticString?, at index: Int32) throws(SQLiteError) {
    if let value { try bind(value, at: index) } else { try bindNull(at: index) }
  }

  func bind(_ value: String?, at index: Int32) throws(SQLiteError) {
    if let value { try bind(value, at: index) } else { try bindNull(at: index) }
  }

  func bindNull(at index: Int32) throws(SQLiteError) {
    if holds(.null, at: index) { return }
    try bound(.null, at: index, sqlite3_bind_null(try live(), index))
  }

  // MARK: Stepping

  /// Advances to the next row: true when a row is ready, false when the statement is done.
  func step() throws(SQLiteError) -> Bool {
    let statement = try live()
    let rc = sqlite3_step(statement)
    switch rc & 0xff {
    case SQLITE_ROW: return true
    case SQLITE_DONE: return false
    default:
      throw SQLiteError(
        handle: sqlite3_db_handle(statement), resultCode: rc, context: "`\(sql)` on \(path)")
    }
  }

  /// Steps a statement that returns no rows (or whose rows are not wanted) to completion.
  func run() throws(SQLiteError) {
    while try step() {}
  }

  /// Ends the current execution and releases its locks; bindings stay.
  func reset() {
    // Its return value repeats the last step's error, which step() already threw.
    sqlite3_reset(handle)
  }

  // MARK: Columns (indexes start at 0, as in SQLite)

  func isNull(at index: Int32) -> Bool {
    sqlite3_column_type(handle, index) == SQLITE_NULL
  }

  func int64(at index: Int32) -> Int64 {
    sqlite3_column_int64(handle, index)
  }

  func optionalInt64(at index: Int32) -> Int64? {
    isNull(at: index) ? nil : int64(at: index)
  }

  func bool(at index: Int32) -> Bool {
    int64(at: index) != 0
  }

  func text(at index: Int32) -> String {
    // Text first, then its length: that order is what SQLite documents as safe.
    guard let bytes = sqlite3_column_text(handle, index) else { return "" }
    let count = Int(sqlite3_column_bytes(handle, index))
    return String(decoding: UnsafeBufferPointer(start: bytes, count: count), as: UTF8.self)
  }

  /// Whether the text at `index` is exactly `bytes` (no String made).
  func text(at index: Int32, equals bytes: [UInt8]) -> Bool {
    guard let text = sqlite3_column_text(handle, index) else { return bytes.isEmpty }
    let count = Int(sqlite3_column_bytes(handle, index))
    guard count == bytes.count else { return false }
    guard count > 0 else { return true }
    return bytes.withUnsafeBufferPointer { memcmp($0.baseAddress!, text, count) == 0 }
  }

  func optionalText(at index: Int32) -> String? {
    isNull(at: index) ? nil : text(at: index)
  }

  // MARK: Private

  private func live() throws(SQLiteError) -> OpaquePointer {
    guard let handle else {
      throw .misuse("the connection is closed", context: "`\(sql)` on \(path)")
    }
    return handle
  }

  private func check(_ rc: Int32) throws(SQLiteError) {
    guard rc != SQLITE_OK else { return }
    throw SQLiteError(
      handle: sqlite3_db_handle(handle), resultCode: rc, context: "binding `\(sql)` on \(path)")
  }
}
