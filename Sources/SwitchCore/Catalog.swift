/// A place in a configuration file: `switches.d/10-base.conf:12`.
public struct SourceLocation: Equatable, Hashable, Sendable, CustomStringConvertible {
  /// The path relative to the configuration directory (`policy.d/50-corp.conf`).
  public var file: String
  public var line: Int

  public init(file: String, line: Int) {
    self.file = file
    self.line = line
  }

  /// `file:line` as errors print it; `file` alone for what concerns a
  /// whole file (line 0).
  public var description: String { line == 0 ? file : "\(file):\(line)" }

  /// `name.conf:line`, as `policySource` carries it.
  public var policySourceText: String {
    let name = file.split(separator: "/").last.map(String.init) ?? file
    return "\(name):\(line)"
  }
}

/// A switch declared in `switches.d`.
///
/// Its fields live in one shared box: a definition is copied into every
/// decision, outcome and answer of a write, and a copy is one retain, not
/// one per String and array (`SharedFields`).
public struct SwitchDefinition: Equatable, Sendable {
  private var shared: SharedFields<Fields>

  private struct Fields: Equatable, Sendable {
    var key: String
    /// The text that names the setting; nil when the schema gives none (a warning).
    var label: String?
    var description: String
    var defaultChecked: Bool
    var checkedIcon: String
    var uncheckedIcon: String
    /// The heading a settings page draws it under (`Group=`; "" when absent).
    var group: String
    /// Its place in the schema: files in lexical order, sections in file order.
    var order: Int
    /// One value for the machine, or one per user (`Scope=`).
    var scope: Scope
    var source: SourceLocation
    /// Dependencies, apply command and read-back: nil when it has none.
    var rare: SharedFields<Rare>?
  }

  /// What most switches do not have, boxed: inline they took ~75 of a
  /// definition's ~230 bytes whether set or not (massif: 2.3 MB with
  /// 10,000 switches).
  private struct Rare: Equatable, Sendable {
    /// Switches that must be in effect for this one to apply (`Requires=`).
    var requires: [String] = []
    /// Switches that keep this one from applying while in effect (`Conflicts=`).
    var conflicts: [String] = []
    /// `ExecApply=` and `ApplyTimeoutSec=`; nil when the switch has no apply command.
    var apply: ApplyCommand?
    /// `ExecCheck=`, `ExecWatch=` and their drift settings; nil when the
    /// switch reads nothing back (its `observed` is always null).
    var readBack: ReadBack?

    var isEmpty: Bool {
      requires.isEmpty && conflicts.isEmpty && apply == nil && readBack == nil
    }

    /// Boxed, or nil when it holds nothing.
    var boxed: SharedFields<Rare>? { isEmpty ? nil : SharedFields(self) }
  }

  private mutating func changeRare(_ change: (inout Rare) -> Void) {
    var rare = shared.fields.rare?.fields ?? Rare()
    change(&rare)
    shared.fields.rare = rare.boxed
  }

  public var key: String {
    get { shared.fields.key }
    set { shared.fields.key = newValue }
  }
  public var label: String? {
    get { shared.fields.label }
    set { shared.fields.label = newValue }
  }
  public var description: String {
    get { shared.fields.description }
    set { shared.fields.description = newValue }
  }
  public var defaultChecked: Bool {
    get { shared.fields.defaultChecked }
    set { shared.fields.defaultChecked = newValue }
  }
  public var checkedIcon: String {
    get { shared.fields.checkedIcon }
    set { shared.fields.checkedIcon = newValue }
  }
  public var uncheckedIcon: String {
    get { shared.fields.uncheckedIcon }
    set { shared.fields.uncheckedIcon = newValue }
  }
  public var group: String {
    get { shared.fields.group }
    set { shared.fields.group = newValue }
  }
  public var order: Int {
    get { shared.fields.order }
    set { shared.fields.order = newValue }
  }
  public var scope: Scope {
    get { shared.fields.scope }
    set { shared.fields.scope = newValue }
  }
  public var requires: [String] {
    get { shared.fields.rare?.fields.requires ?? [] }
    set { changeRare { $0.requires = newValue } }
  }
  public var conflicts: [String] {
    get { shared.fields.rare?.fields.conflicts ?? [] }
    set { changeRare { $0.conflicts = newValue } }
  }
  public var source: SourceLocation {
    get { shared.fields.source }
    set { shared.fields.source = newValue }
  }
  public var apply: ApplyCommand? {
    get { shared.fields.rare?.fields.apply }
    set { changeRare { $0.apply = newValue } }
  }
  /// Whether it has an apply command, without a copy of it.
  public var hasApply: Bool { shared.fields.rare?.fields.apply != nil }
  public var readBack: ReadBack? {
    get { shared.fields.rare?.fields.readBack }
    set { changeRare { $0.readBack = newValue } }
  }

