/// The files of one configuration directory, as the daemon read them:
/// bytes, so that the parser can tell bytes that are not UTF-8 from text.
public struct ConfigSources: Sendable {
  /// One file and its path relative to the configuration directory.
  public struct File: Sendable {
    public var name: String
    public var bytes: [UInt8]

    public init(name: String, bytes: [UInt8]) {
      self.name = name
      self.bytes = bytes
    }
  }

  /// `switchd.conf`; nil when the file is absent (defaults apply).
  public var daemonConf: [UInt8]?
  /// `switches.d/*.conf` in lexical order, named like `switches.d/10-base.conf`.
  public var switchFiles: [File]
  /// `policy.d/*.conf` in lexical order, named like `policy.d/50-corp.conf`.
  public var policyFiles: [File]

  public init(daemonConf: [UInt8]?, switchFiles: [File], policyFiles: [File]) {
    self.daemonConf = daemonConf
    self.switchFiles = switchFiles
    self.policyFiles = policyFiles
  }

  /// Sources given as text (tests, tools).
  public init(
    daemonConf: String?, switchFiles: [(name: String, text: String)],
    policyFiles: [(name: String, text: String)]
  ) {
    self.init(
      daemonConf: daemonConf.map { Array($0.utf8) },
      switchFiles: switchFiles.map { File(name: $0.name, bytes: Array($0.text.utf8)) },
      policyFiles: policyFiles.map { File(name: $0.name, bytes: Array($0.text.utf8)) })
  }
}

/// Turns the texts of a configuration directory into a `Catalog`, or into
/// the list of everything wrong with them.
///
/// It does not stop at the first problem: `--check-config` and a refused
/// `reload` show every error and warning at once, each with file and line.
public enum CatalogBuilder {
  /// The file name diagnostics carry for the daemon's own settings.
  public static let daemonConfName = "switchd.conf"

  /// Builds the whole configuration. Returns the Catalog (with its warnings) when there are no errors,
  /// else nil; `diagnostics` holds every error and warning, in file order.
  public static func build(
    _ sources: ConfigSources
  ) -> (catalog: Catalog?, diagnostics: [ConfigDiagnostic]) {
    var report = Report()

    var settings = DaemonSettings()
    if let bytes = sources.daemonConf {
      report.file = 0
      settings = readSettings(bytes, into: &report)
    }

    var switches = SchemaReader()
    for (index, source) in sources.switchFiles.enumerated() {
      report.file = 1 + index
      switches.read(source.bytes, file: source.name, into: &report)
    }
    switches.checkDependencies(into: &report)

    var policies = PolicyReader()
    for (index, source) in sources.policyFiles.enumerated() {
      report.file = 1 + sources.switchFiles.count + index
      policies.read(source.bytes, file: source.name, into: &report)
    }
    let rules = policies.finish(declared: switches.declared, into: &report)

    let diagnostics = report.sorted()
    if diagnostics.contains(where: { $0.severity == .error }) {
      return (nil, diagnostics)
    }
    let catalog = Catalog(
      settings: settings, switches: switches.definitions, policies: rules,
      warnings: diagnostics)
    return (catalog, diagnostics)
  }

  // MARK: - Collecting diagnostics

  /// Diagnostics in the order they are found, sortable into file order.
  ///
  /// Some warnings (an ineffective `Checked=`, an undeclared key) can only be
  /// judged after every policy file is merged, yet belong to an earlier file;
  /// each diagnostic therefore carries the index of its file, and the report
  /// is sorted by file, then line, then discovery.
  private struct Report {
    private struct Item {
      var file: Int
      var sequence: Int
      var diagnostic: ConfigDiagnostic
    }

    /// Index of the file being read: 0 is `switchd.conf`, then switches.d, then policy.d.
    var file = 0
    private var items: [Item] = []

