import Glibc
import SwitchCore
import SwitchSystem

/// What switchctl reads from its surroundings to find the daemon, passed in
/// so that tests can give any uid, variables and files without touching the
/// process's own.
struct Environment {
  /// The variables switchctl looks at (`SWITCHD_SOCKET`, `XDG_RUNTIME_DIR`).
  var variables: [String: String]
  var uid: UInt32
  /// Whether something exists at a path.
  var fileExists: (String) -> Bool
  /// Why a private directory (`/tmp/switchd-UID`) is not the user's alone,
  /// or nil when it is (`TrustedDirectory.privateDirectoryProblem`).
  var privateDirectoryProblem: (String) -> String? = { _ in nil }
  /// Standard input is a terminal: a person may answer a password prompt.
  var isTerminal = false
  /// The variables of `variableNames` whose value is not valid UTF-8 (and
  /// so not in `variables`): Swift's strings would repair it into U+FFFD, a
  /// path that names another file. Refused when read (`variableNotUTF8`).
  var notUTF8: Set<String> = []

  /// The variables switchctl reads. Only these are copied, so start-up never
  /// walks the whole environment.
  static let variableNames = ["SWITCHD_SOCKET", "XDG_RUNTIME_DIR"]

  /// The running process's environment.
  static func current() -> Environment {
    var variables: [String: String] = [:]
    var notUTF8: Set<String> = []
    for name in variableNames {
      guard let value = getenv(name) else { continue }
      if let text = String(validatingCString: value) {
        variables[name] = text
      } else {
        notUTF8.insert(name)
      }
    }
    let uid = getuid()
    var environment = Environment(
      variables: variables, uid: uid, fileExists: { access($0, F_OK) == 0 })
    environment.privateDirectoryProblem = {
      TrustedDirectory.privateDirectoryProblem($0, uid: uid)
    }
    environment.isTerminal = isatty(STDIN_FILENO) == 1
    environment.notUTF8 = notUTF8
    return environment
  }

  /// Why `invocation` cannot be run here: a variable the socket would be
  /// found from is not valid UTF-8 (one it does not read is left alone).
  func variableNotUTF8(for invocation: Invocation) -> String? {
    switch invocation.command {
    case .help, .version: return nil
    default: break
    }
    if let flag = invocation.socket, !flag.isEmpty { return nil }
    let read = uid == 0 ? ["SWITCHD_SOCKET"] : ["SWITCHD_SOCKET", "XDG_RUNTIME_DIR"]
    guard variables["SWITCHD_SOCKET", default: ""].isEmpty,
      let name = read.first(where: notUTF8.contains)
    else { return nil }
    return "$\(name) is not valid UTF-8: a path must be UTF-8"
  }

  /// The daemon's socket: `--socket`, then `$SWITCHD_SOCKET`, then the
  /// default. For root the default is the system socket. Anyone else may
  /// run their own daemon (`DefaultPaths.socket`) or use the system one, so
  /// their own socket is used when it exists and the system one otherwise.
  /// Their own socket in `/tmp` (no `XDG_RUNTIME_DIR`) is used only when its
  /// folder is theirs alone, as the daemon demands of it: anyone may make
  /// `/tmp/switchd-UID` first and listen there, to be told the user's
  /// changes and answer them falsely. `passedOver` then says why, for stderr.
  func socket(flag: String?) -> (path: String, passedOver: String?) {
    if let flag, !flag.isEmpty { return (flag, nil) }
    if let variable = variables["SWITCHD_SOCKET"], !variable.isEmpty { return (variable, nil) }
    if uid == 0 { return (DefaultPaths.systemSocket, nil) }
    let own = DefaultPaths.socket(uid: uid, environment: variables)
    guard fileExists(own) else { return (DefaultPaths.systemSocket, nil) }
    let folder = DefaultPaths.privateRuntimeDirectory(uid: uid)
    if own.hasPrefix(folder + "/"), let problem = privateDirectoryProblem(folder) {
      return (
        DefaultPaths.systemSocket,
        "not using \(own) (\(problem)); using \(DefaultPaths.systemSocket)"
      )
    }
    return (own, nil)
  }
}
