/// Isolation beside a client that lists every switch (1,000, ~540 KB an
/// answer) every 5 ms: paced `get`s with that client idle, then while it
/// lists. A list used to be built on the loop in one go (~0.4 ms), which
/// every other client's call waited for; the loop now keeps the last
/// answers' arrays and writes again only what changed (`SwitchLists`).
extension Bench {
  func measureListIsolation(_ daemon: DaemonProcess) throws {
    let lister = try PacedAsker(socket: daemon.socket, interval: 5_000_000) { rpc("list") }
    defer { lister.stop() }
    progress("list isolation: get with the other client idle, then listing every 5 ms")
    let listingSeconds = try getsBeside(
      daemon, "while a client lists all 1,000 switches every 5 ms",
      otherErrors: { lister.errors }, set: lister.set(asking:))
    add(
      Row(
        section: "history", measure: "lists of every switch answered per second meanwhile",
        unit: .perSecond, value: Double(lister.answered) / max(1e-9, listingSeconds),
        note: "\(count(lister.answered)) lists"))
  }
}
