import SwitchCore
import SwitchProtocol
import Testing

@testable import SwitchCtl

/// The command line → `Invocation` table: every command, global options on
/// either side of it, and the usage errors (exit 2).
@Suite struct ArgumentParserTests {
  static let accepted: [([String], Command)] = [
    (["list"], .list(prefix: nil)),
    (["list", "notifications."], .list(prefix: "notifications.")),
    (["get", "wifi"], .get(key: "wifi")),
    (["is-on", "wifi"], .isOn(key: "wifi")),
    (["set", "wifi", "on"], .set(key: "wifi", checked: true, ifRevision: nil)),
    (["set", "wifi", "off"], .set(key: "wifi", checked: false, ifRevision: nil)),
    (
      ["set", "wifi", "on", "--if-revision", "7"],
      .set(key: "wifi", checked: true, ifRevision: 7)
    ),
    (["set", "--if-revision=7", "wifi", "no"], .set(key: "wifi", checked: false, ifRevision: 7)),
    (["on", "wifi"], .set(key: "wifi", checked: true, ifRevision: nil)),
    (["off", "wifi"], .set(key: "wifi", checked: false, ifRevision: nil)),
    (["toggle", "wifi"], .toggle(key: "wifi", ifRevision: nil)),
    (["toggle", "wifi", "--if-revision", "0"], .toggle(key: "wifi", ifRevision: 0)),
    (["reset", "wifi"], .reset(key: "wifi")),
    (["watch"], .watch(patterns: [], since: nil)),
    (
      ["watch", "wifi", "notifications.*", "--since", "42"],
      .watch(patterns: ["wifi", "notifications.*"], since: 42)
    ),
    (["history"], .history(key: nil, limit: nil, before: nil)),
    (
      ["history", "wifi", "--limit", "5", "--before", "40"],
      .history(key: "wifi", limit: 5, before: 40)
    ),
    (["lock", "bluetooth"], .lock(key: "bluetooth", reason: nil, checked: nil)),
    (
      ["lock", "bluetooth", "--reason", "Not on this network.", "--checked", "off"],
      .lock(key: "bluetooth", reason: "Not on this network.", checked: false)
    ),
    (["lock", "bluetooth", "--reason=a=b"], .lock(key: "bluetooth", reason: "a=b", checked: nil)),
    (["unlock", "bluetooth"], .unlock(key: "bluetooth")),
    (["disable", "bluetooth", "--reason", "Gone."], .disable(key: "bluetooth", reason: "Gone.")),
    (["enable", "bluetooth"], .enable(key: "bluetooth")),
    (["why", "wifi"], .why(key: "wifi")),
    (["status"], .status),
    (["reload"], .reload),
    (["help"], .help(command: nil)),
    (["help", "set"], .help(command: "set")),
    (["--help"], .help(command: nil)),
    (["-h"], .help(command: nil)),
    (["set", "--help"], .help(command: "set")),
    (["watch", "-h"], .help(command: "watch")),
    (["--version"], .version),
    // A reason may start with a dash when it is an option's value, or after `--`.
    (["lock", "wifi", "--reason", "-x-"], .lock(key: "wifi", reason: "-x-", checked: nil)),
    (["list", "--", "-"], .list(prefix: "-")),
    // A command's options before the command (README: before or after it).
    (["--limit", "1", "history"], .history(key: nil, limit: 1, before: nil)),
    (["--if-revision=3", "toggle", "wifi"], .toggle(key: "wifi", ifRevision: 3)),
  ]

  @Test(arguments: accepted)
  func commandParses(arguments: [String], command: Command) throws {
    let invocation = try ArgumentParser.parse(arguments).get()
    #expect(invocation.command == command)
    #expect(invocation.socket == nil)
    #expect(invocation.json == false)
  }

  @Test(arguments: [
    ["--socket", "/s", "--json", "get", "wifi"],
    ["get", "wifi", "--json", "--socket", "/s"],
    ["--json", "get", "--socket=/s", "wifi"],
    ["get", "--socket", "/s", "wifi", "--json"],
  ])
  func globalOptionsGoBeforeOrAfterTheCommand(arguments: [String]) throws {
    let invocation = try ArgumentParser.parse(arguments).get()
    #expect(invocation == Invocation(socket: "/s", json: true, command: .get(key: "wifi")))
  }

  @Test(arguments: [
    ("on", true), ("off", false), ("true", true), ("false", false), ("yes", true),
    ("no", false), ("1", true), ("0", false), ("ON", true), ("No", false),
  ])
  func boolWords(word: String, value: Bool) throws {
    let invocation = try ArgumentParser.parse(["set", "wifi", word]).get()
    #expect(invocation.command == .set(key: "wifi", checked: value, ifRevision: nil))
  }

