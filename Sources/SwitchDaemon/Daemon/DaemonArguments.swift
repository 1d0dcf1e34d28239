import SwitchCore

/// `switchd`'s command line: parsed without side effects, so that every flag
/// can be tested; `Daemon.main` acts on the result.
enum DaemonArguments {
  static let usage = """
    Usage: switchd [--config DIR] [--socket PATH] [--database PATH]
           switchd --check-config [DIR]
           switchd --help | --version

    Keeps boolean settings with the rules of a UI switch, serves them over a
    Unix-socket JSON-RPC 2.0 API, and tells watchers of every change.

    Options:
      --config DIR        configuration directory (default: /etc/switchd)
      --socket PATH       socket to listen on (overrides Socket= in switchd.conf)
      --database PATH     SQLite database (overrides Database= in switchd.conf)
      --check-config [DIR]  check a configuration directory and exit (0 clean, 1 errors)
      --version           print the version
      --help              print this help

    Without --socket or Socket=, root uses /run/switchd/switchd.sock and
    /var/lib/switchd/switches.db; other users their XDG runtime and state
    directories. Signals: SIGTERM/SIGINT stop gracefully, SIGHUP reloads.
    """

  /// What to serve: the flags that override the configuration.
  struct Options: Equatable {
    var configDirectory = DefaultPaths.systemConfig
    var socket: String?
    var database: String?
  }

  enum Command: Equatable {
    case serve(Options)
    /// `--check-config`: the directory to check (its own argument, or `--config`'s).
    case checkConfig(directory: String)
    case help
    case version
  }

  /// A command line switchd cannot run: the message after `switchd: `.
  struct UsageError: Error, Equatable, CustomStringConvertible {
    var message: String
    var description: String { message }
  }

  /// Parses `arguments` (without the program name). Flags are read left to
  /// right; `--help` and `--version` win where they stand, so an error
  /// before them is still reported. `--flag=value` is `--flag value`.
  static func parse(_ arguments: [String]) throws(UsageError) -> Command {
    var options = Options()
    var checkOnly = false
    var rest = arguments[...]
    while let argument = rest.popFirst() {
      var flag = argument
      var attached: String?
      if argument.hasPrefix("--"), let equals = argument.firstIndex(of: "=") {
        flag = String(argument[..<equals])
        attached = String(argument[argument.index(after: equals)...])
      }
      /// The flag's value: attached with `=`, or the next argument unless that
      /// is another flag.
      func value(_ what: String) throws(UsageError) -> String {
        if let attached, !attached.isEmpty { return attached }
        guard attached == nil, let next = rest.first, !next.isEmpty, !next.hasPrefix("--") else {
          throw UsageError(message: "\(flag) needs \(what)")
        }
        rest = rest.dropFirst()
        return next
      }
      if attached != nil && (flag == "--help" || flag == "--version") {
        throw UsageError(message: "\(flag) takes no value")
      }
      switch flag {
      case "--help", "-h":
        return .help
      case "--version":
        return .version
      case "--config":
        options.configDirectory = try value("a directory")
      case "--socket":
        options.socket = try value("a path")
      case "--database":
        options.database = try value("a path")
      case "--check-config":
        checkOnly = true
        // The directory is optional: without one, `--config`'s (or the default) is checked.
        if attached != nil || rest.first.map({ !$0.hasPrefix("--") }) == true {
          options.configDirectory = try value("a directory")
        }
      default:
        if argument.hasPrefix("-") { throw UsageError(message: "unknown option \(flag)") }
        throw UsageError(message: "unexpected argument \(argument)")
      }
    }
    return checkOnly ? .checkConfig(directory: options.configDirectory) : .serve(options)
  }
}
