import Glibc
import SwitchCore
import SwitchProtocol
import SwitchSystem
import SwitchTestSupport
import Testing

/// A human account as the daemon sees it (the first uid of login.defs'
/// UID_MIN…UID_MAX, read as the daemon reads it): a plain user who may write
/// system switches but administers nothing.
let humanUID: UInt32 = LoginDefs.humanUIDs(
  try? readWholeFile(LoginDefs.path).utf8.map { $0 }
).lowerBound

/// A system account (nobody): never writes system switches without `Writers=`.
let systemUID: UInt32 = 65534

/// A way to talk to the daemon as another user with an ordinary `RPCClient`.
///
/// The daemon takes identity only from `SO_PEERCRED`/`SO_PEERGROUPS`, so
/// the bytes must come from a process that runs as that user. The relay is
/// a small python3 process: it binds a socket of its own while still root,
/// drops to `uid`/`gid`/`groups` (the same calls `setpriv --reuid --regid
/// --groups` makes), then for every connection it accepts connects to the
/// daemon as that user and copies bytes both ways. The daemon sees the
/// relay's uid, gid, groups and pid.
final class UserRelay {
  let uid: UInt32
  let gid: UInt32
  let path: String
  private let outputPath: String
  private let process: Child
  var pid: pid_t { process.pid }

  /// As `uid` (a human account unless told), with `gid` (the uid unless told).
  init(
    _ daemon: DaemonFixture, uid: UInt32 = humanUID, gid: UInt32? = nil, groups: [UInt32] = []
  ) throws {
    self.uid = uid
    self.gid = gid ?? uid
    let n = relayCounter.next()
    path = daemon.directory + "/relay-\(n).sock"
    outputPath = daemon.directory + "/relay-\(n).out"
    let python =
      access("/usr/bin/python3", X_OK) == 0 ? ["/usr/bin/python3"] : ["/usr/bin/env", "python3"]
    let argv =
      python + [
        "-c", Self.script, path, daemon.socketPath, "\(uid)", "\(self.gid)",
        groups.map(String.init).joined(separator: ","),
      ]
    process = try Child(argv, logPath: outputPath)
    let ready = pollUntil(seconds: DaemonFixture.startSeconds) {
      output.contains("ready") || process.hasExited
    }
    guard ready && !process.hasExited else {
      throw FixtureError("the relay did not start: \(output)")
    }
  }

  var output: String { (try? readWholeFile(outputPath)) ?? "" }

  /// A connection to the daemon as this relay's user.
  func client() throws -> RPCClient { try RPCClient(socketPath: path) }

  private static let script = """
    import os, selectors, socket, sys
    listen_path, daemon_path = sys.argv[1], sys.argv[2]
    uid, gid = int(sys.argv[3]), int(sys.argv[4])
    groups = [int(g) for g in sys.argv[5].split(",") if g]
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(listen_path)
    server.listen(16)
    os.setgroups(groups)
    os.setresgid(gid, gid, gid)
    os.setresuid(uid, uid, uid)
    print("ready", flush=True)
    sel = selectors.DefaultSelector()
    sel.register(server, selectors.EVENT_READ)
    peers = {}
    def drop(s):
        for x in (s, peers.get(s)):
            if x is not None and x in peers:
                sel.unregister(x)
                peers.pop(x)
                x.close()
    while True:
        for key, _ in sel.select():
            s = key.fileobj
            if s is server:
                c, _ = server.accept()
                d = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                try:
                    d.connect(daemon_path)
                except OSError as e:
                    print("connect failed:", e, flush=True)
                    c.close()
                    d.close()
                    continue
                peers[c] = d
                peers[d] = c
                sel.register(c, selectors.EVENT_READ)
                sel.register(d, selectors.EVENT_READ)
            elif s in peers:
                try:
                    data = s.recv(65536)
                except OSError:
                    data = b""
                if not data:
                    drop(s)
                    continue
                try:
                    peers[s].sendall(data)
                except OSError:
                    drop(s)
    """
}

private let relayCounter = SerialCounter()

/// The gid of `name`, creating the group (`groupadd -f`) when it is missing.
/// Tests that need real group membership use names prefixed `switchd-test-`.
func switchdTestGroup(_ name: String) throws -> UInt32 {
  for _ in 0..<20 {
    if let gid = GroupDatabase.gid(named: name) { return gid }
    // groupadd takes a lock on /etc/group; a concurrent one may fail: retry.
    _ = SystemAccounts.change(["/usr/sbin/groupadd", "-f", name])
    if let gid = GroupDatabase.gid(named: name) { return gid }
    usleep(100_000)
  }
  throw FixtureError("cannot create the group \(name)")
}

extension RPCClient {
  /// The events queued for this connection so far: a `status` round trip
  /// first, so that everything committed before it has arrived.
  func eventsUntilNow() throws -> [JSONValue] {
    _ = try result("status")
    let events = notifications.compactMap { $0["params"] }
    notifications.removeAll()
    return events
  }
}

/// Checks an error object's code, `data.name` and, when given, `data.key`.
func expectErrorObject(
  _ error: JSONValue, _ code: Int64, _ name: String, key: String? = nil,
  _ comment: Comment? = nil, sourceLocation: Testing.SourceLocation = #_sourceLocation
) {
  #expect(error["code"]?.int64Value == code, comment, sourceLocation: sourceLocation)
  #expect(error["data"]?["name"]?.stringValue == name, comment, sourceLocation: sourceLocation)
  if let key {
    #expect(error["data"]?["key"]?.stringValue == key, comment, sourceLocation: sourceLocation)
  }
  #expect(error["message"]?.stringValue?.isEmpty == false, comment, sourceLocation: sourceLocation)
}

/// The `fields` of an event or history entry as strings.
func changedFieldNames(_ change: JSONValue) -> [String] {
  change["fields"]?.arrayValue?.compactMap(\.stringValue) ?? []
}

/// `{"key":"…"}`
func keyParam(_ key: String) -> String { "{\"key\":\"\(key)\"}" }
