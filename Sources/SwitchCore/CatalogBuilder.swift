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
}
