// The result of each method (docs/protocol.md "Methods", column "result")
// as a client reads it; `get` answers a `SwitchObject`, `unwatch` `{}`.
// `ResultEncoding` writes each (the function named on the type), and
// WireRoundTripTests checks that its bytes decode to the value encoded.

/// `list` (`ResultEncoding.writeList`).
public struct ListResult: Equatable, Sendable {
  public var revision: Int64
  public var switches: [SwitchObject]
}

extension ListResult: WireDecodable {
  public static let objectName = "the list result"

  public init(members m: WireMembers) throws(WireDecodingError) {
    self.init(
      revision: try m.integer(WireField.revision), switches: try m.decodeArray(WireField.switches))
  }
}

/// A write: `set`, `toggle`, `reset`, `lock`, `unlock`, `disable`, `enable`,
/// `apply` (`ResultEncoding.writeWrite`).
public struct WriteResult: Equatable, Sendable {
  public var changed: Bool
  public var switchObject: SwitchObject
}

extension WriteResult: WireDecodable {
  public static let objectName = "the result of a write"

  public init(members m: WireMembers) throws(WireDecodingError) {
    self.init(
      changed: try m.bool(WireField.changed), switchObject: try m.decode(WireField.switch))
  }
}

/// `watch` (`ResultEncoding.writeWatch`, and `writeReplayingWatch` with `since`).
public struct WatchResult: Equatable, Sendable {
  public var watch: String
  public var revision: Int64
  /// The snapshot as of `revision`; nil for a watch with `since`.
  public var switches: [SwitchObject]?
}

extension WatchResult: WireDecodable {
  public static let objectName = "the watch result"

  public init(members m: WireMembers) throws(WireDecodingError) {
    self.init(
      watch: try m.string(WireField.watch), revision: try m.integer(WireField.revision),
      switches: m.has(WireField.switches) ? try m.decodeArray(WireField.switches) : nil)
  }
}

/// `history` (`ResultEncoding.writeHistory`): newest first.
public struct HistoryResult: Equatable, Sendable {
  public var entries: [EntryObject]
}

extension HistoryResult: WireDecodable {
  public static let objectName = "the history result"

  public init(members m: WireMembers) throws(WireDecodingError) {
    self.init(entries: try m.decodeArray(WireField.entries))
  }

  /// The entries of a history result, each with the JSON it came as (for
  /// a client that prints what the daemon sent).
  public static func entriesAsSent(
    _ wire: JSONValue
  ) throws(WireDecodingError) -> [(value: EntryObject, json: JSONValue)] {
    try WireMembers(wire, objectName).decodeEach(WireField.entries)
  }
}

/// `backup` (`ResultEncoding.writeBackup`): the revision the copy is as of,
/// and its size; the copy itself is the descriptor passed with the answer.
public struct BackupResult: Equatable, Sendable {
  public var revision: Int64
  public var bytes: Int64
}

extension BackupResult: WireDecodable {
  public static let objectName = "the backup result"

  public init(members m: WireMembers) throws(WireDecodingError) {
    self.init(
      revision: try m.integer(WireField.revision), bytes: try m.integer(WireField.bytes))
  }
}

/// What a `reload` that applied answers (`ResultEncoding.writeReload`).
public struct ReloadSummary: Equatable, Sendable, WireDecodable {
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

  public static let objectName = "the reload result"

  public init(members m: WireMembers) throws(WireDecodingError) {
    self.init(
      switches: try m.integer(WireField.switches), policies: try m.integer(WireField.policies),
      restartRequired: try m.strings(WireField.restartRequired))
  }
}

/// The last reload, by `reload` or SIGHUP, for `status`.
public struct ReloadRecord: Equatable, Sendable, WireDecodable {
  public enum Result: Sendable, CaseIterable {
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

    public init?(wireName: String) {
      guard let match = Self.allCases.first(where: { $0.wireName == wireName }) else {
        return nil
      }
      self = match
    }
  }

  /// Milliseconds since the epoch.
  public var time: Int64
  public var result: Result
  /// Each problem, `file.conf:line: message` (empty when applied). They
  /// quote configuration lines, so only an administrator is sent them.
  public var errors: [String]
  /// How many problems: every caller is told that many.
  public var errorCount: Int

