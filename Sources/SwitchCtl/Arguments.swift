import Glibc
import SwitchCore
import SwitchProtocol

/// What switchctl was asked to do: the global options and one command.
struct Invocation: Equatable {
  /// `--socket PATH`, when given.
  var socket: String?
  /// `--json`: print the result object instead of text.
  var json = false
  /// `--user USER`: act as that user (a name, a uid, or `*` for every
  /// user on `watch` and `history`), resolved when run.
  var user: String?
  /// `--no-ask-password`: never let polkit ask for a password (scripts).
  var askPassword = true
  var command: Command
  /// `--for`, `--until`, `--confirm` and `--no-ask` of a write.
  var timing = Timing()
}

/// A write's time options (SEMANTICS.md rules 20–22), checked as far as the
/// command line can be: a span in seconds, a time in milliseconds.
struct Timing: Equatable {
  var forSeconds: Int64?
  var until: Int64?
  var confirmWithin: Int64?
  /// `--no-ask`: do not stay to ask; the change reverts at its deadline.
  var noAsk = false

  var isEmpty: Bool { self == Timing() }
}

/// One command with its arguments, checked as far as the command line can
/// be; keys are checked against the daemon.
enum Command: Equatable {
  case list(prefix: String?)
  case get(key: String)
  case isOn(key: String)
  /// `set`, `on` and `off`.
  case set(key: String, checked: Bool, ifRevision: Int64?)
  case toggle(key: String, ifRevision: Int64?)
  case reset(key: String)
  case watch(patterns: [String], since: Int64?)
  case history(key: String?, limit: Int64?, before: Int64?)
  case lock(key: String, reason: String?, checked: Bool?)
  case unlock(key: String)
  case disable(key: String, reason: String?)
  case enable(key: String)
  case apply(key: String)
  /// Keep or undo a tried change (rule 20).
  case confirm(key: String)
  case revert(key: String)
  case why(key: String)
  case status
  case reload
  /// `backup FILE`: FILE is created here, never by the daemon.
  case backup(path: String)
  /// `--help`, `help [COMMAND]`, `COMMAND --help`.
  case help(command: String?)
  case version

  /// Whether it is carried out by switchd (all but the help and the version).
  var talksToSwitchd: Bool {
    switch self {
    case .help, .version: false
    default: true
    }
  }

  /// Whether it asks switchd to change something.
  var writes: Bool {
    switch self {
    case .set, .toggle, .reset, .lock, .unlock, .disable, .enable, .apply, .confirm, .revert,
      .reload:
      true
    default: false
    }
  }
}

/// A command line switchctl cannot carry out (exit status 2).
struct UsageError: Error, Equatable {
  /// One sentence, without the `switchctl: ` prefix.
  var message: String
  /// The command it concerns, for the hint; nil for the overview.
  var command: String?
  /// `--json` was given before the error was found: the error object goes
  /// to stdout as well.
  var json = false

  /// `Try 'switchctl get --help'.`
  var hint: String {
    "Try 'switchctl " + (command.map { $0 + " " } ?? "") + "--help'."
  }
}

/// Turns arguments into an `Invocation`. Pure: no I/O, so every rule is tested
/// by table.
///
/// Global options (`--socket`, `--json`, `--help`, `--version`) may appear
/// anywhere, because scripts write `switchctl get wifi --json`. A command's
/// own options come after its name, as `--name VALUE` or `--name=VALUE`;
/// `--` ends the options.
enum ArgumentParser {
  static func parse(_ arguments: [String]) -> Result<Invocation, UsageError> {
    var json = false
    do throws(UsageError) {
      return .success(try parseThrowing(arguments, json: &json))
    } catch {
      var failure = error
      // `get wifi --bogus --json`: the error is found before `--json` is read.
      failure.json = json || asksForJSON(arguments)
      return .failure(failure)
    }
  }

  /// Whether `--json` is one of `arguments`' options: not a value of one
  /// (`--socket --json`), not after `--`. What a line that fails to parse
  /// asked for, wherever the failure stands.
  static func asksForJSON(_ arguments: [String]) -> Bool {
    var index = 0
    while index < arguments.count {
      let argument = arguments[index]
      index += 1
      if argument == "--" { return false }
      if argument == "--json" { return true }
      guard argument.hasPrefix("--"), !argument.contains("=") else { continue }
      let takesValue =
        argument == "--socket" || argument == "--user"
        || Commands.all.contains { $0.option(named: argument)?.valueName != nil }
      if takesValue { index += 1 }
    }
    return false
  }