    mutating func add(_ diagnostic: ConfigDiagnostic, file: Int? = nil) {
      items.append(Item(file: file ?? self.file, sequence: items.count, diagnostic: diagnostic))
    }

    mutating func add(_ diagnostics: [ConfigDiagnostic]) {
      for diagnostic in diagnostics { add(diagnostic) }
    }

    mutating func error(_ location: SourceLocation, _ message: String, file: Int? = nil) {
      add(ConfigDiagnostic(.error, location, message), file: file)
    }

    mutating func warning(_ location: SourceLocation, _ message: String, file: Int? = nil) {
      add(ConfigDiagnostic(.warning, location, message), file: file)
    }

    func sorted() -> [ConfigDiagnostic] {
      items.sorted {
        ($0.file, $0.diagnostic.location.line, $0.sequence)
          < ($1.file, $1.diagnostic.location.line, $1.sequence)
      }.map(\.diagnostic)
    }
  }

  private static func unknownName(
    _ entry: KeyFile.Entry, section: String, allowed: [String]
  ) -> String {
    "unknown name \(entry.name) in [\(section)]: allowed are \(allowed.joined(separator: ", "))"
  }

  private static func notBoolean(_ entry: KeyFile.Entry) -> String {
    "\(entry.name)=\(entry.value) is not a boolean: use \(BooleanWord.choices)"
  }

  /// Within one file a section is written once and a name once per
  /// section: a repeat would silently override what came before it. (Across
  /// files overriding is what policy drop-ins are for, and stays allowed.)
  /// switches.d leaves repeated sections to its own "declared twice" error.
  private static func reportRepeats(
    _ keyFile: KeyFile, sections checkSections: Bool, into report: inout Report
  ) {
    func location(_ line: Int) -> SourceLocation { SourceLocation(file: keyFile.file, line: line) }
    var firstSection: [String: Int] = [:]
    for section in keyFile.sections {
      if checkSections, let first = firstSection[section.name] {
        report.error(
          location(section.line),
          "section [\(section.name)] appears twice in this file (first at \(location(first))): "
            + "write each section once")
      }
      firstSection[section.name] = firstSection[section.name] ?? section.line
      var firstName: [String: Int] = [:]
      for entry in section.entries {
        if let first = firstName[entry.name] {
          report.error(
            location(entry.line),
            "\(entry.name)= is set twice in [\(section.name)] (first at \(location(first))): "
              + "keep one")
        } else {
          firstName[entry.name] = entry.line
        }
      }
    }
  }

  // MARK: - switchd.conf

  private static let daemonNames = [
    "Socket", "Database", "AdminGroup", "Writers", "SocketMode", "MaxFrameBytes",
    "MaxConnections", "MaxConnectionsPerUser", "MaxQueuedBytes", "MaxWatchesPerConnection",
    "MaxHistoryPage",
    "MaxNestingDepth", "HistoryRetention", "LogLevel",
  ]

  /// `sun_path` holds 108 bytes including the terminating NUL (a test keeps
  /// this equal to SwitchSystem's `UnixSocketAddress.maxPathBytes`).
  static let maxSocketPathBytes = 107

  private static func readSettings(
    _ bytes: [UInt8], into report: inout Report
  ) -> DaemonSettings {
    let (keyFile, syntax) = KeyFile.parse(bytes: bytes, file: daemonConfName)
    report.add(syntax)
    reportRepeats(keyFile, sections: true, into: &report)
    var settings = DaemonSettings()
    for section in keyFile.sections {
      guard section.name == "Daemon" else {
        report.error(
          SourceLocation(file: keyFile.file, line: section.line),
          "unknown section [\(section.name)]: switchd.conf has only [Daemon]")
        continue
      }
      for entry in section.entries {
        let location = SourceLocation(file: keyFile.file, line: entry.line)
        if let problem = apply(entry, to: &settings) {
          report.error(location, problem)
        }
      }
    }
    return settings
  }

