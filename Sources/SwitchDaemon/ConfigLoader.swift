import Glibc
import SwitchCore
import SwitchSystem

/// Reads a configuration directory (docs/configuration.md) from disk and builds a
/// `Catalog` with SwitchCore's `CatalogBuilder`. The only config I/O there is.
public enum ConfigLoader {
  /// The result of loading: a catalog, or every error (file:line: message).
  public struct Loaded {
    public var catalog: Catalog?
    public var diagnostics: [ConfigDiagnostic]
    public var errors: [String]
  }

  public static func load(directory: String) -> Loaded {
    var errors: [String] = []
    var st = stat()
    guard stat(directory, &st) == 0, (st.st_mode & S_IFMT) == S_IFDIR else {
      return Loaded(
        catalog: nil, diagnostics: [],
        errors: ["\(directory): the configuration directory does not exist"])
    }
    var daemonConf: [UInt8]?
    switch readConfigFile(directory + "/switchd.conf") {
    case .success(let bytes): daemonConf = bytes
    case .failure(let error) where error.errno == ENOENT: daemonConf = nil
    case .failure(let error): errors.append("switchd.conf: cannot be read: \(error)")
    }
    let switchFiles = readDropIns(directory: directory, folder: "switches.d", errors: &errors)
    let policyFiles = readDropIns(directory: directory, folder: "policy.d", errors: &errors)
    if !errors.isEmpty { return Loaded(catalog: nil, diagnostics: [], errors: errors) }
    let sources = ConfigSources(
      daemonConf: daemonConf, switchFiles: switchFiles, policyFiles: policyFiles)
    let (catalog, diagnostics) = CatalogBuilder.build(sources)
    let found = diagnostics.filter { $0.severity == .error }.map(\.description)
    return Loaded(catalog: found.isEmpty ? catalog : nil, diagnostics: diagnostics, errors: found)
  }

  /// `*.conf` files of `directory/folder` in lexical order of their names.
  static func readDropIns(
    directory: String, folder: String, errors: inout [String]
  ) -> [ConfigSources.File] {
    guard let dir = opendir(directory + "/" + folder) else {
      if errno != ENOENT {
        errors.append("\(folder): cannot be read: \(SystemError.last("opendir"))")
      }
      return []
    }
    defer { closedir(dir) }
    var names: [String] = []
    while let entry = readdir(dir) {
      let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
        String(cString: raw.bindMemory(to: CChar.self).baseAddress!)
      }
      if name.hasSuffix(".conf"), !name.hasPrefix(".") { names.append(name) }
    }
    names.sort { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) }
    var files: [ConfigSources.File] = []
    for name in names {
      let relative = folder + "/" + name
      switch readConfigFile(directory + "/" + relative) {
      case .success(let bytes): files.append(ConfigSources.File(name: relative, bytes: bytes))
      case .failure(let error): errors.append("\(relative): cannot be read: \(error)")
      }
    }
    return files
  }

  /// Reads a whole file (at most 16 MiB: configuration, not data). Bytes,
  /// not text: the parser reports a line that is not UTF-8.
  static func readConfigFile(_ path: String) -> Result<[UInt8], SystemError> {
    guard let file = Descriptor(opening: path, O_RDONLY) else {
      return .failure(.last("open \(path)"))
    }
    do throws(SystemError) {
      return .success(try file.readAll(limit: 16 << 20))
    } catch {
      return .failure(SystemError(errno: error.errno, call: "\(error.call) \(path)"))
    }
  }
}

extension AccessRules {
  /// Resolves who administers and who writes (the groups and their
  /// members, the daemon's uid, the human uids of login.defs) and logs what
  /// is missing. Done at start and at reload, never on the loop: the user
  /// and group databases and login.defs are the machine's, and reading
  /// them can block.
  static func resolve(_ settings: DaemonSettings, log: Log) -> AccessRules {
    let (rules, warnings) = lookUp(settings)
    for warning in warnings { log.warning(warning) }
    return rules
  }

  /// The rules, and a sentence for each configured group that does not
  /// exist. A missing admin group leaves administration to root and the
  /// daemon's uid; a missing Writers group lets nobody but administrators
  /// write (it was configured to restrict).
  static func lookUp(
    _ settings: DaemonSettings, loginDefs: String = LoginDefs.path
  ) -> (rules: AccessRules, warnings: [String]) {
    var rules = AccessRules(daemonUID: getuid())
    var warnings: [String] = []
    if let name = settings.adminGroup, !name.isEmpty {
      rules.adminGroup = gid(named: name)
      if rules.adminGroup == nil {
        warnings.append("AdminGroup \(name) does not exist: only root may administer switches")
      }
    }
    rules.writers = WritersGroup.resolve(settings.writers, lookUp: gid(named:))
    if let warning = rules.writers.warning { warnings.append(warning) }
    rules.members = GroupDatabase.memberUIDs(of: rules.groupsWithRights)
    // A missing or unreadable file means the defaults, as for useradd.
    rules.humanUIDs = LoginDefs.humanUIDs(try? ConfigLoader.readConfigFile(loginDefs).get())
    return (rules, warnings)
  }

  /// A number is taken as a gid; otherwise the group database's.
  static func gid(named name: String) -> UInt32? {
    UInt32(name) ?? GroupDatabase.gid(named: name)
  }
}