  /// `json`: set when `--json` is read, also if a later argument fails.
  private static func parseThrowing(
    _ arguments: [String], json: inout Bool
  ) throws(UsageError) -> Invocation {
    var socket: String?
    var user: String?
    var askPassword = true
    var wantsHelp = false
    var wantsVersion = false
    var spec: CommandSpec?
    var parsed = ParsedArguments(command: "")
    var optionsEnded = false
    var index = 0
    /// A command's options given before the command (README: options go
    /// before or after it), checked against it once it is known.
    var early: [String] = []

    /// The value of an option: after `=`, or the next argument.
    func value(of name: String, inline: String?, valueName: String) throws(UsageError) -> String {
      if let inline { return inline }
      guard index < arguments.count else {
        throw UsageError(message: "\(name) needs a value: \(valueName).", command: spec?.name)
      }
      index += 1
      return arguments[index - 1]
    }

    while index < arguments.count {
      let argument = arguments[index]
      index += 1
      if !optionsEnded && argument == "--" {
        optionsEnded = true
        continue
      }
      if !optionsEnded && argument.hasPrefix("-") && argument != "-" {
        var name = argument
        var inline: String?
        if argument.hasPrefix("--"), let equals = argument.firstIndex(of: "=") {
          name = String(argument[..<equals])
          inline = String(argument[argument.index(after: equals)...])
        }
        switch name {
        case "--socket":
          if socket != nil {
            throw UsageError(message: "--socket is given twice.", command: spec?.name)
          }
          socket = try value(of: name, inline: inline, valueName: "PATH")
          // Empty is no path: it must not fall back to the default socket.
          if socket == "" {
            throw UsageError(
              message: "--socket needs a PATH, not an empty one.", command: spec?.name)
          }
        case "--user":
          if user != nil {
            throw UsageError(message: "--user is given twice.", command: spec?.name)
          }
          user = try value(of: name, inline: inline, valueName: "USER")
        case "--json", "--no-ask-password", "-h", "--help", "--version":
          if inline != nil {
            throw UsageError(message: "\(name) takes no value.", command: spec?.name)
          }
          if name == "--json" {
            json = true
          } else if name == "--no-ask-password" {
            askPassword = false
          } else if name == "--version" {
            wantsVersion = true
          } else {
            wantsHelp = true
          }
        default:
          // Before the command: any command's option, as that command takes it.
          let known =
            spec.map { $0.option(named: name) }
            ?? Commands.all.lazy.compactMap { $0.option(named: name) }.first
          guard let option = known else {
            let owner = spec.map { " for '\($0.name)'" } ?? ""
            throw UsageError(message: "unknown option '\(name)'\(owner).", command: spec?.name)
          }
          if spec == nil { early.append(name) }
          guard let valueName = option.valueName else {
            if inline != nil {
              throw UsageError(message: "\(name) takes no value.", command: spec?.name)
            }
            parsed.options[name] = ""
            continue
          }
          if parsed.options[name] != nil {
            throw UsageError(message: "\(name) is given twice.", command: spec?.name)
          }
          parsed.options[name] = try value(of: name, inline: inline, valueName: valueName)
        }
        continue
      }
      if spec == nil {
        guard let found = Commands.named(argument) else {
          let next = index < arguments.count ? arguments[index] : nil
          throw UsageError(
            message: Commands.unknown(argument, before: next), command: nil)
        }
        spec = found
        parsed.command = found.name
      } else {
        parsed.positionals.append(argument)
      }
    }

    var invocation = Invocation(socket: socket, json: json, user: user, command: .version)
    invocation.askPassword = askPassword
    if wantsVersion {
      return invocation
    }
    guard let spec else {
      if wantsHelp {
        invocation.command = .help(command: nil)
        return invocation
      }
      throw UsageError(message: "no command given.", command: nil)
    }
    if wantsHelp {
      invocation.command = .help(command: spec.name)
      return invocation
    }
    for name in early where spec.option(named: name) == nil {
      throw UsageError(message: "unknown option '\(name)' for '\(spec.name)'.", command: spec.name)
    }
    invocation.command = try build(spec.name, &parsed)
    invocation.timing = try timing(&parsed)
    try parsed.finish()
    if let user { try checkUser(user, for: spec) }
    return invocation
  }

  /// `--user` is for the commands that read or write one user's values, `*`
  /// (every user) only for those that can show every user's (the table's
  /// `user`).
  private static func checkUser(_ user: String, for spec: CommandSpec) throws(UsageError) {
    switch spec.user {
    case .oneOrEvery, .ignored:
      return
    case .one:
      guard user == WireField.everyUser else { return }
      let every = Commands.all.filter { $0.user == .oneOrEvery }.map(\.name)
      throw UsageError(
        message: "--user '*' (every user) is for \(every.joined(separator: " and ")) only.",
        command: spec.name)
    case .refused:
      throw UsageError(
        message: "'\(spec.name)' does not act as one user: --user does not apply.",
        command: spec.name)
    }
  }

