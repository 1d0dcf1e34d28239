import Glibc
import SwitchCore

/// Fairness of writes (issue 12): one client toggling alone, then the same
/// client while another user toggles on 50 connections as fast as they are
/// answered, and then while that user pipelines 16 toggles on each. The
/// lone writer's p99 against its idle p99: it waits for the group commit in
/// flight and its own, and one user's share of a group is bounded
/// (`Server.maxWritesInFlightPerUser`), however many connections it opens.
///
/// The last row is the same pipelining flood by root, whom the bound does not
/// hold: what the bound spares the lone writer.
///
/// The other user is the first human uid of /etc/login.defs when the
/// benchmark runs as root (administrators, root included, are exempt from
/// the bound); otherwise every connection is the benchmark's own uid.
///
/// Redis with `appendfsync always`, driven by the same client threads in
/// alternate windows (a lone `SET` idle, then beside 50 connections
/// setting), is the peer: what a server that answers each write only after
/// its flush lets a lone writer have on this machine. Its row has no
/// target; it says how much of the ratio is the machine's (51 client
/// threads on its CPUs) and how much is switchd's.
extension Bench {
  func measureWriteFairness() throws {
    let config = "\(directory)/conf-fairness"
    try Configs.write(config, total: 1000)
    progress("write fairness: starting switchd with 1,000 switches")
    let daemon = try startDaemon("fairness", config: config)
    defer { stopDaemon(daemon) }
    var flooder: UInt32?
    if geteuid() == 0 {
      let loginDefs = readFile(LoginDefs.path).map { Array($0.utf8) }
      flooder = LoginDefs.humanUIDs(loginDefs).lowerBound
      // Let that user reach the socket (the daemon made it 0600 as asked).
      for path in [directory, "\(directory)/fairness"] { chmod(path, 0o711) }
      chmod(daemon.socket, 0o666)
    }
    let lone = ClientScript(
      requests: [Self.toggleRequest(0)], newlines: 1, check: .jsonRPC, group: 1)
    func flood(pipelined depth: Int, as uid: UInt32? = flooder) -> [ClientScript] {
      (1...50).map { client in
        let line = Self.toggleRequest(client)
        return ClientScript(
          requests: [Array(Array(repeating: line, count: depth).joined())], newlines: depth,
          check: .jsonRPC, group: 0, answersPerSend: depth, uid: uid)
      }
    }
    let socket = daemon.socket
    var contenders = [
      contender(socket, [lone]), contender(socket, flood(pipelined: 1) + [lone]),
      contender(socket, flood(pipelined: 16) + [lone]),
    ]
    // The same flood by an administrator, whom the bound does not hold: what it spares.
    if flooder != nil {
      contenders.append(contender(socket, flood(pipelined: 16, as: nil) + [lone]))
    }
    // The peer's windows follow switchd's: its lone SET idle, then beside 50 setting.
    let peerFirst = contenders.count
    if let redis = redisDurable {
      let value = switchValue
      func set(_ client: Int) -> ClientScript {
        ClientScript(
          requests: [resp(["SET", "toggle.c\(client)", value])], newlines: 1, check: .resp,
          group: client == 0 ? 1 : 0)
      }
      contenders += [
        contender(redis.socket, [set(0)]), contender(redis.socket, (1...50).map(set) + [set(0)]),
      ]
    }
    let who = flooder.map { "uid \($0)" } ?? "the same uid"
    progress(
      "write fairness: a lone toggler, idle and beside 50 busy connections of \(who)"
        + (redisDurable == nil ? "" : "; Redis SET fsync, the same"))
    let results = try interleave(contenders)
    let runs = [
      (1, "50 connections toggling", who), (2, "50 connections pipelining 16", who),
      (3, "50 connections pipelining 16", flooder == nil ? who : "root, exempt"),
    ]
    for (index, label, by) in runs where index < peerFirst {
      addLoneRow(
        "lone toggle p99 beside \(label) of \(by)", idle: results[0], beside: results[index],
        referenceName: "lone toggle p99, idle", what: "toggles",
        target: index == 1 ? .ratioAtMost(3) : .none)
    }
    let peerMeasure = "Redis: lone SET p99 beside 50 connections setting"
    if redisDurable != nil {
      addLoneRow(
        peerMeasure, idle: results[peerFirst], beside: results[peerFirst + 1],
        referenceName: "lone SET p99, idle", what: "SETs", target: .none)
    } else {
      add(
        Row(
          section: "fairness", measure: peerMeasure, unit: .microseconds, value: nil,
          note: redisMissing ?? ""))
    }
  }

  /// A lone client's p99 beside a flood (`beside`: the flood's group, then
  /// the lone client's) against its p99 alone (`idle`'s last group).
  private func addLoneRow(
    _ measure: String, idle: [LoadResult], beside: [LoadResult], referenceName: String,
    what: String, target: Target
  ) {
    let idle = idle[idle.count - 1]
    let flood = beside[0]
    let alone = beside[1]
    let errors = idle.errors + flood.errors + alone.errors
    add(
      Row(
        section: "fairness", measure: measure, unit: .microseconds, value: alone.p99,
        reference: idle.p99, referenceName: referenceName, target: target,
        note: "they make \(count(Int(flood.throughput))) \(what)/s"
          + (errors > 0 ? ", \(errors) errors" : "")))
  }
}
