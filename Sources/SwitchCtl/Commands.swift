import SwitchCore

/// An option a command accepts.
struct OptionSpec: Sendable {
  /// `--reason`.
  var name: String
  /// `TEXT` for an option that takes a value; nil for a flag.
  var valueName: String?
  /// One line for `--help`.
  var help: String
}

/// Whose values a command reads or writes, which decides what `--user` does.
enum UserOption: Sendable, Equatable {
  /// One user's values: `--user` names that user (a name or a uid).
  case one
  /// One user's, or every user's with `--user '*'` (`watch`, `history`).
  case oneOrEvery
  /// The switch for every user, or the daemon itself: `--user` is refused.
  case refused
  /// Talks to no daemon (`help`): `--user` changes nothing, as with `--help`.
  case ignored
}

/// One row of the command table: what the parser accepts and what `--help`
/// says. The parser reads options and `--user` from here, so help and
/// behaviour cannot drift apart.
struct CommandSpec: Sendable {
  var name: String
  /// Arguments after the name, as the usage line shows them.
  var arguments: String
  /// One line for the list in `switchctl --help`.
  var summary: String
  /// One paragraph for `switchctl COMMAND --help`.
  var description: String
  var options: [OptionSpec] = []
  /// What `--user` does for this command.
  var user = UserOption.one

  /// `set KEY on|off`.
  var synopsis: String { arguments.isEmpty ? name : name + " " + arguments }

  func option(named name: String) -> OptionSpec? {
    options.first { $0.name == name }
  }
}

/// The command table and the help texts built from it.
enum Commands {
  private static let ifRevision = OptionSpec(
    name: "--if-revision", valueName: "N",
    help: "change it only if its revision is still N (else exit 8, Conflict)")
  private static let reason = OptionSpec(
    name: "--reason", valueName: "TEXT", help: "the reason users are shown")
  private static let forSpan = OptionSpec(
    name: "--for", valueName: "SPAN",
    help: "only for SPAN (90s, 15m, 1h 30m, 1.5h, 2d; M a month), then it ends by itself")
  private static let untilTime = OptionSpec(
    name: "--until", valueName: "TIME",
    help: "only until TIME (HH:MM, a local 2026-12-02 16:00, or a timestamp with its zone)")
  private static let confirm = OptionSpec(
    name: "--confirm", valueName: "SPAN",
    help: "try it: it reverts after SPAN unless confirmed (asks on a terminal)")
  private static let noAsk = OptionSpec(
    name: "--no-ask", valueName: nil,
    help: "with --confirm: do not ask; print when it reverts and exit")
  /// What set, on, off and toggle take.
  private static let valueOptions = [ifRevision, forSpan, untilTime, confirm, noAsk]