  /// `--for SPAN`, `--until TIME`, `--confirm SPAN`, `--no-ask`, where the
  /// command's row takes them; the ranges are the protocol's.
  private static func timing(_ p: inout ParsedArguments) throws(UsageError) -> Timing {
    func fail(_ message: String) -> UsageError { UsageError(message: message, command: p.command) }
    func span(_ name: String, upTo most: Int64) throws(UsageError) -> Int64? {
      guard let text = p.options[name] else { return nil }
      switch TimeArgument.span(text) {
      case .failure(let problem): throw fail("\(name): \(problem.message).")
      case .success(let seconds):
        guard seconds <= most else { throw fail("\(name) is at most \(most) seconds.") }
        return seconds
      }
    }
    var timing = Timing()
    timing.forSeconds = try span("--for", upTo: 31_536_000)
    timing.confirmWithin = try span("--confirm", upTo: 3600)
    timing.noAsk = p.options["--no-ask"] != nil
    if let text = p.options["--until"] {
      switch TimeArgument.time(text, now: Int64(time(nil)) * 1000) {
      case .failure(let problem): throw fail("--until: \(problem.message).")
      case .success(let until): timing.until = until
      }
    }
    let given = [timing.forSeconds, timing.until, timing.confirmWithin].compactMap { $0 }.count
    if given > 1 { throw fail("--for, --until and --confirm exclude each other: give one.") }
    if timing.noAsk && timing.confirmWithin == nil { throw fail("--no-ask goes with --confirm.") }
    return timing
  }

  /// The command for a row of the table, from its arguments.
  private static func build(
    _ name: String, _ p: inout ParsedArguments
  ) throws(UsageError) -> Command {
    switch name {
    case "list":
      return .list(prefix: p.optionalPositional())
    case "get":
      return .get(key: try p.positional("KEY"))
    case "is-on":
      return .isOn(key: try p.positional("KEY"))
    case "set":
      let key = try p.positional("KEY")
      let word = try p.positional("on or off")
      return .set(
        key: key, checked: try p.bool(word), ifRevision: try p.revision("--if-revision"))
    case "on", "off":
      return .set(
        key: try p.positional("KEY"), checked: name == "on",
        ifRevision: try p.revision("--if-revision"))
    case "toggle":
      return .toggle(key: try p.positional("KEY"), ifRevision: try p.revision("--if-revision"))
    case "reset":
      return .reset(key: try p.positional("KEY"))
    case "watch":
      let patterns = p.remainingPositionals()
      for pattern in patterns {
        if case .failure = KeyPattern.parse(pattern) {
          throw UsageError(
            message: "'\(pattern)' is not a key pattern: give a key or a prefix ending in *.",
            command: name)
        }
      }
      return .watch(patterns: patterns, since: try p.revision("--since"))
    case "history":
      let key = p.optionalPositional()
      let limit = try p.number("--limit", minimum: 1)
      return .history(key: key, limit: limit, before: try p.revision("--before"))
    case "lock":
      let key = try p.positional("KEY")
      var checked: Bool?
      if let word = p.options["--checked"] { checked = try p.bool(word) }
      return .lock(key: key, reason: p.options["--reason"], checked: checked)
    case "unlock":
      return .unlock(key: try p.positional("KEY"))
    case "disable":
      return .disable(key: try p.positional("KEY"), reason: p.options["--reason"])
    case "enable":
      return .enable(key: try p.positional("KEY"))
    case "apply":
      return .apply(key: try p.positional("KEY"))
    case "confirm":
      return .confirm(key: try p.positional("KEY"))
    case "revert":
      return .revert(key: try p.positional("KEY"))
    case "why":
      return .why(key: try p.positional("KEY"))
    case "status":
      return .status
    case "reload":
      return .reload
    case "backup":
      return .backup(path: try p.positional("FILE"))
    case "help":
      guard let topic = p.optionalPositional() else { return .help(command: nil) }
      guard Commands.named(topic) != nil else {
        throw UsageError(message: Commands.unknown(topic, before: nil), command: nil)
      }
      return .help(command: topic)
    default:
      throw UsageError(message: "unknown command '\(name)'.", command: nil)
    }
  }

}

/// A command's arguments while they are being read; `finish` refuses any
/// left over.
private struct ParsedArguments {
  var command: String
  var positionals: [String] = []
  var options: [String: String] = [:]
  private var used = 0

  init(command: String) {
    self.command = command
  }

  mutating func positional(_ what: String) throws(UsageError) -> String {
    guard let next = optionalPositional() else {
      throw UsageError(message: "'\(command)' needs \(what).", command: command)
    }
    return next
  }

  mutating func optionalPositional() -> String? {
    guard used < positionals.count else { return nil }
    used += 1
    return positionals[used - 1]
  }

  mutating func remainingPositionals() -> [String] {
    defer { used = positionals.count }
    return Array(positionals[used...])
  }

  func finish() throws(UsageError) {
    guard used < positionals.count else { return }
    throw UsageError(
      message: "unexpected argument '\(positionals[used])' for '\(command)'.", command: command)
  }

  func bool(_ word: String) throws(UsageError) -> Bool {
    guard let value = BooleanWord.parse(word) else {
      throw UsageError(
        message: "'\(word)' is not on or off (use \(BooleanWord.choices)).",
        command: command)
    }
    return value
  }

  /// A whole number option, at least `minimum`; nil when absent.
  func number(_ name: String, minimum: Int64) throws(UsageError) -> Int64? {
    guard let text = options[name] else { return nil }
    guard let value = Int64(text), value >= minimum, text.first != "+" else {
      throw UsageError(
        message: "\(name) needs a whole number from \(minimum) up, not '\(text)'.",
        command: command)
    }
    return value
  }

  func revision(_ name: String) throws(UsageError) -> Int64? {
    try number(name, minimum: 0)
  }
}
