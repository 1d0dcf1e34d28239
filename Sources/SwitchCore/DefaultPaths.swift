/// Where switchd keeps its socket and database when no flag or setting
/// says: the directories systemd made for the service when it runs as one,
/// else system paths for root and the user's XDG runtime and state
/// directories otherwise. Pure: the caller passes uid and environment.
public enum DefaultPaths {
  public static let systemSocket = "/run/switchd/switchd.sock"
  public static let systemDatabase = "/var/lib/switchd/switches.db"
  public static let systemConfig = "/etc/switchd"

  /// Where a user's socket goes when there is no `XDG_RUNTIME_DIR`
  /// (`/tmp/switchd-UID`). Anyone may create it first in `/tmp`, so the
  /// daemon uses it only if it is the user's own, not a link, and mode 0700,
  /// as the XDG rules ask of a runtime directory.
  public static func privateRuntimeDirectory(uid: UInt32) -> String { "/tmp/switchd-\(uid)" }

  /// The daemon's socket for a user: `$XDG_RUNTIME_DIR/switchd/switchd.sock`,
  /// or `/tmp/switchd-UID/switchd.sock` when there is no runtime directory.
  public static func socket(uid: UInt32, environment: [String: String]) -> String {
    // Under systemd (RuntimeDirectory=switchd) the service's own directory,
    // whatever user it runs as.
    if let runtime = systemdDirectory("RUNTIME_DIRECTORY", environment) {
      return runtime + "/switchd.sock"
    }
    if uid == 0 { return systemSocket }
    if let runtime = environment["XDG_RUNTIME_DIR"], runtime.hasPrefix("/") {
      return runtime + "/switchd/switchd.sock"
    }
    return privateRuntimeDirectory(uid: uid) + "/switchd.sock"
  }

  /// The daemon's database for a user: `$XDG_STATE_HOME/switchd/switches.db`,
  /// or `~/.local/state/switchd/switches.db`.
  public static func database(uid: UInt32, environment: [String: String]) -> String {
    // Under systemd (StateDirectory=switchd; the unit runs as user switchd).
    if let state = systemdDirectory("STATE_DIRECTORY", environment) {
      return state + "/switches.db"
    }
    if uid == 0 { return systemDatabase }
    if let state = environment["XDG_STATE_HOME"], state.hasPrefix("/") {
      return state + "/switchd/switches.db"
    }
    if let home = environment["HOME"], home.hasPrefix("/") {
      return home + "/.local/state/switchd/switches.db"
    }
    return privateRuntimeDirectory(uid: uid) + "/switches.db"
  }
}

extension DefaultPaths {
  /// The first absolute path of a `*_DIRECTORY` variable systemd sets for
  /// `StateDirectory=`/`RuntimeDirectory=` (colon-separated when several).
  static func systemdDirectory(_ name: String, _ environment: [String: String]) -> String? {
    guard let value = environment[name],
      let first = value.split(separator: ":").first, first.hasPrefix("/")
    else { return nil }
    return String(first)
  }
}

/// The version every binary reports.
public enum SwitchdVersion {
  public static let current = "0.1.0"
}
