// The diagnostics every reader of CatalogBuilder collects, in file order.
extension CatalogBuilder {
  /// Diagnostics in the order they are found, sortable into file order.
  ///
  /// Some warnings (an ineffective `Checked=`, an undeclared key) can only be
  /// judged after every policy file is merged, yet belong to an earlier file;
  /// each diagnostic therefore carries the index of its file, and the report
  /// is sorted by file, then line, then discovery.
  struct Report {
    struct Item {
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

  static func unknownName(
    _ entry: KeyFile.Entry, section: String, allowed: [String]
  ) -> String {
    "unknown name \(entry.name) in [\(section)]: allowed are \(allowed.joined(separator: ", "))"
  }

  static func notBoolean(_ entry: KeyFile.Entry) -> String {
    "\(entry.name)=\(entry.value) is not a boolean: use \(BooleanWord.choices)"
  }

  /// Within one file a section is written once and a name once per
  /// section: a repeat would silently override what came before it. (Across
  /// files overriding is what policy drop-ins are for, and stays allowed.)
  /// switches.d leaves repeated sections to its own "declared twice" error.
  static func reportRepeats(
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
}
