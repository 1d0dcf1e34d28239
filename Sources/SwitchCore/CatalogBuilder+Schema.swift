// switches.d: the schema, the switches that exist.
extension CatalogBuilder {
  static let switchNames =
    [
      "Label", "Description", "Default", "CheckedIcon", "UncheckedIcon", "Group", "Scope",
      "Requires", "Conflicts",
      "ExecApply", "ApplyTimeoutSec",
    ] + readBackNames

  /// Reads the schema file by file, remembering where each key was first declared.
  struct SchemaReader {
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
  static func readSwitch(
    _ section: KeyFile.Section, header: SourceLocation, into report: inout Report
  ) -> SwitchDefinition? {
    var definition = SwitchDefinition(key: section.name, label: nil, defaultChecked: false)
    definition.source = header
    var labelLine: Int?
    var valid = true
    var execApplyLine: Int?
    var timeoutLine: Int?
    var timeout = ApplyCommand.defaultTimeoutMilliseconds
    var readBack = ReadBackDraft()
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
      case _ where readBackNames.contains(entry.name):
        if !readBack.read(entry, at: location, into: &report) { valid = false }
      default:
        report.error(location, unknownName(entry, section: section.name, allowed: switchNames))
        valid = false
      }
    }
    definition.apply?.timeoutMilliseconds = timeout
    let (readBackSettings, readBackValid) = readBack.finish(
      key: section.name, hasApply: execApplyLine != nil, file: header.file, into: &report)
    definition.readBack = readBackSettings
    if !readBackValid { valid = false }
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

  /// The words of an `ExecApply=` value (`programWords`), or what is wrong with it.
  static func execApplyWords(_ value: String) -> (words: [String]?, problem: String?) {
    programWords(value, name: "ExecApply", purpose: "applies the value")
  }

  /// Word sequences that make a label read as a command or a state.
  static let actionPrefixes: [[String]] = [
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
}
