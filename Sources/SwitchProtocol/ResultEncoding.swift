import SwitchCore

/// Writes the result objects of docs/protocol.md ("Methods", column "result"),
/// each in one place. Switch objects are the daemon's to write (it keeps them
/// encoded until they change): a result takes a closure that writes them
/// where they go (`writeSwitchArray` for an array).
public enum ResultEncoding {
  /// A writer of one Switch object, or of a JSON array of them.
  public typealias Switches = (inout JSONWriter) -> Void

  /// `list`: `{"revision":R,"switches":[Switch…]}`; `switches` writes the array.
  public static func writeList(_ w: inout JSONWriter, revision: Int64, switches: Switches) {
    w.raw("{\"revision\":")
    w.int(revision)
    w.raw(",\"switches\":")
    switches(&w)
    w.raw("}")
  }

  /// `watch`: `{"watch":id,"revision":R,"switches":[Switch…]}`, the
  /// snapshot as of R; `switches` writes the array.
  public static func writeWatch(
    _ w: inout JSONWriter, watch: String, revision: Int64, switches: Switches
  ) {
    writeWatchHead(&w, watch: watch, revision: revision)
    w.raw(",\"switches\":")
    switches(&w)
    w.raw("}")
  }

  /// `watch` with `since`: `{"watch":id,"revision":R}`, no snapshot (the
  /// replay brings the changes).
  public static func writeReplayingWatch(_ w: inout JSONWriter, watch: String, revision: Int64) {
    writeWatchHead(&w, watch: watch, revision: revision)
    w.raw("}")
  }

  private static func writeWatchHead(_ w: inout JSONWriter, watch: String, revision: Int64) {
    w.raw("{\"watch\":")
    w.string(watch)
    w.raw(",\"revision\":")
    w.int(revision)
  }

  /// A write (`set`, `toggle`, `reset`, `lock`, `unlock`, `disable`,
  /// `enable`): `{"changed":bool,"switch":Switch}`; `switch` writes the object.
  public static func writeWrite(_ w: inout JSONWriter, changed: Bool, switch object: Switches) {
    w.raw(changed ? "{\"changed\":true,\"switch\":" : "{\"changed\":false,\"switch\":")
    object(&w)
    w.raw("}")
  }

  /// A JSON array of Switch objects, each encoded for anyone and given the
  /// caller's `writable` and `writableReason` here: `[a,b,…]`.
  @inlinable
  public static func writeSwitchArray<
    Items: Sequence<(encoded: [UInt8], writable: Writability)>
  >(
    _ w: inout JSONWriter, _ items: Items
  ) {
    writeArray(&w, items) { w, item in
      WireEncoding.writeSwitch(&w, encoded: item.encoded, writable: item.writable)
    }
  }

  /// A JSON array whose elements `element` writes: `[a,b,…]`.
  @inlinable
  public static func writeArray<Items: Sequence>(
    _ w: inout JSONWriter, _ items: Items, element: (inout JSONWriter, Items.Element) -> Void
  ) {
    w.raw("[")
    var first = true
    for item in items {
      if !first { w.raw(",") }
      first = false
      element(&w, item)
    }
    w.raw("]")
  }

  /// `reload`: `{"switches":n,"policies":n,"restartRequired":[setting…]}`.
  public static func writeReload(_ w: inout JSONWriter, _ summary: ReloadSummary) {
    w.raw("{\"switches\":")
    w.int(Int64(summary.switches))
    w.raw(",\"policies\":")
    w.int(Int64(summary.policies))
    w.raw(",\"restartRequired\":")
    w.strings(summary.restartRequired)
    w.raw("}")
  }

  /// `history`: `{"entries":[Entry…]}`, newest first as given; an entry
  /// whose actor `showsActor` refuses carries null ids.
  public static func writeHistory(
    _ w: inout JSONWriter, entries: [Change], showsActor: (Actor) -> Bool = { _ in true }
  ) {
    beginHistory(&w)
    for (i, change) in entries.enumerated() {
      writeHistoryEntry(&w, change, index: i, showingActor: showsActor(change.actor))
    }
    endHistory(&w)
  }

  /// `writeHistory` in three steps, for a page encoded as it is read:
  /// `beginHistory`, then each entry with its position, then `endHistory`.
  public static func beginHistory(_ w: inout JSONWriter) {
    w.raw("{\"entries\":[")
  }

  public static func writeHistoryEntry(
    _ w: inout JSONWriter, _ change: Change, index: Int, showingActor: Bool
  ) {
    if index > 0 { w.raw(",") }
    WireEncoding.writeEntry(&w, change, showingActor: showingActor)
  }

  public static func endHistory(_ w: inout JSONWriter) {
    w.raw("]}")
  }

  /// `backup`: `{"revision":R,"bytes":n}`, the revision the copy is as of
  /// and its size; the copy itself is the descriptor passed with this line.
  public static func writeBackup(_ w: inout JSONWriter, revision: Int64, bytes: Int64) {
    w.raw("{\"revision\":")
    w.int(revision)
    w.raw(",\"bytes\":")
    w.int(bytes)
    w.raw("}")
  }

