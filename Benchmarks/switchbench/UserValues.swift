import CSQLite
import Glibc

/// Per-user values at scale (issue 12): `--big`/10 users (10,000) each with
/// their own value of 100 user-scope switches, a million stored values, do
/// not slow `get`, `list` or start-up. The values are written into the
/// database of a stopped switchd directly (a million writes through the
/// socket would take minutes and measure the writer, not this).
extension Bench {
  func measureUserValues() throws {
    let users = max(100, options.bigSwitches / 10)
    let perUser = 100
    let stored = users * perUser
    let config = "\(directory)/conf-users"
    try Configs.write(config, total: 1000, userScoped: perUser)
    progress("user values: a switchd with none stored")
    stopDaemon(try startDaemon("users-none", config: config))
    let none = try startDaemon("users-none", config: config)
    progress("user values: storing \(count(stored)) (\(count(users)) users × \(perUser) switches)")
    stopDaemon(try startDaemon("users-many", config: config))
    try storeUserValues(
      database: "\(directory)/users-many/switches.db", users: users, perUser: perUser)
    let many = try startDaemon("users-many", config: config)
    add(
      Row(
        section: "users", measure: "ready with \(count(stored)) user values, existing database",
        unit: .seconds, value: many.readySeconds, reference: none.readySeconds,
        referenceName: "none stored", target: .valueAtMost(0.5)))

    // A user in the middle, who set every one of the 100 switches.
    let user = 1000 + users / 2
    let userGet = rpc("get", "{\"key\":\"\(Configs.userKey(42))\",\"user\":\(user)}")
    // The same request, with the same `user`, of a system switch.
    let systemGet = rpc("get", "{\"key\":\"wifi\",\"user\":\(user)}")
    let list = rpc("list", "{\"prefix\":\"u4.\",\"user\":\(user)}")
    try checkUserPages(many, get: userGet, list: list)
    func figure(
      _ measure: String, _ measured: (DaemonProcess, [UInt8]),
      against reference: (DaemonProcess, [UInt8]), _ referenceName: String
    ) throws {
      progress("user values: \(measure)")
      let (value, base, errors) = try medianCPUPerRequest(measured, against: reference)
      add(
        Row(
          section: "users", measure: "\(measure): CPU per request", unit: .microseconds,
          value: value, reference: base, referenceName: referenceName,
          target: .ratioWithin(0.2), note: errors > 0 ? "\(errors) errors" : ""))
    }
    try figure(
      "get of a user's value, \(count(stored)) stored", (many, userGet), against: (none, userGet),
      "none stored")
    try figure(
      "get of a user's value, \(count(stored)) stored", (many, userGet),
      against: (many, systemGet), "get of a system switch")
    try figure(
      "list of 10 of a user's switches, \(count(stored)) stored", (many, list),
      against: (none, list), "none stored")
    add(
      Row(
        section: "users", measure: "VmHWM with \(count(stored)) user values", unit: .kibibytes,
        value: many.peakRSSKiB.map(Double.init), reference: none.peakRSSKiB.map(Double.init),
        referenceName: "none stored"))
    stopDaemon(many)
    stopDaemon(none)
  }

  /// The measured requests answer what they should: the user's own value,
  /// and ten of their switches.
  private func checkUserPages(_ daemon: DaemonProcess, get: [UInt8], list: [UInt8]) throws {
    let one = try exchange(path: daemon.socket, String(decoding: get, as: UTF8.self))
    guard one.contains("\"checked\":true"), one.contains("\"scope\":\"user\"") else {
      throw BenchError("get of a user's value returned \(one.prefix(300))")
    }
    let page = try exchange(path: daemon.socket, String(decoding: list, as: UTF8.self))
    guard page.ranges(of: "\"checked\":true").count == 10 else {
      throw BenchError("list of a user's switches returned \(page.prefix(300))")
    }
  }

  /// Stores every user's own value (on, where the default is off) of every
  /// user-scope switch in one transaction.
  private func storeUserValues(database: String, users: Int, perUser: Int) throws {
    var db: OpaquePointer?
    guard sqlite3_open_v2(database, &db, SQLITE_OPEN_READWRITE, nil) == SQLITE_OK else {
      sqlite3_close_v2(db)
      throw BenchError("cannot open \(database)")
    }
    defer { sqlite3_close_v2(db) }
    func exec(_ sql: String) throws {
      if sqlite3_exec(db, sql, nil, nil, nil) != SQLITE_OK {
        throw BenchError("\(sql): \(String(cString: sqlite3_errmsg(db)))")
      }
    }
    var statement: OpaquePointer?
    let sql = """
      INSERT INTO user_values(key, user, checked, revision, changed_at) VALUES (?1, ?2, 1, 0, 0)
      """
    guard sqlite3_prepare_v2(db, sql, -1, &statement, nil) == SQLITE_OK else {
      throw BenchError("prepare: \(String(cString: sqlite3_errmsg(db)))")
    }
    defer { sqlite3_finalize(statement) }
    let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)
    try exec("BEGIN")
    for index in 0..<perUser {
      let key = Configs.userKey(index)
      for user in 0..<users {
        sqlite3_bind_text(statement, 1, key, -1, transient)
        sqlite3_bind_int64(statement, 2, Int64(1000 + user))
        let rc = sqlite3_step(statement)
        sqlite3_reset(statement)
        guard rc == SQLITE_DONE else {
          throw BenchError("INSERT: \(String(cString: sqlite3_errmsg(db)))")
        }
      }
    }
    try exec("COMMIT")
  }
}
