import CSQLite
import Glibc

/// The machine's floor for a durable write: one writer updating one row,
/// each UPDATE its own transaction, WAL with `synchronous=FULL` (one
/// fdatasync per commit), in the same directory as switchd's database.
func sqliteCommitFloor(directory: String, warmup: Double, seconds: Double) throws -> LoadResult {
  let path = "\(directory)/floor.db"
  var db: OpaquePointer?
  guard sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nil) == SQLITE_OK,
    let db
  else {
    sqlite3_close_v2(db)
    throw BenchError("cannot open \(path)")
  }
  defer { sqlite3_close_v2(db) }
  func exec(_ sql: String) throws {
    if sqlite3_exec(db, sql, nil, nil, nil) != SQLITE_OK {
      throw BenchError("\(sql): \(String(cString: sqlite3_errmsg(db)))")
    }
  }
  try exec("PRAGMA journal_mode=WAL")
  try exec("PRAGMA synchronous=FULL")
  try exec("CREATE TABLE IF NOT EXISTS t(id INTEGER PRIMARY KEY, v INTEGER NOT NULL)")
  try exec("INSERT OR REPLACE INTO t(id, v) VALUES (1, 0)")
  var statement: OpaquePointer?
  guard
    sqlite3_prepare_v2(db, "UPDATE t SET v = 1 - v WHERE id = 1", -1, &statement, nil)
      == SQLITE_OK, let statement
  else { throw BenchError("prepare: \(String(cString: sqlite3_errmsg(db)))") }
  defer { sqlite3_finalize(statement) }

  let measureStart = nowNanoseconds() + UInt64(warmup * 1e9)
  let measureEnd = measureStart + UInt64(seconds * 1e9)
  var result = LoadResult(seconds: seconds)
  result.latencies.reserveCapacity(1 << 16)
  while true {
    let start = nowNanoseconds()
    if start >= measureEnd { break }
    let rc = sqlite3_step(statement)
    sqlite3_reset(statement)
    guard rc == SQLITE_DONE else {
      throw BenchError("UPDATE: \(String(cString: sqlite3_errmsg(db)))")
    }
    let done = nowNanoseconds()
    if start >= measureStart && done <= measureEnd {
      result.completed += 1
      result.latencies.append(done - start)
    }
  }
  result.latencies.sort()
  return result
}
