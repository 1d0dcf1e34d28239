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
  /// path that names another file. Refused when read (`socket(flag:)`).
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

  /// The daemon's socket: `--socket`, then `$SWITCHD_SOCKET`, then the
  /// default. For root the default is the system socket. Anyone else may
  /// run their own daemon (`DefaultPaths.socket`) or use the system one, so
  /// their own socket is used when it exists and the system one otherwise.
  /// Their own socket in `/tmp` (no `XDG_RUNTIME_DIR`) is used only when its
  /// folder is theirs alone, as the daemon demands of it: anyone may make
  /// `/tmp/switchd-UID` first and listen there, to be told the user's
  /// changes and answer them falsely. `passedOver` then says why, for stderr.
  /// `notUTF8` says which variable it would be found from is not UTF-8
  /// (`notUTF8`, the set): a command that talks to switchd is refused then.
  func socket(flag: String?) -> (path: String, passedOver: String?, notUTF8: String?) {
    if let flag, !flag.isEmpty { return (flag, nil, nil) }
    if let variable = variables["SWITCHD_SOCKET"], !variable.isEmpty { return (variable, nil, nil) }
    if let unread = unreadable("SWITCHD_SOCKET") { return (DefaultPaths.systemSocket, nil, unread) }
    if uid == 0 { return (DefaultPaths.systemSocket, nil, nil) }
    if let unread = unreadable("XDG_RUNTIME_DIR") {
      return (DefaultPaths.systemSocket, nil, unread)
    }
    let own = DefaultPaths.socket(uid: uid, environment: variables)
    guard fileExists(own) else { return (DefaultPaths.systemSocket, nil, nil) }
    let folder = DefaultPaths.privateRuntimeDirectory(uid: uid)
    if own.hasPrefix(folder + "/"), let problem = privateDirectoryProblem(folder) {
      return (
        DefaultPaths.systemSocket,
        "not using \(own) (\(problem)); using \(DefaultPaths.systemSocket)", nil
      )
    }
    return (own, nil, nil)
  }

  /// The sentence for `name` when its value is not UTF-8.
  private func unreadable(_ name: String) -> String? {
    notUTF8.contains(name) ? "$\(name) is not valid UTF-8: a path must be UTF-8" : nil
  }
}