  /// `errorCount` is `errors.count` unless given (a caller not sent them).
  public init(time: Int64, result: Result, errors: [String] = [], errorCount: Int? = nil) {
    self.time = time
    self.result = result
    self.errors = errors
    self.errorCount = errorCount ?? errors.count
  }

  public static let objectName = "the last reload"

  public init(members m: WireMembers) throws(WireDecodingError) {
    self.init(
      time: try m.time(WireField.time), result: try m.word(WireField.result, Result.init),
      errors: m.has(WireField.errors) ? try m.strings(WireField.errors) : [],
      errorCount: try m.integer(WireField.errorCount))
  }
}

/// How a switch that reads the system back is doing (`status.readBack`,
/// SEMANTICS.md rules 18–19): its re-applications since switchd started,
/// the last one and what the system had turned it to, and why its
/// `ExecWatch=` program is not running, if it is not.
public struct ReadBackReport: Equatable, Sendable, WireDecodable {
  public var key: String
  public var reapplied: Int
  /// Milliseconds since the epoch; nil before any re-application.
  public var lastReapplied: Int64?
  /// What the system had turned the switch to before the last re-application.
  public var systemHad: Bool?
  public var watchProblem: String?

  public init(
    key: String, reapplied: Int = 0, lastReapplied: Int64? = nil, systemHad: Bool? = nil,
    watchProblem: String? = nil
  ) {
    self.key = key
    self.reapplied = reapplied
    self.lastReapplied = lastReapplied
    self.systemHad = systemHad
    self.watchProblem = watchProblem
  }

  public static let objectName = "a readBack entry"

  public init(members m: WireMembers) throws(WireDecodingError) {
    let had = try m.stringOrNull(WireField.systemHad)
    self.init(
      key: try m.key(WireField.key), reapplied: try m.integer(WireField.reapplied),
      lastReapplied: try m.timeOrNull(WireField.lastReapplied),
      systemHad: had.map { $0 == "on" }, watchProblem: try m.stringOrNull(WireField.watchProblem))
  }
}

/// What `status` reports (`ResultEncoding.writeStatus`).
public struct StatusReport: Equatable, Sendable, WireDecodable {
  /// The caller of `status`, as the daemon sees it.
  public struct CallerReport: Equatable, Sendable, WireDecodable {
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

    public static let objectName = "the caller of status"

    public init(members m: WireMembers) throws(WireDecodingError) {
      self.init(
        uid: try m.integer(WireField.uid), gid: try m.integer(WireField.gid),
        administrator: try m.bool(WireField.administrator),
        writesSystemSwitches: try m.bool(WireField.writesSystemSwitches))
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
  /// The switches that read the system back, by key.
  public var readBack: [ReadBackReport] = []

  public init(
    version: String, revision: Int64, switches: Int, policies: Int, connections: Int,
    watches: Int, uptimeSeconds: Int64, database: String, socket: String,
    configDirectory: String, lastReload: ReloadRecord?, reconciling: Int = 0,
    caller: CallerReport, readBack: [ReadBackReport] = []
  ) {
    self.readBack = readBack
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

  public static let objectName = "the status result"

  public init(members m: WireMembers) throws(WireDecodingError) {
    self.init(
      version: try m.string(WireField.version), revision: try m.integer(WireField.revision),
      switches: try m.integer(WireField.switches), policies: try m.integer(WireField.policies),
      connections: try m.integer(WireField.connections), watches: try m.integer(WireField.watches),
      uptimeSeconds: try m.integer(WireField.uptimeSeconds),
      database: try m.string(WireField.database), socket: try m.string(WireField.socket),
      configDirectory: try m.string(WireField.configDirectory),
      lastReload: try m.decodeOrNull(WireField.lastReload),
      reconciling: try m.integer(WireField.reconciling), caller: try m.decode(WireField.caller))
    // Absent from a daemon older than read-back.
    if m.has(WireField.readBack) { readBack = try m.decodeArray(WireField.readBack) }
  }
}