  public init(
    key: String, label: String?, description: String = "", defaultChecked: Bool,
    checkedIcon: String = "", uncheckedIcon: String = "", group: String = "", order: Int = 0,
    scope: Scope = .system, requires: [String] = [], conflicts: [String] = [],
    source: SourceLocation = SourceLocation(file: "", line: 0), apply: ApplyCommand? = nil,
    readBack: ReadBack? = nil
  ) {
    shared = SharedFields(
      Fields(
        key: key, label: label, description: description, defaultChecked: defaultChecked,
        checkedIcon: checkedIcon, uncheckedIcon: uncheckedIcon, group: group, order: order,
        scope: scope, source: source,
        rare: Rare(requires: requires, conflicts: conflicts, apply: apply, readBack: readBack)
          .boxed))
  }
}

/// What `policy.d` says of one switch, merged name by name across files.
///
/// Its fields live in one shared box, like `SwitchDefinition`'s: a rule,
/// optional in nearly every write's decision, was 105 bytes there, copied
/// and destroyed field by field through its value witnesses (issue 26,
/// callgrind); boxed it is one pointer, nil for a switch no policy names.
public struct PolicyRule: Equatable, Sendable {
  private var shared: SharedFields<Fields>

  private struct Fields: Equatable, Sendable {
    var key: String
    var readOnly: Bool
    var disabled: Bool
    var checked: Bool?
    var reason: String?
    var readOnlySource: SourceLocation?
    var disabledSource: SourceLocation?
    var schedule: Schedule?
    var endsAt: Int64?
  }

  public var key: String {
    get { shared.fields.key }
    set { shared.fields.key = newValue }
  }
  public var readOnly: Bool {
    get { shared.fields.readOnly }
    set { shared.fields.readOnly = newValue }
  }
  public var disabled: Bool {
    get { shared.fields.disabled }
    set { shared.fields.disabled = newValue }
  }
  /// The value the policy fixes; it has effect only together with `readOnly`.
  public var checked: Bool? {
    get { shared.fields.checked }
    set { shared.fields.checked = newValue }
  }
  public var reason: String? {
    get { shared.fields.reason }
    set { shared.fields.reason = newValue }
  }
  /// The section whose `ReadOnly=` is in force.
  public var readOnlySource: SourceLocation? {
    get { shared.fields.readOnlySource }
    set { shared.fields.readOnlySource = newValue }
  }
  /// The section whose `Disabled=` is in force.
  public var disabledSource: SourceLocation? {
    get { shared.fields.disabledSource }
    set { shared.fields.disabledSource = newValue }
  }
  /// `Schedule=`: the rule holds only inside these windows (`inEffect`);
  /// nil holds always.
  public var schedule: Schedule? {
    get { shared.fields.schedule }
    set { shared.fields.schedule = newValue }
  }
  /// The end of the window a scheduled rule holds in now (`inEffect`), in
  /// milliseconds: the State shows it as `readOnlyUntil`/`disabledUntil`.
  /// nil: it holds until the files change.
  public var endsAt: Int64? {
    get { shared.fields.endsAt }
    set { shared.fields.endsAt = newValue }
  }

  public init(
    key: String, readOnly: Bool = false, disabled: Bool = false, checked: Bool? = nil,
    reason: String? = nil, readOnlySource: SourceLocation? = nil,
    disabledSource: SourceLocation? = nil, schedule: Schedule? = nil, endsAt: Int64? = nil
  ) {
    shared = SharedFields(
      Fields(
        key: key, readOnly: readOnly, disabled: disabled, checked: checked, reason: reason,
        readOnlySource: readOnlySource, disabledSource: disabledSource, schedule: schedule,
        endsAt: endsAt))
  }

  /// The policy fixes the value: nobody can set it over the socket.
  public var fixesValue: Bool { shared.fields.readOnly && shared.fields.checked != nil }
}