  static let rejected: [([String], String, String?)] = [
    ([], "no command given.", nil),
    (["--json"], "no command given.", nil),
    (["frobnicate"], "unknown command 'frobnicate'.", nil),
    (["help", "frobnicate"], "unknown command 'frobnicate'.", nil),
    // A typo names the one command it is near; a switch named first, `set`.
    (["gte", "wifi"], "unknown command 'gte'; did you mean 'get'?", nil),
    (["stauts"], "unknown command 'stauts'; did you mean 'status'?", nil),
    (["help", "hsitory"], "unknown command 'hsitory'; did you mean 'history'?", nil),
    (["wifi", "on"], "unknown command 'wifi'; to change a switch: switchctl set wifi on.", nil),
    (["xyz"], "unknown command 'xyz'.", nil),
    (["--frob", "get", "wifi"], "unknown option '--frob'.", nil),
    (["get"], "'get' needs KEY.", "get"),
    (["get", "wifi", "bluetooth"], "unexpected argument 'bluetooth' for 'get'.", "get"),
    (["get", "wifi", "--reason", "x"], "unknown option '--reason' for 'get'.", "get"),
    (["set", "wifi"], "'set' needs on or off.", "set"),
    (
      ["set", "wifi", "maybe"],
      "'maybe' is not on or off (use on/off, yes/no, true/false or 1/0).", "set"
    ),
    (["set", "wifi", "on", "off"], "unexpected argument 'off' for 'set'.", "set"),
    (
      ["set", "wifi", "on", "--if-revision", "x"],
      "--if-revision needs a whole number from 0 up, not 'x'.", "set"
    ),
    (
      ["toggle", "wifi", "--if-revision", "-1"],
      "--if-revision needs a whole number from 0 up, not '-1'.", "toggle"
    ),
    (["toggle", "wifi", "--if-revision"], "--if-revision needs a value: N.", "toggle"),
    (
      ["reset", "wifi", "--if-revision", "1"], "unknown option '--if-revision' for 'reset'.",
      "reset"
    ),
    (
      ["history", "--limit", "0"], "--limit needs a whole number from 1 up, not '0'.",
      "history"
    ),
    (
      ["history", "--limit", "5", "--limit", "6"], "--limit is given twice.", "history"
    ),
    (
      ["watch", "Wi-Fi"],
      "'Wi-Fi' is not a key pattern: give a key or a prefix ending in *.", "watch"
    ),
    (["watch", "--since", "soon"], "--since needs a whole number from 0 up, not 'soon'.", "watch"),
    (
      ["lock", "wifi", "--checked", "maybe"],
      "'maybe' is not on or off (use on/off, yes/no, true/false or 1/0).", "lock"
    ),
    (["status", "now"], "unexpected argument 'now' for 'status'.", "status"),
    (["get", "wifi", "--socket"], "--socket needs a value: PATH.", "get"),
    (["get", "wifi", "--socket", ""], "--socket needs a PATH, not an empty one.", "get"),
    (["--socket=", "status"], "--socket needs a PATH, not an empty one.", nil),
    (["get", "wifi", "--json=yes"], "--json takes no value.", "get"),
    (["--limit", "1", "get", "wifi"], "unknown option '--limit' for 'get'.", "get"),
    (["--user", "0", "--user", "1", "list"], "--user is given twice.", nil),
    (["--socket", "/a", "list", "--socket", "/b"], "--socket is given twice.", "list"),
    (["set", "wifi", "off", "--no-ask=no"], "--no-ask takes no value.", "set"),
  ]

  /// An option before the command is read as the first command that has
  /// it takes it: every command that has an option must take it alike.
  @Test func everyCommandTakesAnOptionOfOneNameAlike() {
    var takes: [String: String?] = [:]
    for command in Commands.all {
      for option in command.options {
        if let seen = takes[option.name] {
          #expect(seen == option.valueName, "\(option.name) in \(command.name)")
        }
        takes[option.name] = option.valueName
      }
    }
  }

  @Test(arguments: rejected)
  func usageErrors(arguments: [String], message: String, command: String?) {
    var expected = UsageError(message: message, command: command)
    expected.json = arguments.contains("--json")
    #expect(ArgumentParser.parse(arguments) == .failure(expected))
  }