  /// `unwatch`: `{}`.
  public static func writeEmpty(_ w: inout JSONWriter) {
    w.raw("{}")
  }

  /// `status`.
  public static func writeStatus(_ w: inout JSONWriter, _ status: StatusReport) {
    w.raw("{\"version\":")
    w.string(status.version)
    w.raw(",\"revision\":")
    w.int(status.revision)
    w.raw(",\"switches\":")
    w.int(Int64(status.switches))
    w.raw(",\"policies\":")
    w.int(Int64(status.policies))
    w.raw(",\"connections\":")
    w.int(Int64(status.connections))
    w.raw(",\"watches\":")
    w.int(Int64(status.watches))
    w.raw(",\"uptimeSeconds\":")
    w.int(status.uptimeSeconds)
    w.raw(",\"database\":")
    w.string(status.database)
    w.raw(",\"socket\":")
    w.string(status.socket)
    w.raw(",\"configDirectory\":")
    w.string(status.configDirectory)
    w.raw(",\"lastReload\":")
    if let reload = status.lastReload {
      w.raw("{\"time\":")
      WireEncoding.writeTime(&w, reload.time)
      w.raw(",\"result\":")
      w.string(reload.result.wireName)
      w.raw(",\"errorCount\":")
      w.int(Int64(reload.errors.count))
      // The errors quote configuration lines: administrators only (CONFIG.md).
      if status.caller.administrator {
        w.raw(",\"errors\":")
        w.strings(reload.errors)
      }
      w.raw("}")
    } else {
      w.null()
    }
    w.raw(",\"reconciling\":")
    w.int(Int64(status.reconciling))
    w.raw(",\"caller\":{\"uid\":")
    w.int(Int64(status.caller.uid))
    w.raw(",\"gid\":")
    w.int(Int64(status.caller.gid))
    w.raw(",\"administrator\":")
    w.bool(status.caller.administrator)
    w.raw(",\"writesSystemSwitches\":")
    w.bool(status.caller.writesSystemSwitches)
    w.raw("}}")
  }
}

/// What a `reload` that applied answers.
public struct ReloadSummary: Equatable, Sendable {
  public var switches: Int
  public var policies: Int
  /// Settings whose change the running daemon does not apply (`Socket`,
  /// `Database`, …): they take effect when switchd restarts.
  public var restartRequired: [String]

  public init(switches: Int, policies: Int, restartRequired: [String] = []) {
    self.switches = switches
    self.policies = policies
    self.restartRequired = restartRequired
  }
}

/// The last reload, by `reload` or SIGHUP, for `status`.
public struct ReloadRecord: Equatable, Sendable {
  public enum Result: Sendable {
    /// The new configuration is in force.
    case applied
    /// The configuration was invalid (`InvalidConfig`); the running one stays.
    case refused
    /// The database failed while applying it; the running one stays.
    case failed

    public var wireName: String {
      switch self {
      case .applied: return "applied"
      case .refused: return "refused"
      case .failed: return "failed"
      }
    }
  }

  /// Milliseconds since the epoch.
  public var time: Int64
  public var result: Result
  /// Each problem, `file.conf:line: message` (empty when applied).
  public var errors: [String]

  public init(time: Int64, result: Result, errors: [String] = []) {
    self.time = time
    self.result = result
    self.errors = errors
  }
}

/// What `status` reports.
public struct StatusReport: Sendable {
  /// The caller of `status`, as the daemon sees it.
  public struct CallerReport: Sendable {
    public var uid: UInt32
    public var gid: UInt32
    public var administrator: Bool
    /// May set, toggle and reset (the `Writers` group).
    public var writesSystemSwitches: Bool

    public init(uid: UInt32, gid: UInt32, administrator: Bool, writesSystemSwitches: Bool) {
      self.uid = uid
      self.gid = gid
      self.administrator = administrator
      self.writesSystemSwitches = writesSystemSwitches
    }
  }

  public var version: String
  public var revision: Int64
  public var switches: Int
  public var policies: Int
  public var connections: Int
  public var watches: Int
  public var uptimeSeconds: Int64
  public var database: String
  public var socket: String
  public var configDirectory: String
  /// nil when the configuration was not reloaded since the daemon started.
  public var lastReload: ReloadRecord?
  /// Switches whose apply command the reconcile of the start or of a reload
  /// is still running (0 once every one has been applied).
  public var reconciling: Int
  public var caller: CallerReport

  public init(
    version: String, revision: Int64, switches: Int, policies: Int, connections: Int,
    watches: Int, uptimeSeconds: Int64, database: String, socket: String,
    configDirectory: String, lastReload: ReloadRecord?, reconciling: Int = 0,
    caller: CallerReport
  ) {
    self.version = version
    self.revision = revision
    self.switches = switches
    self.policies = policies
    self.connections = connections
    self.watches = watches
    self.uptimeSeconds = uptimeSeconds
    self.database = database
    self.socket = socket
    self.configDirectory = configDirectory
    self.lastReload = lastReload
    self.reconciling = reconciling
    self.caller = caller
  }
}
