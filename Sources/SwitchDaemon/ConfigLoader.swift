import Glibc
import SwitchCore

/// Reads a configuration directory (CONFIG.md) from disk and builds a
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
    var daemonConf: String?
    switch readTextFile(directory + "/switchd.conf") {
    case .success(let text): daemonConf = text
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
  ) -> [(name: String, text: String)] {
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
    var files: [(name: String, text: String)] = []
    for name in names {
      let relative = folder + "/" + name
      switch readTextFile(directory + "/" + relative) {
      case .success(let text): files.append((name: relative, text: text))
      case .failure(let error): errors.append("\(relative): cannot be read: \(error)")
      }
    }
    return files
  }

  /// Reads a whole file (at most 16 MiB: configuration, not data).
  static func readTextFile(_ path: String) -> Result<String, SystemError> {
    let fd = retryingEINTR { open(path, O_RDONLY | O_CLOEXEC) }
    guard fd >= 0 else { return .failure(.last("open \(path)")) }
    defer { close(fd) }
    var bytes: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 65_536)
    while true {
      let n = chunk.withUnsafeMutableBytes { raw in
        retryingEINTR { read(fd, raw.baseAddress, raw.count) }
      }
      if n < 0 { return .failure(.last("read \(path)")) }
      if n == 0 { break }
      bytes.append(contentsOf: chunk[0..<n])
      if bytes.count > 16 << 20 { return .failure(SystemError(errno: EFBIG, call: "read \(path)")) }
    }
    return .success(String(decoding: bytes, as: UTF8.self))
  }
}

/// Group ids of the configured admin and writers groups.
public struct GroupIDs: Equatable, Sendable {
  public var admin: UInt32?
  public var writers: WritersGroup

  public init(admin: UInt32? = nil, writers: WritersGroup = .everyone) {
    self.admin = admin
    self.writers = writers
  }

  /// Looks the groups up in the group database. A missing admin group
  /// leaves administration to root; for a missing Writers group see
  /// `WritersGroup.missing`.
  public static func resolve(_ settings: DaemonSettings, log: Log) -> GroupIDs {
    var ids = GroupIDs()
    if let name = settings.adminGroup, !name.isEmpty {
      ids.admin = gid(named: name)
      if ids.admin == nil {
        log.warning("AdminGroup \(name) does not exist: only root may administer switches")
      }
    }
    ids.writers = WritersGroup.resolve(settings.writers, lookUp: gid(named:))
    if let warning = ids.writers.warning { log.warning(warning) }
    return ids
  }

  /// A number is taken as a gid; otherwise getgrnam_r.
  static func gid(named name: String) -> UInt32? {
    if let number = UInt32(name) { return number }
    var group = group()
    var result: UnsafeMutablePointer<group>?
    var buffer = [CChar](repeating: 0, count: 16_384)
    let rc = getgrnam_r(name, &group, &buffer, buffer.count, &result)
    guard rc == 0, result != nil else { return nil }
    return group.gr_gid
  }
}