  static let all: [CommandSpec] = [
    CommandSpec(
      name: "list", arguments: "[PREFIX]",
      summary: "list switches: key, on/off, label, and why one is held",
      description: """
        Prints one line per switch, sorted by key: the key, on or off, the label, and a \
        note in parentheses for a switch that is disabled or read-only, with who holds \
        it and the reason. With PREFIX, only keys that start with it ("notifications." \
        or "notifications.*"). Prints "no switches" (or "no switch key starts with \
        PREFIX") when none is listed; --json prints the result as it came.
        """),
    CommandSpec(
      name: "get", arguments: "KEY",
      summary: "print on or off",
      description: """
        Prints "on" or "off". When the switch is disabled or read-only, a note in \
        parentheses follows with who holds it and the reason. A disabled switch keeps \
        its value but does not apply.
        """),
    CommandSpec(
      name: "is-on", arguments: "KEY",
      summary: "exit 0 when on and in effect, 1 otherwise",
      description: """
        Prints nothing. Exits 0 when the switch is on and in effect (not disabled), \
        1 when it is off or disabled, 5 when no switch has that key and 7 when switchd \
        cannot be reached. Meant for scripts: `if switchctl is-on wifi; then ...`. \
        With --json, prints {"key", "on", "checked", "disabled"}, "on" being what the \
        exit status says.
        """),
    CommandSpec(
      name: "set", arguments: "KEY on|off",
      summary: "turn a switch on or off",
      description: """
        Sets the switch to on or off (true/false, yes/no and 1/0 are accepted too) and \
        prints its new value. "(unchanged)" follows when it already had that value; \
        nothing changed then and no event was sent. With --for or --until the value \
        lasts that long and the one from before comes back; with --confirm the \
        change is tried: on a terminal switchctl asks "Keep this change? [y/N]" with \
        the time left, and anything but yes (^C too, or losing the session) puts it back.
        """,
      options: valueOptions),
    CommandSpec(
      name: "on", arguments: "KEY",
      summary: "turn a switch on",
      description: "The same as `set KEY on`: turns the switch on and prints its new value.",
      options: valueOptions),
    CommandSpec(
      name: "off", arguments: "KEY",
      summary: "turn a switch off",
      description: "The same as `set KEY off`: turns the switch off and prints its new value.",
      options: valueOptions),
    CommandSpec(
      name: "toggle", arguments: "KEY",
      summary: "flip a switch",
      description: """
        Flips the switch inside switchd, atomically (many concurrent toggles lose \
        none), and prints its new value. --for, --until and --confirm as for set.
        """,
      options: valueOptions),
    CommandSpec(
      name: "reset", arguments: "KEY",
      summary: "return a switch to its default",
      description: """
        Sets the switch back to its default value and prints its new value, with \
        "(unchanged)" when it already was at its default.
        """),
    CommandSpec(
      name: "watch", arguments: "[PATTERN...]",
      summary: "print one line per change until interrupted",
      description: """
        Prints one line per change as it happens: revision, key, value, what made the \
        change and who, and a note when the switch is held. A PATTERN is a key or a \
        prefix ending in * ("notifications.*"); none watches every switch. With \
        --since, changes after that revision are printed first. If switchd restarts, \
        watch reconnects by itself and resumes after the last revision it printed, so \
        no change is missed or printed twice; it says so on stderr. With --user, the \
        changes that user sees ('*': every user's, each user's value as KEY[uid N]); \
        a change made by another user shows "by another user" unless you administer. \
        With --json, each line is the event's params object.
        """,
      options: [
        OptionSpec(
          name: "--since", valueName: "REV",
          help: "first print the retained changes after revision REV")
      ],
      user: .oneOrEvery),
    CommandSpec(
      name: "history", arguments: "[KEY]",
      summary: "show past changes, newest first",
      description: """
        Prints past changes, newest first, one a line: revision, time, key, what made \
        the change, the fields it changed (before→after) and who made it (uid and pid, \
        "policy", or "another user" when you may not see who). With KEY, only \
        that switch's changes; with --user, the changes that user sees ('*': every \
        user's). Prints "no changes" when there are none; --json prints the result \
        as it came.
        """,
      options: [
        OptionSpec(name: "--limit", valueName: "N", help: "at most N changes (default 100)"),
        OptionSpec(
          name: "--before", valueName: "REV", help: "only changes before revision REV"),
      ],
      user: .oneOrEvery),
    CommandSpec(
      name: "lock", arguments: "KEY",
      summary: "make a switch read-only (administrator)",
      description: """
        Makes the switch read-only: users can still see and watch it but not change \
        it. With --checked, also sets its value, in the same change. Only an \
        administrator may lock, and not a switch a policy file holds.
        """,
      options: [
        reason,
        OptionSpec(name: "--checked", valueName: "on|off", help: "also set the value"),
        forSpan, untilTime,
      ],
      user: .refused),
    CommandSpec(
      name: "unlock", arguments: "KEY",
      summary: "lift an administrator's lock (administrator)",
      description: """
        Lifts an administrator's read-only hold on the switch. What a policy file \
        holds is lifted only by changing the file and reloading.
        """,
      user: .refused),
    CommandSpec(
      name: "disable", arguments: "KEY",
      summary: "make a switch not apply (administrator)",
      description: """
        Disables the switch: it keeps its value but does not apply, and nobody can \
        change it until it is enabled again. Only an administrator may disable, and \
        not a switch a policy file disables.
        """,
      options: [reason, forSpan, untilTime], user: .refused),
    CommandSpec(
      name: "enable", arguments: "KEY",
      summary: "make a disabled switch apply again (administrator)",
      description: """
        Enables a switch an administrator disabled. What a policy file disables is \
        enabled only by changing the file and reloading.
        """,
      user: .refused),
    CommandSpec(
      name: "apply", arguments: "KEY",
      summary: "run the switch's apply command again",
      description: """
        Runs the switch's apply command (ExecApply=) again with its effective value \
        (on when it is on and not disabled), for a switch marked invalid because \
        the system did not take its value. Changes no value; success clears \
        invalid. Exit status 1 with the command's reason when it fails.
        """,
      user: .refused),
    CommandSpec(
      name: "confirm", arguments: "KEY",
      summary: "keep a tried change",
      description: """
        Keeps the change made to KEY with --confirm, before it reverts by itself. \
        Only the user who made it, or an administrator, may; --user names whose \
        value of a user-scope switch. "(unchanged)" when nothing was being tried.
        """),
    CommandSpec(
      name: "revert", arguments: "KEY",
      summary: "undo a tried change now",
      description: """
        Puts back the value from before a change made to KEY with --confirm, now. \
        Only the user who made it, or an administrator, may; --user names whose \
        value of a user-scope switch.
        """),
    CommandSpec(
      name: "why", arguments: "KEY",
      summary: "explain a switch: value, holds, reasons, last change",
      description: """
        Explains the switch: its value and default, who holds it read-only or \
        disables it and since when (the policy file and line, or the administrator's \
        uid and the time), the reason, and its last change. With --json, prints \
        {"switch", "lastChange", "heldSince", "disabledSince"} with history entries \
        or null.
        """),
    CommandSpec(
      name: "status", arguments: "",
      summary: "show the daemon's version, revision and counts",
      description: """
        Prints the daemon's status, one "name: value" a line: version, current \
        revision, switches, policies, connections, watches, uptime, database, socket, \
        configuration directory, the time and result of the last reload (with each \
        problem of a refused one), and who you are to switchd (uid, gid, whether you \
        administer and whether you may change switches).
        """,
      user: .refused),
    CommandSpec(
      name: "reload", arguments: "",
      summary: "re-read the configuration (administrator)",
      description: """
        Makes switchd re-read switchd.conf, its schema and its policy files as one \
        step. An invalid configuration is refused with every problem's file and line, \
        and the running one stays. Prints the number of switches and policies now in \
        effect, and the settings (Socket=, VarlinkSocket=, SocketMode=, Database=) \
        that changed but take effect only when switchd restarts.
        """,
      user: .refused),
    CommandSpec(
      name: "backup", arguments: "FILE",
      summary: "save a consistent copy of the database (administrator)",
      description: """
        Writes a copy of switchd's database to FILE, consistent as of one revision while \
        writes go on, and prints that revision. FILE must not exist: it is created with \
        mode 0600 by switchctl itself, with your own rights (switchd passes the copy over \
        the socket and never opens FILE), and removed again if the backup fails. A \
        stopped switchd starts from such a copy: see "Backup and restore" in \
        docs/configuration.md. Only an administrator may back up. Waits up to 10 \
        minutes for the copy.
        """,
      user: .refused),
    CommandSpec(
      name: "help", arguments: "[COMMAND]",
      summary: "show help for switchctl or one command",
      description: "Shows the list of commands, or the usage and description of COMMAND.",
      user: .ignored),
  ]

