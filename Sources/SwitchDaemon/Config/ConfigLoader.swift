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

  /// Loads `directory` as CONFIG.md says, trusting only what `trust` does
  /// ("Files switchd trusts"): an untrusted or unreadable file is an error
  /// that names it and is never parsed, so no message quotes its lines.
  public static func load(directory: String, trust: TrustedFiles = TrustedFiles()) -> Loaded {
    let root: TrustedDirectoryHandle
    do throws(TrustedFiles.Problem) {
      root = try trust.openDirectory(directory)
    } catch .missing {
      return failed(["\(directory): the configuration directory does not exist"])
    } catch {
      return failed(["\(error)"])
    }
    var errors: [String] = []
    var daemonConf: [UInt8]?
    do throws(TrustedFiles.Problem) {
      daemonConf = try trust.read(CatalogBuilder.daemonConfName, in: root, limit: maxFileBytes)
    } catch .missing {
      daemonConf = nil
    } catch {
      errors.append("\(error)")
    }
    var skipped: [ConfigDiagnostic] = []
    let switchFiles = readDropIns(
      in: root, "switches.d", trust: trust, errors: &errors, skipped: &skipped)
    let policyFiles = readDropIns(
      in: root, "policy.d", trust: trust, errors: &errors, skipped: &skipped)
    // A file refused (not trusted, unreadable) is not read, and the
    // configuration is refused; the files that were read are still checked,
    // so that one run names every problem (it named the refused file alone,
    // and the next problem only once that was mended).
    let refused = errors
    let sources = ConfigSources(
      daemonConf: daemonConf, switchFiles: switchFiles, policyFiles: policyFiles)
    var (catalog, diagnostics) = CatalogBuilder.build(sources)
    diagnostics = skipped + diagnostics
    if refused.isEmpty, let catalog { diagnostics += programWarnings(catalog, trust: trust) }
    let found = refused + diagnostics.filter { $0.severity == .error }.map(\.description)
    return Loaded(catalog: found.isEmpty ? catalog : nil, diagnostics: diagnostics, errors: found)
  }

  private static func failed(_ errors: [String]) -> Loaded {
    Loaded(catalog: nil, diagnostics: [], errors: errors)
  }

  /// Configuration, not data: a larger file is refused.
  static let maxFileBytes = 16 << 20

  /// `*.conf` files of `folder` in lexical order of their names (none when
  /// the folder is absent). A hidden one (`.50-corp.conf`) is not read, as
  /// systemd reads none: an editor's lock file (`.#50-corp.conf`, a
  /// dangling symlink) would fail every reload while the file is edited.
  /// But it ends in `.conf`, so it is named in `skipped` (a warning): a
  /// hold written there must not vanish without a word. An editor's lock
  /// is not: it comes and goes with every edit, and renaming it is no advice.
  static func readDropIns(
    in root: borrowing TrustedDirectoryHandle, _ folder: String, trust: TrustedFiles,
    errors: inout [String], skipped: inout [ConfigDiagnostic]
  ) -> [ConfigSources.File] {
    let directory: TrustedDirectoryHandle
    do throws(TrustedFiles.Problem) {
      directory = try trust.openDirectory(in: root, folder)
    } catch .missing {
      return []
    } catch {
      errors.append("\(error)")
      return []
    }
    let names: [(name: String, valid: Bool)]
    do throws(TrustedFiles.Problem) {
      names = try directory.names().filter { $0.name.hasSuffix(".conf") }
    } catch {
      errors.append("\(error)")
      return []
    }
    var files: [ConfigSources.File] = []
    for (name, valid) in names {
      if name.hasPrefix(".") {
        if !name.hasPrefix(".#") {
          skipped.append(
            ConfigDiagnostic(
              .warning, SourceLocation(file: folder + "/" + name, line: 0),
              "a hidden file is not read; rename it without the leading dot to use it"))
        }
        continue
      }
      // Its name was read with each bad byte as U+FFFD: opened by that
      // text it "did not exist".
      guard valid else {
        errors.append(
          "\(directory.path)/\(name): its name is not UTF-8 (shown with U+FFFD for each bad"
            + " byte); rename it")
        continue
      }
      do throws(TrustedFiles.Problem) {
        let bytes = try trust.read(name, in: directory, limit: maxFileBytes)
        files.append(ConfigSources.File(name: folder + "/" + name, bytes: bytes))
      } catch {
        errors.append("\(error)")
      }
    }
    return files
  }

  /// Reads a whole regular file of the system's (login.defs), never
  /// blocking on a FIFO or device in its place. Bytes, not text.
  static func readSystemFile(_ path: String) -> Result<[UInt8], SystemError> {
    guard let file = Descriptor(opening: path, O_RDONLY | O_NONBLOCK | O_NOCTTY) else {
      return .failure(.last("open \(path)"))
    }
    var status = stat()
    guard fstat(file.raw, &status) == 0 else { return .failure(.last("fstat \(path)")) }
    guard status.st_mode & S_IFMT == S_IFREG else {
      return .failure(SystemError(errno: EINVAL, call: "read \(path) (not a regular file)"))
    }
    do throws(SystemError) {
      return .success(try file.readAll(limit: maxFileBytes))
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
    var rules = AccessRules(daemonUID: getuid(), authorization: settings.authorization)
    var warnings: [String] = []
    if let name = settings.adminGroup, !name.isEmpty {
      rules.adminGroup = gid(named: name)
      if rules.adminGroup == nil {
        warnings.append(
          "AdminGroup \(name) does not exist: only root and switchd's own user may administer "
            + "switches")
      }
    }
    rules.writers = WritersGroup.resolve(settings.writers, lookUp: gid(named:))
    if let warning = rules.writers.warning { warnings.append(warning) }
    rules.members = GroupDatabase.memberUIDs(of: rules.groupsWithRights)
    // A missing or unreadable file means the defaults, as for useradd.
    rules.humanUIDs = LoginDefs.humanUIDs(try? ConfigLoader.readSystemFile(loginDefs).get())
    return (rules, warnings)
  }

  /// A number is taken as a gid; otherwise the group database's.
  static func gid(named name: String) -> UInt32? {
    UInt32(name) ?? GroupDatabase.gid(named: name)
  }
}