/// The daemon's own settings from `switchd.conf`, with the documented defaults.
public struct DaemonSettings: Equatable, Sendable {
  public var socket: String?
  /// `VarlinkSocket=`: nil when absent (`io.switchd.Switches` beside the
  /// JSON-RPC socket, `varlinkSocketPath`), "" for none.
  public var varlinkSocket: String?
  public var database: String?
  public var adminGroup: String? = "switchd-admin"
  public var writers: String?
  public var socketMode: UInt32 = 0o666
  public var maxFrameBytes = 1_048_576
  public var maxConnections = 4096
  /// Connections one uid may hold at once; administrators are exempt.
  public var maxConnectionsPerUser = 256
  public var maxQueuedBytes = 1_048_576
  public var maxWatchesPerConnection = 64
  public var maxHistoryPage = 1000
  public var maxNestingDepth = 32
  public var historyRetention = 100_000
  public var logLevel: LogLevel = .info
  /// `Authorization=`: who decides the rights beyond reading.
  public var authorization: Authorization = .builtin

  public init() {}

  /// Where the varlink socket is for a JSON-RPC socket at `socketPath`;
  /// nil when `VarlinkSocket=` is empty (none).
  public func varlinkSocketPath(besides socketPath: String) -> String? {
    if let varlinkSocket { return varlinkSocket.isEmpty ? nil : varlinkSocket }
    guard let slash = socketPath.lastIndex(of: "/") else { return "io.switchd.Switches" }
    return socketPath[...slash] + "io.switchd.Switches"
  }
}

/// Who decides who may write and administer (`Authorization=`).
public enum Authorization: String, Sendable {
  /// The table "Who may do what" of docs/semantics.md: groups and uid ranges.
  case builtin
  /// polkit is asked for each call that needs a right (docs/semantics.md
  /// "polkit"); root and the daemon's own uid are never asked.
  case polkit
}

/// syslog priorities, as journald reads them from a `<N>` prefix.
public enum LogLevel: Int, Comparable, Sendable, CaseIterable {
  case error = 3
  case warning = 4
  case notice = 5
  case info = 6
  case debug = 7

  public static func < (a: LogLevel, b: LogLevel) -> Bool { a.rawValue < b.rawValue }

  public var name: String {
    switch self {
    case .error: return "error"
    case .warning: return "warning"
    case .notice: return "notice"
    case .info: return "info"
    case .debug: return "debug"
    }
  }
}

/// A configuration problem, always with the file and line it is on.
public struct ConfigDiagnostic: Equatable, Sendable, CustomStringConvertible {
  public enum Severity: Sendable { case error, warning }
  public var severity: Severity
  public var location: SourceLocation
  public var message: String

  public init(_ severity: Severity, _ location: SourceLocation, _ message: String) {
    self.severity = severity
    self.location = location
    self.message = message
  }

  /// `file.conf:line: message` (`file.conf: message` for line 0)
  public var description: String { "\(location): \(message)" }
}

/// A whole, valid configuration: settings, the schema and the policies.
/// Immutable; a reload builds a new one and swaps it in.
///
/// Its fields live in one copy-on-write box: a Catalog is handed to the
/// rules by value on every write (`Rules.plannedChanges`), and copying six
/// fields of dictionaries and arrays was a retain and a release of each
/// (~700 instructions of a toggle, callgrind); now it is one.
public struct Catalog: Sendable {
  private struct Fields: Sendable {
    var settings: DaemonSettings
    var switches: KeyTable<SwitchDefinition>
    var sortedKeys: [String]
    var policies: KeyTable<PolicyRule>
    var warnings: [ConfigDiagnostic]
    var dependencies: Dependencies
    var sharedKeys: KeyInterner
  }

  private var shared: SharedFields<Fields>

