import SwitchCore
import Testing

@testable import SwitchDaemon

/// `switchd`'s own command line: every flag, both spellings of a value,
/// missing values, unknown flags, and the commands that do not serve.
@Suite struct DaemonArgumentsTests {
  typealias Options = DaemonArguments.Options

  static func parsed(_ arguments: [String]) -> Result<
    DaemonArguments.Command, DaemonArguments.UsageError
  > {
    Result { () throws(DaemonArguments.UsageError) in try DaemonArguments.parse(arguments) }
  }

  @Test func noArgumentsServeTheSystemConfiguration() {
    #expect(Self.parsed([]) == .success(.serve(Options())))
    #expect(Options().configDirectory == DefaultPaths.systemConfig)
    #expect(Options().socket == nil && Options().database == nil)
  }

  static let serving: [([String], Options)] = [
    (["--config", "/c"], Options(configDirectory: "/c")),
    (["--config=/c"], Options(configDirectory: "/c")),
    (["--socket", "/s.sock"], Options(socket: "/s.sock")),
    (["--socket=/s.sock"], Options(socket: "/s.sock")),
    (["--database", "/d.db"], Options(database: "/d.db")),
    (["--database=/d.db"], Options(database: "/d.db")),
    // A value may contain `=`, and `-` alone is a value.
    (["--socket=/a=b"], Options(socket: "/a=b")),
    (["--database", "-"], Options(database: "-")),
    (
      ["--database", "/d.db", "--config", "/c", "--socket", "/s.sock"],
      Options(configDirectory: "/c", socket: "/s.sock", database: "/d.db")
    ),
    // The last of a repeated flag wins, as in most tools.
    (["--socket", "/one", "--socket=/two"], Options(socket: "/two")),
  ]

  @Test(arguments: serving)
  func flagsSetWhatIsServed(arguments: [String], expected: Options) {
    #expect(Self.parsed(arguments) == .success(.serve(expected)))
  }

  static let checking: [([String], String)] = [
    (["--check-config"], DefaultPaths.systemConfig),
    (["--check-config", "/c"], "/c"),
    (["--check-config=/c"], "/c"),
    // Without its own directory it checks `--config`'s, before or after it.
    (["--config", "/c", "--check-config"], "/c"),
    (["--check-config", "--config", "/c"], "/c"),
    (["--check-config", "/c", "--socket", "/s"], "/c"),
  ]

  @Test(arguments: checking)
  func checkConfigTakesAnOptionalDirectory(arguments: [String], directory: String) {
    #expect(Self.parsed(arguments) == .success(.checkConfig(directory: directory)))
  }

  static let answeredAtOnce: [([String], DaemonArguments.Command)] = [
    (["--help"], .help),
    (["-h"], .help),
    (["--version"], .version),
    // They win where they stand, over what follows them...
    (["--help", "--bogus"], .help),
    (["--version", "--config"], .version),
    (["--socket", "/s", "--help"], .help),
  ]

  @Test(arguments: answeredAtOnce)
  func helpAndVersion(arguments: [String], expected: DaemonArguments.Command) {
    #expect(Self.parsed(arguments) == .success(expected))
  }

  static let usageErrors: [([String], String)] = [
    (["--config"], "--config needs a directory"),
    (["--config="], "--config needs a directory"),
    (["--config", "--socket", "/s"], "--config needs a directory"),
    (["--config", ""], "--config needs a directory"),
    (["--socket"], "--socket needs a path"),
    (["--socket="], "--socket needs a path"),
    (["--database"], "--database needs a path"),
    (["--database", "--help"], "--database needs a path"),
    (["--check-config="], "--check-config needs a directory"),
    (["--bogus"], "unknown option --bogus"),
    (["--bogus=1"], "unknown option --bogus"),
    (["-x"], "unknown option -x"),
    (["/etc/switchd"], "unexpected argument /etc/switchd"),
    (["--config", "/c", "extra"], "unexpected argument extra"),
    // ...but not over an error before them.
    (["--bogus", "--help"], "unknown option --bogus"),
    (["--version=2"], "--version takes no value"),
    (["--help="], "--help takes no value"),
  ]

  @Test(arguments: usageErrors)
  func usageErrorsSayWhatIsWrong(arguments: [String], message: String) {
    #expect(Self.parsed(arguments) == .failure(DaemonArguments.UsageError(message: message)))
  }

  @Test func theUsageNamesEveryFlag() {
    for flag in ["--config", "--socket", "--database", "--check-config", "--version", "--help"] {
      #expect(DaemonArguments.usage.contains(flag), "\(flag)")
    }
  }
}