  @Test func usageErrorPrintsOneLineAndAHintAndExits2() {
    let run = runCtl(["set", "wifi", "maybe"])
    #expect(run.code == .usage)
    #expect(run.code.rawValue == 2)
    #expect(run.out.isEmpty)
    #expect(
      run.err == [
        "switchctl: 'maybe' is not on or off (use on/off, yes/no, true/false or 1/0).",
        "Try 'switchctl set --help'.",
      ])
    #expect(runCtl([]).err == ["switchctl: no command given.", "Try 'switchctl --help'."])
  }

  /// With `--json` a usage error is also the error object on stdout
  /// (`code` null, `data.name` "Usage"), wherever the option stands.
  @Test func aUsageErrorWithJSONIsAnErrorObjectOnStdout() throws {
    for arguments in [
      ["--json", "get"], ["set", "wifi", "maybe", "--json"], ["--json", "--bogus"],
      // The error stands before `--json`: the line still asked for it.
      ["frob", "wifi", "--json"], ["get", "wifi", "--bogus", "--json"],
      ["history", "--limit", "1", "--limit", "2", "--json"],
    ] {
      let run = runCtl(arguments)
      #expect(run.code == .usage)
      #expect(run.out.count == 1, "\(arguments)")
      let object = try JSONParser.parse(run.out.first ?? "", maxDepth: 8)
      #expect(object["code"] == .null)
      #expect(object["data"]?["name"] == .string("Usage"))
      #expect(object["message"]?.stringValue?.isEmpty == false)
      #expect(!run.err.isEmpty)
    }
    // Without it, after `--`, or as an option's value, stdout stays empty.
    #expect(runCtl(["get"]).out.isEmpty)
    let asValue = runCtl(["--socket", "--json", "get"])
    #expect(asValue.code == .usage && asValue.out.isEmpty)
    let asLaterValue = runCtl(["frob", "--reason", "--json"])
    #expect(asLaterValue.code == .usage && asLaterValue.out.isEmpty)
    let afterEnd = runCtl(["set", "wifi", "maybe", "--", "--json"])
    #expect(afterEnd.code == .usage && afterEnd.out.isEmpty)
  }

  @Test func everyCommandHasHelp() {
    for spec in Commands.all {
      let run = runCtl([spec.name, "--help"])
      #expect(run.code == .success)
      #expect(run.out.first?.hasPrefix("Usage: switchctl \(spec.name)") == true)
      #expect(run.out.count >= 4)
      #expect(runCtl(["help", spec.name]).out == run.out)
    }
    let overview = runCtl(["--help"]).out
    for spec in Commands.all {
      #expect(overview.contains { $0.hasPrefix("  " + spec.synopsis + " ") })
    }
    #expect(overview.allSatisfy { $0.count <= 80 })
  }

  @Test func setHelpShowsUsageOptionsAndDescription() {
    let out = runCtl(["set", "--help"]).out
    #expect(
      out[0] == "Usage: switchctl set KEY on|off [--if-revision N] [--for SPAN] [--until TIME]")
    #expect(out[1] == "                     [--confirm SPAN] [--no-ask]")
    #expect(out.contains { $0.hasPrefix("Sets the switch to on or off") })
    #expect(out.contains { $0.hasPrefix("  --if-revision N  change it only if") })
  }

  /// `--user` is in the help of every command that takes it, with '*' where
  /// it is allowed, and the parser refuses it where the help leaves it out:
  /// both read the table's `user`.
  @Test func helpShowsUserWhereTheCommandTakesIt() {
    let watch = runCtl(["help", "watch"]).out
    #expect(watch.contains { $0.hasPrefix("  --user USER ") && $0.contains("'*'") }, "\(watch)")
    #expect(runCtl(["help", "history"]).out.contains { $0.hasPrefix("  --user USER ") })
    let get = runCtl(["get", "--help"]).out
    #expect(get.contains { $0.hasPrefix("  --user USER ") && !$0.contains("'*'") }, "\(get)")
    for spec in Commands.all {
      let help = runCtl(["help", spec.name]).out
      let shown = help.contains { $0.hasPrefix("  --user USER ") }
      #expect(shown == (spec.user == .one || spec.user == .oneOrEvery), "\(spec.name)")
      #expect(help.allSatisfy { $0.count <= 80 }, "\(help)")
      let arguments = spec.arguments.isEmpty ? [] : ["x"]
      if spec.user == .refused {
        #expect(
          ArgumentParser.parse(["--user", "1000", spec.name] + arguments)
            == .failure(
              UsageError(
                message: "'\(spec.name)' does not act as one user: --user does not apply.",
                command: spec.name)))
      }
    }
    #expect(
      ArgumentParser.parse(["--user", "*", "get", "wifi"])
        == .failure(
          UsageError(
            message: "--user '*' (every user) is for watch and history only.", command: "get")))
    // help talks to no daemon: --user changes nothing, as with --help.
    #expect(runCtl(["--user", "bob", "help", "watch"]).out == watch)
  }

  @Test func versionPrintsTheVersion() {
    #expect(runCtl(["--version"]).out == ["switchctl " + SwitchdVersion.current])
  }
}