  /// Applies one `[Daemon]` entry; returns what is wrong with it, if anything.
  private static func apply(_ entry: KeyFile.Entry, to settings: inout DaemonSettings) -> String? {
    let value = entry.value
    switch entry.name {
    case "Socket":
      if value.isEmpty {
        settings.socket = nil
        return nil
      }
      if let problem = absolutePathProblem(entry) { return problem }
      if value.utf8.count > maxSocketPathBytes {
        return "Socket= is \(value.utf8.count) bytes long: a Unix socket path is at most "
          + "\(maxSocketPathBytes) bytes"
      }
      settings.socket = value
    case "Database":
      if value.isEmpty {
        settings.database = nil
        return nil
      }
      if let problem = absolutePathProblem(entry) { return problem }
      settings.database = value
    case "AdminGroup":
      // Empty is a deliberate choice, not "unset": no group, only root administers.
      settings.adminGroup = value.isEmpty ? nil : value
    case "Writers":
      settings.writers = value.isEmpty ? nil : value
    case "SocketMode":
      guard let mode = parseOctalMode(value) else {
        return "SocketMode=\(value) is not a file mode: use octal digits from 0000 to 0777,"
          + " like 0666 or 0660"
      }
      settings.socketMode = mode
    case "LogLevel":
      guard let level = LogLevel.allCases.first(where: { $0.name == value.lowercased() }) else {
        let names = LogLevel.allCases.map(\.name).joined(separator: ", ")
        return "LogLevel=\(value) is not a log level: use one of \(names)"
      }
      settings.logLevel = level
    default:
      guard let (range, keyPath) = numericSetting(entry.name) else {
        return unknownName(entry, section: "Daemon", allowed: daemonNames)
      }
      switch parseDecimal(value, limit: range.upperBound) {
      case .some(let number) where range.contains(number):
        settings[keyPath: keyPath] = number
      case .some:
        return "\(entry.name)=\(value) is out of range: it must be a whole number from "
          + "\(range.lowerBound) to \(range.upperBound)"
      case .none:
        return "\(entry.name)=\(value) is not a number: it must be a whole number from "
          + "\(range.lowerBound) to \(range.upperBound)"
      }
    }
    return nil
  }

  /// The allowed range and the field of a numeric `[Daemon]` name.
  ///
  /// A function rather than a table: key paths are not Sendable, so a static
  /// table of them is not allowed in Swift 6 mode.
  private static func numericSetting(
    _ name: String
  ) -> (ClosedRange<Int>, WritableKeyPath<DaemonSettings, Int>)? {
    switch name {
    case "MaxFrameBytes": return (1024...64 * 1024 * 1024, \.maxFrameBytes)
    case "MaxConnections": return (1...1_000_000, \.maxConnections)
    case "MaxConnectionsPerUser": return (1...65_536, \.maxConnectionsPerUser)
    case "MaxQueuedBytes": return (4096...1024 * 1024 * 1024, \.maxQueuedBytes)
    case "MaxWatchesPerConnection": return (1...10_000, \.maxWatchesPerConnection)
    case "MaxHistoryPage": return (1...1000, \.maxHistoryPage)
    case "MaxNestingDepth": return (2...512, \.maxNestingDepth)
    case "HistoryRetention": return (1...100_000_000, \.historyRetention)
    default: return nil
    }
  }

  private static func absolutePathProblem(_ entry: KeyFile.Entry) -> String? {
    entry.value.hasPrefix("/")
      ? nil : "\(entry.name)=\(entry.value) is not an absolute path: it must start with '/'"
  }

  /// A plain decimal number: digits only, no sign, no separators. A number
  /// above `limit` comes back as `limit + 1` so that huge inputs read as
  /// "out of range" rather than overflowing.
  static func parseDecimal(_ text: String, limit: Int) -> Int? {
    if text.isEmpty { return nil }
    var value = 0
    for byte in text.utf8 {
      guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
      if value <= limit { value = value * 10 + Int(byte - UInt8(ascii: "0")) }
    }
    return min(value, limit + 1)
  }

