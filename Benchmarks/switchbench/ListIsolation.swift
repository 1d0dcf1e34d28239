/// Isolation beside a client that lists every switch (1,000, ~540 KB an
/// answer) every 5 ms: paced `get`s with that client idle, then while it
/// lists. A list used to be built on the loop in one go (~0.4 ms), which
/// every other client's call waited for; the loop now keeps the last
/// answers' arrays and writes again only what changed (`SwitchLists`).
///
/// The peer: Redis holding 1,000 keys whose values are the switch object of
/// `get`, one client `MGET`ting them all every 5 ms (an answer of the same
/// size) beside paced `GET`s, in alternate windows.
extension Bench {
  func measureListIsolation(_ daemon: DaemonProcess) throws {
    let lister = try PacedAsker(socket: daemon.socket, interval: 5_000_000) { rpc("list") }
    defer { lister.stop() }
    let peerLister = try redis.map { try redisLister($0) }
    defer { peerLister?.stop() }
    progress(
      "list isolation: get with the other client idle, then listing every 5 ms"
        + (peerLister == nil ? "" : "; Redis GET beside MGET of 1,000 keys, the same"))
    var peer: IsolationPeer?
    if let redis, let peerLister {
      peer = IsolationPeer(
        socket: redis.socket, busy: "while a client MGETs all 1,000 keys every 5 ms",
        set: peerLister.set(asking:), errors: { peerLister.errors })
    }
    let listingSeconds = try getsBeside(
      daemon, "while a client lists all 1,000 switches every 5 ms",
      otherErrors: { lister.errors }, set: lister.set(asking:), peer: peer)
    if peer == nil {
      add(
        Row(
          section: "history", measure: "Redis: GET p99 while a client MGETs all 1,000 keys",
          unit: .microseconds, value: nil, note: redisMissing ?? ""))
    }
    add(
      Row(
        section: "history", measure: "lists of every switch answered per second meanwhile",
        unit: .perSecond, value: Double(lister.answered) / max(1e-9, listingSeconds),
        note: "\(count(lister.answered)) lists"))
  }

  /// Fills `redis` with 1,000 keys holding the switch object (and `wifi`),
  /// and returns a client that `MGET`s them all every 5 ms while asked to.
  private func redisLister(_ redis: RedisServer) throws -> PacedAsker {
    let value = switchValue
    // The answer's lines are counted: one for the array, two a value.
    guard !value.contains("\n") && !value.contains("\r") else {
      throw BenchError("the switch object spans lines: \(value)")
    }
    let keys = (0..<1000).map { "list.k\($0)" }
    _ = try redis.command(["MSET", "wifi", value] + keys.flatMap { [$0, value] })
    let mget = resp(["MGET"] + keys)
    return try PacedAsker(
      socket: redis.socket, interval: 5_000_000, lines: 1 + 2 * keys.count, check: .resp
    ) { mget }
  }
}
