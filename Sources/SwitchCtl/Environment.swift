import Glibc
import SwitchCore

/// What switchctl reads from its surroundings to find the daemon, passed in
/// so that tests can give any uid, variables and files without touching the
/// process's own.
struct Environment {
  /// The variables switchctl looks at (`SWITCHD_SOCKET`, `XDG_RUNTIME_DIR`).
  var variables: [String: String]
  var uid: UInt32
  /// Whether something exists at a path.
  var fileExists: (String) -> Bool
  /// Standard input is a terminal: a person may answer a password prompt.
  var isTerminal = false

  /// The variables switchctl reads. Only these are copied, so start-up never
  /// walks the whole environment.
  static let variableNames = ["SWITCHD_SOCKET", "XDG_RUNTIME_DIR"]

  /// The running process's environment.
  static func current() -> Environment {
    var variables: [String: String] = [:]
    for name in variableNames {
      if let value = getenv(name) { variables[name] = String(cString: value) }
    }
    var environment = Environment(
      variables: variables, uid: getuid(), fileExists: { access($0, F_OK) == 0 })
    environment.isTerminal = isatty(STDIN_FILENO) == 1
    return environment
  }

  /// The daemon's socket: `--socket`, then `$SWITCHD_SOCKET`, then the
  /// default. For root the default is the system socket. Anyone else may
  /// run their own daemon (`DefaultPaths.socket`) or use the system one, so
  /// their own socket is used when it exists and the system one otherwise.
  func socketPath(flag: String?) -> String {
    if let flag, !flag.isEmpty { return flag }
    if let variable = variables["SWITCHD_SOCKET"], !variable.isEmpty { return variable }
    if uid == 0 { return DefaultPaths.systemSocket }
    let own = DefaultPaths.socket(uid: uid, environment: variables)
    return fileExists(own) ? own : DefaultPaths.systemSocket
  }
}