  public var settings: DaemonSettings {
    get { shared.fields.settings }
    _modify { yield &shared.fields.settings }
  }
  /// Declared switches by key (`KeyTable`: every write looks its key up).
  public var switches: KeyTable<SwitchDefinition> {
    get { shared.fields.switches }
    _modify { yield &shared.fields.switches }
  }
  /// Declared keys, sorted: the order `list` returns.
  public var sortedKeys: [String] {
    get { shared.fields.sortedKeys }
    _modify { yield &shared.fields.sortedKeys }
  }
  /// Policies by key, for declared and undeclared keys alike. A
  /// `KeyTable`, as `switches`: each write looks its key up here, and a
  /// Dictionary of Strings hashed it with SipHash (~0.4k instructions a
  /// toggle once any policy was in force, callgrind).
  public var policies: KeyTable<PolicyRule> {
    get { shared.fields.policies }
    _modify { yield &shared.fields.policies }
  }
  /// Warnings found while building it (errors prevent a Catalog).
  public var warnings: [ConfigDiagnostic] {
    get { shared.fields.warnings }
    _modify { yield &shared.fields.warnings }
  }
  /// What `Requires=` and `Conflicts=` say, ready to settle states with.
  public var dependencies: Dependencies {
    get { shared.fields.dependencies }
    _modify { yield &shared.fields.dependencies }
  }
  /// The declared long keys' Strings, which the tables of switches and
  /// values and a request's decoded key share (`KeyInterner`).
  public var sharedKeys: KeyInterner { shared.fields.sharedKeys }

  public init(
    settings: DaemonSettings = DaemonSettings(), switches: [SwitchDefinition],
    policies: [PolicyRule] = [], warnings: [ConfigDiagnostic] = []
  ) {
    var byKey: [String: SwitchDefinition] = [:]
    for s in switches { byKey[s.key] = s }
    // Sorted from the declaration order, not the dictionary's (which each
    // process seeds anew): the same work at every start, and little of it
    // for files that declare their switches in order.
    var keys = switches.map(\.key)
    keys.sort { $0.utf8.lexicographicallyPrecedes($1.utf8) }
    var unique: [String] = []
    unique.reserveCapacity(byKey.count)
    for key in keys where unique.last != key { unique.append(key) }
    let sharedKeys = KeyInterner(unique)
    var rules = KeyTable<PolicyRule>()
    for p in policies { rules[sharedKeys.shared(p.key)] = p }
    shared = SharedFields(
      Fields(
        settings: settings, switches: KeyTable(byKey), sortedKeys: unique, policies: rules,
        warnings: warnings, dependencies: Dependencies(switches: byKey, sortedKeys: unique),
        sharedKeys: sharedKeys))
  }

  /// This configuration with the keys it has in common with `old` as
  /// `old`'s Strings: the tables built under `old` (the records, the
  /// users' values, the log's chains) then find its keys by their first
  /// word, as before a reload (`KeyInterner`).
  public func sharingKeys(with old: Catalog) -> Catalog {
    let keys = old.sharedKeys
    guard !keys.isEmpty else { return self }
    let definitions = sortedKeys.compactMap { key -> SwitchDefinition? in
      guard var definition = switches[key] else { return nil }
      definition.key = keys.shared(definition.key)
      definition.requires = definition.requires.map(keys.shared)
      definition.conflicts = definition.conflicts.map(keys.shared)
      return definition
    }
    let rules = policies.values.map { rule in
      var rule = rule
      rule.key = keys.shared(rule.key)
      return rule
    }
    return Catalog(
      settings: settings, switches: definitions, policies: rules, warnings: warnings)
  }

  /// The number of declared switches a policy file names (merged across
  /// files; a closed `Schedule=` window counts too).
  public var policyCount: Int { policies.keys.filter { switches[$0] != nil }.count }
}

/// What a reload changed in the schema, for `schemaChanged` (docs/protocol.md
/// "Schema changes"): switches added, removed, and those whose declaration
/// says something else (label, description, icons, default, group, order…).
/// Where a switch is declared (file and line) is not what it says.
public struct SchemaChanges: Equatable, Sendable {
  public var added: [String]
  public var removed: [String]
  public var updated: [String]

  public init(from old: Catalog, to new: Catalog) {
    added = new.sortedKeys.filter { old.switches[$0] == nil }
    removed = old.sortedKeys.filter { new.switches[$0] == nil }
    updated = new.sortedKeys.filter { key in
      guard var before = old.switches[key], let after = new.switches[key] else { return false }
      before.source = after.source
      return before != after
    }
  }

  public var isEmpty: Bool { added.isEmpty && removed.isEmpty && updated.isEmpty }

  /// The part a watch whose patterns match `matches` is told of (nil: nothing).
  public func filtered(_ matches: (String) -> Bool) -> SchemaChanges? {
    var part = self
    part.added = added.filter(matches)
    part.removed = removed.filter(matches)
    part.updated = updated.filter(matches)
    return part.isEmpty ? nil : part
  }
}