  /// Octal digits (`0666`, `660`) up to 0777.
  static func parseOctalMode(_ text: String) -> UInt32? {
    if text.isEmpty { return nil }
    var value: UInt32 = 0
    for byte in text.utf8 {
      guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "7") else { return nil }
      value = value * 8 + UInt32(byte - UInt8(ascii: "0"))
      if value > 0o777 { return nil }
    }
    return value
  }

  // MARK: - switches.d

  private static let switchNames = [
    "Label", "Description", "Default", "CheckedIcon", "UncheckedIcon", "Group", "Scope",
    "Requires", "Conflicts",
    "ExecApply", "ApplyTimeoutSec",
  ]

  /// Reads the schema file by file, remembering where each key was first declared.
  private struct SchemaReader {
    var definitions: [SwitchDefinition] = []
    private var firstDeclared: [String: SourceLocation] = [:]
    /// Each `Requires=`/`Conflicts=` line of a switch declared once, for
    /// `checkDependencies` once every file is read.
    var listings: [DependencyListing] = []

    var declared: Set<String> { Set(firstDeclared.keys) }

    /// Reports what `Requires=`/`Conflicts=` get wrong across the whole schema.
    func checkDependencies(into report: inout Report) {
      let problems = DependencyCheck.problems(
        listings, definitions: definitions, declared: declared)
      for problem in problems {
        report.error(problem.location, problem.message, file: problem.file)
      }
    }

    mutating func read(_ bytes: [UInt8], file: String, into report: inout Report) {
      let (keyFile, syntax) = KeyFile.parse(bytes: bytes, file: file)
      report.add(syntax)
      CatalogBuilder.reportRepeats(keyFile, sections: false, into: &report)
      for section in keyFile.sections {
        let header = SourceLocation(file: file, line: section.line)
        let key = section.name
        // Entries are checked even under a bad or duplicate header, so one
        // run of --check-config shows every mistake.
        let definition = CatalogBuilder.readSwitch(section, header: header, into: &report)
        if let problem = SwitchKey.problem(key) {
          report.error(header, "invalid switch key \"\(key)\": \(problem)")
          continue
        }
        if let first = firstDeclared[key] {
          report.error(
            header,
            "switch \(key) is declared twice (first at \(first)): one switch, one setting")
          continue
        }
        firstDeclared[key] = header
        for entry in section.entries where entry.name == "Requires" || entry.name == "Conflicts" {
          listings.append(
            DependencyListing(
              key: key, name: entry.name, keys: CatalogBuilder.dependencyKeys(entry.value),
              location: SourceLocation(file: file, line: entry.line), file: report.file))
        }
        if var definition {
          definition.order = definitions.count
          definitions.append(definition)
        }
      }
    }
  }

  /// One `[key]` of switches.d; nil when an entry is invalid (already reported).
  private static func readSwitch(
    _ section: KeyFile.Section, header: SourceLocation, into report: inout Report
  ) -> SwitchDefinition? {
    var definition = SwitchDefinition(key: section.name, label: nil, defaultChecked: false)
    definition.source = header
    var labelLine: Int?
    var valid = true
    var execApplyLine: Int?
    var timeoutLine: Int?
    var timeout = ApplyCommand.defaultTimeoutMilliseconds
    for entry in section.entries {
      let location = SourceLocation(file: header.file, line: entry.line)
      switch entry.name {
      case "Label":
        // An empty Label= is no label: it gets the missing-label warning.
        definition.label = entry.value.isEmpty ? nil : entry.value
        labelLine = entry.line
      case "Description": definition.description = entry.value
      case "CheckedIcon": definition.checkedIcon = entry.value
      case "UncheckedIcon": definition.uncheckedIcon = entry.value
      case "Group": definition.group = entry.value
      case "Scope":
        if let scope = Scope(configName: entry.value) {
          definition.scope = scope
        } else {
          report.error(
            location,
            "Scope=\(entry.value) of switch \(section.name) is not system or user")
          valid = false
        }
      case "Requires": definition.requires = dependencyKeys(entry.value)
      case "Conflicts": definition.conflicts = dependencyKeys(entry.value)
      case "ExecApply":
        execApplyLine = entry.line
        let (words, problem) = execApplyWords(entry.value)
        if let words {
          definition.apply = ApplyCommand(arguments: words)
        } else {
          report.error(location, problem ?? "ExecApply= is invalid")
          valid = false
        }
      case "ApplyTimeoutSec":
        timeoutLine = entry.line
        if let milliseconds = ApplyCommand.parseTimeout(entry.value) {
          timeout = milliseconds
        } else {
          report.error(
            location,
            "ApplyTimeoutSec=\(entry.value) is not a positive number of seconds "
              + "(at most 86400, like 5 or 0.5)")
          valid = false
        }
      case "Default":
        if let value = BooleanWord.parse(entry.value) {
          definition.defaultChecked = value
        } else {
          report.error(location, notBoolean(entry))
          valid = false
        }
      default:
        report.error(location, unknownName(entry, section: section.name, allowed: switchNames))
        valid = false
      }
    }
    definition.apply?.timeoutMilliseconds = timeout
    if let execApplyLine, definition.scope == .user {
      report.error(
        SourceLocation(file: header.file, line: execApplyLine),
        "ExecApply= on user-scope switch \(section.name): apply commands are for system "
          + "switches only")
      valid = false
    }
    if let timeoutLine, execApplyLine == nil {
      report.warning(
        SourceLocation(file: header.file, line: timeoutLine),
        "ApplyTimeoutSec= has no effect without ExecApply=")
    }
    if let label = definition.label, let labelLine {
      if labelNamesActionOrState(label) {
        report.warning(
          SourceLocation(file: header.file, line: labelLine),
          "label \"\(label)\" of switch \(section.name) names an action or a state: "
            + "name the setting (\"Wi-Fi\", not \"Turn on Wi-Fi\")")
      }
    } else {
      report.warning(
        header, "switch \(section.name) has no Label: always pair a switch with a label")
    }
    return valid ? definition : nil
  }

  /// The words of an `ExecApply=` value (`ApplyCommand.split`), or what is
  /// wrong with it: empty, an unclosed quote, or a program path that is not absolute.
  static func execApplyWords(_ value: String) -> (words: [String]?, problem: String?) {
    switch ApplyCommand.split(value) {
    case .failure(.empty):
      return (nil, "ExecApply= is empty: name the program that applies the value")
    case .failure(.unclosedQuote):
      return (nil, "ExecApply=\(value) has an unclosed double quote")
    case .success(let words):
      guard words[0].hasPrefix("/") else {
        return (
          nil,
          "ExecApply=\(value): the program \(words[0]) is not an absolute path: "
            + "it must start with '/'"
        )
      }
      return (words, nil)
    }
  }

  /// Word sequences that make a label read as a command or a state.
  private static let actionPrefixes: [[String]] = [
    ["turn", "on"], ["turn", "off"], ["switch", "on"], ["switch", "off"],
    ["enable"], ["disable"], ["activate"], ["deactivate"],
  ]

  /// A label that names an action (`Turn on Wi-Fi`, `Enable sync`) or a state
  /// (`On`, `Off`) instead of the setting: the switch itself shows the state.
  static func labelNamesActionOrState(_ label: String) -> Bool {
    let words = label.lowercased().split(whereSeparator: { $0 == " " || $0 == "\t" })
      .map(String.init)
    if words == ["on"] || words == ["off"] { return true }
    return actionPrefixes.contains { words.starts(with: $0) }
  }

  // MARK: - policy.d

  private static let policyNames = ["ReadOnly", "Disabled", "Checked", "Reason"]

  /// A policy being merged, with what the later warnings need to point at.
  private struct PolicyDraft {
    var rule: PolicyRule
    /// Where the key's first policy section is, for the undeclared-key warning.
    var firstSection: SourceLocation
    var firstSectionFile: Int
    /// The `Checked=` line in force.
    var checkedAt: (location: SourceLocation, file: Int)?
    /// The `ReadOnly=` line in force, whatever its value.
    var readOnlyAt: SourceLocation?
  }

  /// Merges policy files name by name, in order, as systemd drop-ins do
  /// (within one file a repeat is an error: `reportRepeats`).
  private struct PolicyReader {
    private var drafts: [String: PolicyDraft] = [:]
    private var order: [String] = []

    mutating func read(_ bytes: [UInt8], file: String, into report: inout Report) {
      let (keyFile, syntax) = KeyFile.parse(bytes: bytes, file: file)
      report.add(syntax)
      CatalogBuilder.reportRepeats(keyFile, sections: true, into: &report)
      for section in keyFile.sections {
        let header = SourceLocation(file: file, line: section.line)
        let key = section.name
        // A bad key is still read (into a throw-away draft) so that its
        // entries are checked too.
        let keyProblem = SwitchKey.problem(key)
        if let keyProblem {
          report.error(header, "invalid switch key \"\(key)\": \(keyProblem)")
        }
        var draft =
          drafts[key]
          ?? PolicyDraft(
            rule: PolicyRule(key: key), firstSection: header, firstSectionFile: report.file)
        for entry in section.entries {
          let location = SourceLocation(file: file, line: entry.line)
          switch entry.name {
          case "ReadOnly", "Disabled":
            guard let value = BooleanWord.parse(entry.value) else {
              report.error(location, notBoolean(entry))
              continue
            }
            if entry.name == "ReadOnly" {
              draft.rule.readOnly = value
              draft.rule.readOnlySource = header
              draft.readOnlyAt = location
            } else {
              draft.rule.disabled = value
              draft.rule.disabledSource = header
            }
          case "Checked":
            // Empty clears an earlier file's Checked=: it is the only way a
            // drop-in can say "fix no value".
            if entry.value.isEmpty {
              draft.rule.checked = nil
              draft.checkedAt = nil
            } else if let value = BooleanWord.parse(entry.value) {
              draft.rule.checked = value
              draft.checkedAt = (location, report.file)
            } else {
              report.error(location, notBoolean(entry))
            }
          case "Reason":
            draft.rule.reason = entry.value.isEmpty ? nil : entry.value
          default:
            report.error(location, unknownName(entry, section: key, allowed: policyNames))
          }
        }
        if keyProblem != nil { continue }
        if drafts[key] == nil { order.append(key) }
        drafts[key] = draft
      }
    }

    /// The merged rules; warns about what has no effect.
    func finish(declared: Set<String>, into report: inout Report) -> [PolicyRule] {
      var rules: [PolicyRule] = []
      for key in order {
        guard var draft = drafts[key] else { continue }
        // A source names the section that holds or disables; nothing is held
        // by a section that says no.
        if !draft.rule.readOnly { draft.rule.readOnlySource = nil }
        if !draft.rule.disabled { draft.rule.disabledSource = nil }
        if !declared.contains(key) {
          report.warning(
            draft.firstSection, "policy for undeclared switch \(key): ignored on this machine",
            file: draft.firstSectionFile)
        }
        if let checkedAt = draft.checkedAt, !draft.rule.readOnly {
          var message = "Checked= has no effect without ReadOnly=yes"
          if let lifted = draft.readOnlyAt { message += " (ReadOnly=no at \(lifted))" }
          report.warning(checkedAt.location, message, file: checkedAt.file)
        }
        rules.append(draft.rule)
      }
      return rules
    }
  }
}