  /// The row for `name`, or nil.
  static func named(_ name: String) -> CommandSpec? {
    all.first { $0.name == name }
  }

  /// What to say of a command switchctl does not have, followed by `next`:
  /// the command a typo was likely meant as (`gte` → `get`), or `set` for
  /// a switch named first (`switchctl wifi on`).
  static func unknown(_ name: String, before next: String?) -> String {
    let sentence = "unknown command '\(name)'"
    if let next, BooleanWord.parse(next) != nil {
      return sentence + "; to change a switch: switchctl set \(name) \(next)."
    }
    // One edit for a short name, two for a longer one; only a single nearest.
    let distances = all.map { (command: $0.name, distance: editDistance($0.name, name)) }
    let nearest = distances.map(\.distance).min() ?? .max
    let candidates = distances.filter { $0.distance == nearest }
    guard nearest <= (name.count <= 4 ? 1 : 2), candidates.count == 1 else {
      return sentence + "."
    }
    return sentence + "; did you mean '\(candidates[0].command)'?"
  }

  /// Levenshtein distance, an adjacent swap (`gte`, `get`) counting as one edit.
  static func editDistance(_ a: String, _ b: String) -> Int {
    let a = Array(a.utf8)
    let b = Array(b.utf8)
    if a.isEmpty || b.isEmpty { return max(a.count, b.count) }
    var twoBack = [Int](repeating: 0, count: b.count + 1)
    var previous = Array(0...b.count)
    var current = previous
    for i in 1...a.count {
      current[0] = i
      for j in 1...b.count {
        let replace = previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)
        var best = min(previous[j] + 1, current[j - 1] + 1, replace)
        if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] {
          best = min(best, twoBack[j - 2] + 1)
        }
        current[j] = best
      }
      (twoBack, previous, current) = (previous, current, twoBack)
    }
    return previous[b.count]
  }

  /// `switchctl --help`.
  static func overview() -> [String] {
    var lines = [
      "Usage: switchctl [OPTIONS] COMMAND [ARGS]",
      "",
      "Reads and changes the switches (boolean settings) that switchd keeps.",
      "",
      "Commands:",
    ]
    let width = all.map { $0.synopsis.count }.max() ?? 0
    for spec in all {
      lines.append("  " + pad(spec.synopsis, width) + "  " + spec.summary)
    }
    lines += [
      "",
      "Options, before or after the command:",
      "  --socket PATH  the daemon's socket (default: $SWITCHD_SOCKET, else your own",
      "                 switchd's socket if it exists, else /run/switchd/switchd.sock)",
      "  --user USER    act as that user (a name or uid; '*' for every user on watch",
      "                 and history): administrators only, except yourself",
      "  --json         print the daemon's result as one line of JSON (on failure,",
      "                 the error object, on stdout too)",
      "  --no-ask-password",
      "                 never let polkit ask for a password (on a terminal switchctl",
      "                 lets it ask, through pkttyagent, under Authorization=polkit)",
      "  -h, --help     show help; 'switchctl help COMMAND' for one command",
      "  --version      print switchctl's version",
      "",
      "Exit status: 0 done, 1 failed (or is-on: off or disabled; or a change tried",
      "with --confirm on a terminal not kept), 2 usage error, 3 read-only, 4 disabled,",
      "5 unknown switch, 6 permission denied, 7 switchd not reachable, 8 conflict (the",
      "switch changed since --if-revision N, or a tried change of it waits for confirm",
      "or revert).",
    ]
    return lines
  }

  /// `switchctl COMMAND --help`.
  static func help(for spec: CommandSpec) -> [String] {
    // The usage line wraps at 80 columns, under the synopsis.
    var lines = ["Usage: switchctl " + spec.synopsis]
    let indent = String(repeating: " ", count: "Usage: switchctl ".count + spec.name.count + 1)
    for option in spec.options {
      let part = " [" + option.name + (option.valueName.map { " " + $0 } ?? "") + "]"
      if lines[lines.count - 1].count + part.count > 80 {
        lines.append(indent + String(part.dropFirst()))
      } else {
        lines[lines.count - 1] += part
      }
    }
    lines.append("")
    lines += wrap(spec.description, width: 78)
    var options = spec.options.map { ($0.name + ($0.valueName.map { " " + $0 } ?? ""), $0.help) }
    if let user = userHelp(spec.user) { options.append(("--user USER", user)) }
    options.append(("--socket PATH", "the daemon's socket"))
    options.append(("--json", "print the result, or the error object, as one line of JSON"))
    let width = options.map { $0.0.count }.max() ?? 0
    lines += ["", "Options:"]
    for (name, help) in options {
      let text = wrap(help, width: 78 - 4 - width)
      lines.append("  " + pad(name, width) + "  " + (text.first ?? ""))
      lines += text.dropFirst().map { String(repeating: " ", count: 4 + width) + $0 }
    }
    return lines
  }

  /// What `--user` does for a command, for its help; nil where it is refused.
  static func userHelp(_ user: UserOption) -> String? {
    switch user {
    case .one:
      return "act as that user (a name or uid) on user-scope switches: administrators only, "
        + "except for yourself"
    case .oneOrEvery:
      return "only the changes that user (a name or uid) sees, or '*' for every user's: "
        + "administrators only, except for yourself"
    case .refused, .ignored:
      return nil
    }
  }

  /// Breaks a paragraph into lines of at most `width` characters, at spaces.
  static func wrap(_ text: String, width: Int) -> [String] {
    var lines: [String] = []
    var line = ""
    for word in text.split(separator: " ") {
      if !line.isEmpty && line.count + 1 + word.count > width {
        lines.append(line)
        line = ""
      }
      line += line.isEmpty ? String(word) : " " + word
    }
    if !line.isEmpty { lines.append(line) }
    return lines
  }
}
