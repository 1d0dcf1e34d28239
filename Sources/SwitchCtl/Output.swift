import Glibc
import SwitchCore
import SwitchProtocol
import SwitchSystem

/// Text for people, from the results and events the daemon sends, decoded
/// (SwitchProtocol's `Results.swift` and `WireObjects.swift`). Pure
/// functions of those values, so golden tests need no daemon.
enum Output {
  // MARK: Values

  static func onOff(_ on: Bool) -> String { on ? "on" : "off" }

  /// "1 second", "30 seconds".
  static func count(_ number: Int, _ noun: String) -> String {
    number == 1 ? "1 \(noun)" : "\(number) \(noun)s"
  }

  static func yesNo(_ flag: Bool) -> String { flag ? "yes" : "no" }

  /// The notes for a Switch or a State that is disabled, read-only or
  /// invalid, in the order a person must read them: disabled wins
  /// (docs/semantics.md rule 5), so it comes first. E.g. `disabled by admin: Gone.`.
  /// `invalid` says the system did not take the value: `invalid: rfkill: no device`.
  /// `now` nil: the deadlines as times, for a change printed after the fact
  /// (`watch`, a `since` replay: "40 s" said nothing true of a change
  /// replayed a minute later).
  static func notes(_ state: StateObject, now: Int64? = wallClockMilliseconds()) -> [String] {
    var notes: [String] = []
    if state.disabled {
      notes.append(hold("disabled", by: state.disabledBy, reason: state.disabledReason))
    }
    if state.readOnly {
      notes.append(hold("read-only", by: state.heldBy, reason: state.readOnlyReason))
    }
    if state.invalid { notes.append(hold("invalid", by: nil, reason: state.invalidReason)) }
    return notes + timeNotes(state, now: now)
  }

  /// The deadlines in words (rules 20–22): "reverts in 40 s unless
  /// confirmed", "off for 52 more minutes", "read-only until 16:00"; with
  /// `now` nil, "reverts at 16:00:40 unless confirmed", "off until 16:52".
  /// A value's timer under a hold or a disable does not claim the value
  /// shown, which may be the one a hold fixes (a user's own timed value
  /// beneath it), and which the hold may keep at the end (an audit).
  static func timeNotes(_ state: StateObject, now: Int64?) -> [String] {
    var notes: [String] = []
    if let at = state.pendingUntil {
      if let now, at <= now {
        // Its revert is due and not yet stored (a full disk: an audit saw
        // "reverts in 0 s" for as long as the disk stayed full).
        notes.append("its revert is due since \(endClock(at))")
      } else {
        notes.append(
          now.map { "reverts in \(span(at - $0)) unless confirmed" }
            ?? "reverts at \(endClock(at)) unless confirmed")
      }
    }
    if let at = state.expiresAt {
      if state.readOnly || state.disabled {
        notes.append(
          "a timed value ends at \(endClock(at)), "
            + (state.disabled ? "while disabled" : "under the hold"))
      } else {
        notes.append(
          onOff(state.checked)
            + (now.map { " for \(span(at - $0, more: true))" } ?? " until \(endClock(at))"))
      }
    }
    // A policy's hold has an end only by its schedule.
    if let at = state.readOnlyUntil {
      notes.append(
        state.heldBy == Holder.policy.wireName
          ? "held until \(endClock(at)) (schedule)" : "read-only until " + endClock(at))
    }
    if let at = state.disabledUntil {
      notes.append(
        "disabled until " + endClock(at)
          + (state.disabledBy == Holder.policy.wireName ? " (schedule)" : ""))
    }
    return notes
  }

  /// A hold's end: `12:00`, or `10:26:48` when it is not on a whole minute
  /// (a hold of 5 s said "until 10:26" for the minute it ended in).
  static func endClock(_ milliseconds: Int64) -> String {
    localClock(milliseconds, seconds: milliseconds / 1000 % 60 != 0)
  }

  /// `40 s` (`40 more seconds`), `52 minutes` (`52 more minutes`),
  /// `3 hours`, `2 days`: rounded up.
  static func span(_ milliseconds: Int64, more: Bool = false) -> String {
    let seconds = max(0, (milliseconds + 999) / 1000)
    let extra = more ? "more " : ""
    if seconds < 120 { return more ? count(Int(seconds), "more second") : "\(seconds) s" }
    let minutes = (seconds + 59) / 60
    if minutes < 120 { return "\(minutes) \(extra)minutes" }
    let hours = (minutes + 59) / 60
    if hours < 48 { return "\(hours) \(extra)hours" }
    return "\((hours + 23) / 24) \(extra)days"
  }

  /// A time in the local time zone: `16:00` today, else `2026-12-03 16:00`;
  /// `16:00:05` with `seconds`.
  static func localClock(_ milliseconds: Int64, seconds: Bool = false) -> String {
    var when = time_t(milliseconds / 1000)
    var now = Glibc.time(nil)
    var at = tm()
    var today = tm()
    localtime_r(&when, &at)
    localtime_r(&now, &today)
    func two(_ n: Int32) -> String { n < 10 ? "0\(n)" : "\(n)" }
    let clock = two(at.tm_hour) + ":" + two(at.tm_min) + (seconds ? ":" + two(at.tm_sec) : "")
    if at.tm_year == today.tm_year && at.tm_yday == today.tm_yday { return clock }
    return "\(at.tm_year + 1900)-\(two(at.tm_mon + 1))-\(two(at.tm_mday)) " + clock
  }

  private static func hold(_ what: String, by holder: String?, reason: String?) -> String {
    var text = what
    if let holder { text += " by " + holder }
    if let reason, !reason.isEmpty { text += ": " + printable(reason) }
    return text
  }

  /// A key from the command line far past a key's length (twice
  /// `SwitchKey.maxBytes`), cut to its first 64 characters and its length:
  /// a refusal of a 100,000-byte key is one line, not the key repeated
  /// whole (an audit). A shorter one is shown whole, where what is wrong
  /// with it may be its last byte. `--json` keeps it whole in `data`.
  static func shortened(_ key: String) -> String {
    let bytes = key.utf8.count
    guard bytes > 2 * SwitchKey.maxBytes else { return key }
    return excerpt(key, limit: 64) + " (\(bytes) bytes)"
  }

  /// Free text from the daemon (labels, reasons, messages) with control
  /// characters escaped: a reason holding a newline or a terminal escape
  /// must not break "one line per switch" or play tricks on a terminal,
  /// nor may a bidirectional override (U+202E) turn the rest of the line
  /// around (the Trojan Source trick, CVE-2021-42574).
  static func printable(_ text: String) -> String {
    func isControl(_ scalar: Unicode.Scalar) -> Bool {
      scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value)
        || (0x202A...0x202E).contains(scalar.value) || (0x2066...0x2069).contains(scalar.value)
    }
    guard text.unicodeScalars.contains(where: isControl) else { return text }
    var result = ""
    for scalar in text.unicodeScalars {
      switch scalar {
      case "\n": result += "\\n"
      case "\t": result += "\\t"
      case _ where isControl(scalar):
        let hex = String(scalar.value, radix: 16, uppercase: true)
        result += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
      default: result.unicodeScalars.append(scalar)
      }
    }
    return result
  }

  /// `text` followed by each note in parentheses.
  static func withNotes(_ text: String, _ state: StateObject) -> String {
    notes(state).reduce(text) { $0 + " (" + $1 + ")" }
  }

  /// Who made a change: `uid 1000 (pid 4321)`, `policy`, or `another user`
  /// when the daemon hides who (null ids: another user's change, shown to
  /// someone who does not administer).
  static func actor(_ actor: ActorObject, withPID: Bool) -> String {
    if let source = actor.source { return source }
    guard let uid = actor.uid else { return "another user" }
    if withPID, let pid = actor.pid { return "uid \(uid) (pid \(pid))" }
    return "uid \(uid)"
  }

  /// A time as the daemon wrote it: `2026-11-30T03:41:07.002Z`.
  static func time(_ milliseconds: Int64) -> String {
    Timestamp.iso8601(milliseconds: milliseconds)
  }

  /// Compact JSON text, as `JSONWriter` writes it: what `--json` prints.
  static func json(_ value: JSONValue) -> String {
    value.jsonText
  }

  // MARK: Commands

  /// `get`: `off (read-only by policy: Bluetooth is turned off by your organisation.)`.
  static func get(_ switchObject: SwitchObject) -> String {
    withNotes(onOff(switchObject.state.checked), switchObject.state)
  }

  /// `list`: key, on/off, label and notes, in aligned columns; a line
  /// that says none matched when none did (`prefix`: the one asked for),
  /// so that a person sees the command worked and a typo is noticed.
  static func list(_ result: ListResult, prefix: String? = nil) -> [String] {
    if result.switches.isEmpty {
      let stem = prefix.map { $0.hasSuffix("*") ? String($0.dropLast()) : $0 } ?? ""
      return [stem.isEmpty ? "no switches" : "no switch key starts with " + printable(stem)]
    }
    let rows = result.switches.map { item -> [String] in
      var row = [item.key, onOff(item.state.checked), printable(item.label)]
      let notes = notes(item.state)
      if !notes.isEmpty { row.append(notes.map { "(" + $0 + ")" }.joined(separator: " ")) }
      return row
    }
    return table(rows)
  }

  /// A write (`set`, `lock`, …): `wifi: on`, `wifi: on (unchanged)`, with notes.
  /// `wifi: off`, `wifi: off (unchanged)`, or with `note` in its place.
  static func write(_ result: WriteResult, note: String? = nil) -> String {
    let switchObject = result.switchObject
    var text = switchObject.key + ": " + onOff(switchObject.state.checked)
    if let note = note ?? (result.changed ? nil : "unchanged") { text += " (" + note + ")" }
    return withNotes(text, switchObject.state)
  }

  /// What became of a tried change after its question: `keep` the answer,
  /// `tried` the change's answer, `settled` the `confirm`'s or `revert`'s.
  /// The one reading of the two answers, for the line and the exit status.
  enum TriedOutcome: Equatable {
    /// The value the try set stays: confirmed (here or elsewhere).
    case kept
    /// Undone by the revert asked for.
    case reverted
    /// Found undone already: at its deadline (a "no" after it, a "yes"
    /// after switchd restarted and the deadline passed), or by an administrator.
    case revertedAlready
    /// Not confirmed, but the value stays: a hold that came since keeps it
    /// (rule 20, judged as a write of its maker's; `changed`: the try ended
    /// now), or the try had ended so already.
    case heldByAHold(changed: Bool)

    init(keep: Bool, tried: WriteResult, settled: WriteResult) {
      let stays = settled.switchObject.state.checked == tried.switchObject.state.checked
      switch (stays, keep) {
      case (false, _): self = settled.changed ? .reverted : .revertedAlready
      case (true, true): self = .kept
      case (true, false): self = .heldByAHold(changed: settled.changed)
      }
    }

    /// Whether the value the try set stays: exit status 0, else 1.
    var stays: Bool {
      switch self {
      case .kept, .heldByAHold: return true
      case .reverted, .revertedAlready: return false
      }
    }
  }

  /// The line after a tried change's question (`TriedOutcome`): "kept:",
  /// "reverted:" with the value, and what made it so when it was not the answer.
  static func settled(_ outcome: TriedOutcome, _ settled: WriteResult) -> String {
    switch outcome {
    case .kept: return "kept: " + write(settled, note: settled.changed ? nil : "confirmed already")
    case .reverted: return "reverted: " + write(settled)
    case .revertedAlready:
      return "reverted: "
        + write(settled, note: "reverted already, at its deadline or by an administrator")
    case .heldByAHold(let changed):
      return "not reverted: "
        + write(settled, note: changed ? "a hold keeps the value" : "unchanged")
    }
  }

  /// `history`: `43  2026-11-30T03:41:07.002Z  wifi  toggle  checked: on→off  by uid 1000 (pid 4321)`,
  /// or `no changes` for an empty page, so that a person sees the command worked.
  static func history(_ result: HistoryResult) -> [String] {
    result.entries.isEmpty ? ["no changes"] : table(result.entries.map(historyRow))
  }

  private static func historyRow(_ entry: EntryObject) -> [String] {
    [
      String(entry.revision), time(entry.time), keyAndUser(entry), entry.cause,
      // Changes vary too much in width to align; the actor follows them.
      changes(entry) + "  by " + actor(entry.actor, withPID: true),
    ]
  }

  /// The fields a change altered: `checked: on→off, heldBy: none→admin`; a
  /// field this build does not know is `?`.
  static func changes(_ entry: EntryObject) -> String {
    entry.fields.map { name in
      guard let field = StateField(wireName: name) else { return printable(name) + ": ?→?" }
      return name + ": " + value(field, of: entry.previous) + "→" + value(field, of: entry.state)
    }.joined(separator: ", ")
  }

  /// One State field's value: on/off for `checked`, yes/no for flags,
  /// reasons quoted (free text), `none` for null.
  private static func value(_ field: StateField, of state: StateObject) -> String {
    func quoted(_ reason: String?) -> String {
      reason.map { JSONValue.string($0).jsonText } ?? "none"
    }
    switch field {
    case .checked: return onOff(state.checked)
    case .readOnly: return yesNo(state.readOnly)
    case .readOnlyReason: return quoted(state.readOnlyReason)
    case .heldBy: return state.heldBy ?? "none"
    case .disabled: return yesNo(state.disabled)
    case .disabledReason: return quoted(state.disabledReason)
    case .disabledBy: return state.disabledBy ?? "none"
    case .invalid: return yesNo(state.invalid)
    case .invalidReason: return quoted(state.invalidReason)
    case .pendingUntil: return time(state.pendingUntil)
    case .expiresAt: return time(state.expiresAt)
    case .readOnlyUntil: return time(state.readOnlyUntil)
    case .disabledUntil: return time(state.disabledUntil)
    }
  }

  /// A deadline as the wire writes times, `none` for null.
  private static func time(_ ms: Int64?) -> String {
    guard let ms else { return "none" }
    var bytes: [UInt8] = []
    Timestamp.append(milliseconds: ms, to: &bytes)
    return String(decoding: bytes, as: UTF8.self)
  }

  /// `watch`: `42 wifi off (toggle by uid 1000)`, then the notes of the new state.
  static func event(_ change: EntryObject) -> String {
    let who = actor(change.actor, withPID: false)
    // A policy change is made by the policy: "(policy by policy)" says nothing twice.
    let origin = who == change.cause ? who : change.cause + " by " + who
    let head = "\(change.revision) " + keyAndUser(change) + " " + onOff(change.state.checked)
    return notes(change.state, now: nil).reduce(head + " (" + origin + ")") {
      $0 + " (" + $1 + ")"
    }
  }

  /// The key of an event or entry, with whose value changed when it is one
  /// user's: `email.marketing[uid 1000]`.
  private static func keyAndUser(_ change: EntryObject) -> String {
    guard let user = change.user else { return change.key }
    return change.key + "[uid \(user)]"
  }

  private static func scalar(_ value: JSONValue) -> String {
    switch value {
    case .string(let text): return printable(text)
    case .null: return "none"
    case .number(let number): return number.text
    case .bool(let flag): return yesNo(flag)
    case let other: return other.jsonText
    }
  }

  /// `status`: one `name: value` line per member, in the order `sent` has
  /// them (members a newer daemon adds print too); the last reload and the
  /// caller in words, from `report`, each problem of a refused reload on its
  /// own line.
  static func status(_ report: StatusReport, sent: JSONValue) -> [String] {
    var lines: [String] = []
    for member in sent.objectMembers ?? [] {
      switch member.name {
      case WireField.lastReload:
        guard let reload = report.lastReload else {
          lines.append(member.name + ": none since switchd started")
          continue
        }
        // Only an administrator is shown the errors; anyone their count.
        var text = time(reload.time) + " " + reload.result.wireName
        let count = reload.errorCount
        if count > 0 { text += " (\(Output.count(count, "error")))" }
        lines.append(member.name + ": " + text)
        lines += reload.errors.map { "  " + printable($0) }
      case WireField.readBack:
        let reapplied = report.readBack.reduce(0) { $0 + $1.reapplied }
        let down = report.readBack.filter { $0.watchProblem != nil }.map(\.key)
        lines.append(
          member.name + ": "
            + (report.readBack.count == 1 ? "1 switch" : "\(report.readBack.count) switches")
            + ", re-applied \(reapplied == 1 ? "once" : "\(reapplied) times")"
            + (down.isEmpty ? "" : ", watch not running: " + down.joined(separator: ", ")))
      case WireField.caller:
        let c = report.caller
        lines.append(
          member.name + ": uid \(c.uid), gid \(c.gid), administrator: " + yesNo(c.administrator)
            + ", writes system switches: " + yesNo(c.writesSystemSwitches))
      default:
        lines.append(printable(member.name) + ": " + scalar(member.value))
      }
    }
    return lines
  }

  /// `reload`: the counts, and the settings that wait for a restart.
  static func reload(_ summary: ReloadSummary) -> [String] {
    var lines = [
      WireField.switches + ": \(summary.switches)", WireField.policies + ": \(summary.policies)",
    ]
    if !summary.restartRequired.isEmpty {
      lines.append(
        "restart required: " + summary.restartRequired.map(printable).joined(separator: ", ")
          + " changed; that takes effect only when switchd restarts")
    }
    return lines
  }

  /// `is-on --json`: `{"key","on","checked","disabled"}`, `on` being
  /// checked and in effect (what the exit status says).
  static func isOn(key: String, _ state: SwitchState) -> JSONValue {
    .object([
      JSONMember(WireField.key, .string(key)),
      JSONMember(WireField.on, .bool(state.isOnAndInEffect)),
      JSONMember(WireField.checked, .bool(state.checked)),
      JSONMember(WireField.disabled, .bool(state.disabled)),
    ])
  }

  /// The stderr lines for an error the daemon answered with: its sentence;
  /// for a hold by a policy file, which file and line to edit; for a
  /// refused configuration, every problem on its own line.
  static func refusal(_ error: RemoteError) -> [String] {
    if error.code == .invalidConfig,
      let errors = error.data[WireField.errors]?.arrayValue?.compactMap(\.stringValue),
      !errors.isEmpty
    {
      let count = Output.count(errors.count, "error")
      return ["switchctl: the configuration was refused (\(count)); the running one stays:"]
        + errors.map { "  " + printable($0) }
    }
    var sentence = "switchctl: " + printable(error.message)
    let policy = JSONValue.string(Holder.policy.wireName)
    if let source = error.data[WireField.policySource]?.stringValue {
      if error.code == .disabled && error.data[WireField.disabledBy] == policy {
        sentence += " (disabled by policy " + printable(source) + "; edit it and reload)"
      } else if error.code == .readOnly && error.data[WireField.heldBy] == policy {
        sentence += " (held by policy " + printable(source) + "; edit it and reload)"
      }
    }
    if error.code == .permissionDenied,
      error.data[WireField.authenticationRequired]?.boolValue == true
    {
      return [
        sentence,
        "switchctl: authentication is required: run switchctl on a terminal without"
          + " --no-ask-password to be asked for a password, or ask an administrator for a"
          + " polkit rule that grants it",
      ]
    }
    return [sentence]
  }

  /// `why`: several lines explaining the switch.
  static func why(_ explanation: Explanation) -> [String] {
    let s = explanation.switchObject.value
    let key = s.key
    let label = printable(s.label)
    var lines = [
      key + (label.isEmpty ? "" : " (" + label + ")") + ": " + onOff(s.state.checked)
        + "; default " + onOff(s.defaultChecked) + "."
    ]
    if s.state.disabled {
      lines.append(
        holdSentence(
          "Disabled", by: s.state.disabledBy, source: s.policySource,
          since: explanation.disabledSince?.value, reason: s.state.disabledReason))
      lines.append("It keeps its value but does not apply while disabled.")
    }
    if s.state.readOnly {
      // `policySource` names the section that disables the switch when a
      // policy does both (disabled wins): the hold's own file is not known.
      let disabledByPolicy = s.state.disabled && s.state.disabledBy == Holder.policy.wireName
      lines.append(
        holdSentence(
          "Read-only, held", by: s.state.heldBy,
          source: disabledByPolicy ? nil : s.policySource,
          since: explanation.heldSince?.value, reason: s.state.readOnlyReason))
    }
    // What ends by itself, and when: a tried change, a timed value, a hold.
    lines += timeNotes(s.state, now: wallClockMilliseconds()).map {
      $0.prefix(1).uppercased() + $0.dropFirst() + "."
    }
    if !s.state.disabled && !s.state.readOnly {
      // Free, yet this caller may not change it: the daemon's sentence says why.
      if !s.writable, let reason = s.writableReason {
        lines.append("Neither read-only nor disabled. " + printable(reason))
      } else if s.scope == Scope.user.wireName {
        // Each person's own value: nobody else's right is asked.
        lines.append("Neither read-only nor disabled: each user sets their own value of it.")
      } else {
        lines.append(
          "Neither read-only nor disabled: anyone who may write switches can change it.")
      }
    }
    if s.state.invalid {
      // The command's own words seldom end a sentence: the period is ours.
      let reason =
        s.state.invalidReason.map { ": " + printable($0) + ($0.hasSuffix(".") ? "" : ".") } ?? "."
      lines.append(
        "Invalid: its apply command could not make the value real" + reason
          + " `switchctl apply \(key)` tries again.")
    }
    lines += readBack(s, explanation.readBack)
    lines.append(lastChange(explanation.lastChange?.value, s))
    return lines
  }

  /// What the system reads (`observed`), the re-applications and the watch
  /// program of a switch that reads the system back.
  private static func readBack(_ s: SwitchObject, _ report: ReadBackReport?) -> [String] {
    guard let report else { return [] }
    var lines: [String] = []
    if let observed = s.observed {
      lines.append("The system reads it as " + onOff(observed) + ".")
    } else {
      lines.append("What the system has is unknown: nothing was read back yet.")
    }
    if report.reapplied > 0, let time = report.lastReapplied, let had = report.systemHad {
      let times = report.reapplied == 1 ? "once" : "\(report.reapplied) times"
      lines.append(
        "Re-applied \(times) since switchd started; last re-applied at \(Output.time(time)): "
          + "the system had turned it \(onOff(had)).")
    }
    if let problem = report.watchProblem {
      lines.append("Its watch program is not running: " + printable(problem) + ".")
    }
    return lines
  }

  /// `Read-only, held by policy (50-corp.conf:3) since T: the reason.`
  private static func holdSentence(
    _ head: String, by holder: String?, source: String?, since entry: EntryObject?,
    reason: String?
  ) -> String {
    var text = head + " by "
    switch holder {
    case Holder.policy.wireName?:
      text += "policy" + (source.map { " (" + printable($0) + ")" } ?? "")
    case Holder.admin.wireName?:
      text += "an administrator"
      if let uid = entry?.actor.uid { text += " (uid \(uid))" }
    case Holder.dependency.wireName?:
      // Requires= or Conflicts=: the reason names the switch.
      text += "another switch"
    case let other?:
      text += other
    case nil:
      text += "?"
    }
    if let entry { text += " since " + time(entry.time) }
    if let reason, !reason.isEmpty { return text + ": " + printable(reason) }
    return text + "; no reason given."
  }

  private static func lastChange(_ entry: EntryObject?, _ s: SwitchObject) -> String {
    if let entry {
      let who = actor(entry.actor, withPID: true)
      var what: [String] = []
      if entry.cause != who { what.append(entry.cause) }
      let changed = changes(entry)
      if !changed.isEmpty { what.append(changed) }
      return "Last change: revision \(entry.revision) at " + time(entry.time) + " by " + who
        + (what.isEmpty ? "" : ": " + what.joined(separator: ", ")) + "."
    }
    guard s.revision > 0 else { return "Last change: none; it has never changed." }
    let at = s.changedAt.map { " at " + time($0) } ?? ""
    return "Last change: revision \(s.revision)\(at) (no longer in the retained history)."
  }

  // MARK: Layout

  /// Aligns columns two spaces apart. The last cell of a row is not padded,
  /// so no line ends in spaces.
  static func table(_ rows: [[String]]) -> [String] {
    var widths: [Int] = []
    for row in rows {
      for (column, cell) in row.enumerated() {
        if column == widths.count { widths.append(0) }
        widths[column] = max(widths[column], displayWidth(cell))
      }
    }
    return rows.map { row in
      var line = ""
      for (column, cell) in row.enumerated() {
        if column > 0 { line += "  " }
        line += column == row.count - 1 ? cell : pad(cell, widths[column])
      }
      return line
    }
  }
}

/// `text` with spaces after it up to `width` terminal columns.
func pad(_ text: String, _ width: Int) -> String {
  let count = displayWidth(text)
  return count >= width ? text : text + String(repeating: " ", count: width - count)
}

/// The terminal columns `text` takes: two for a wide (East Asian) character
/// or an emoji, none for a combining mark or a format character, one for
/// the rest (wcwidth(3) needs a UTF-8 locale, which scripts often lack).
func displayWidth(_ text: String) -> Int {
  var columns = 0
  for scalar in text.unicodeScalars {
    switch scalar.properties.generalCategory {
    case .nonspacingMark, .enclosingMark: continue
    case .format where scalar.value != 0xAD: continue  // a soft hyphen shows
    default: columns += isWide(scalar.value) ? 2 : 1
    }
  }
  return columns
}

/// Unicode's East Asian Wide and Fullwidth blocks, and emoji presentation.
private func isWide(_ value: UInt32) -> Bool {
  switch value {
  case 0x1100...0x115F, 0x2E80...0x303E, 0x3041...0x33FF, 0x3400...0x4DBF, 0x4E00...0x9FFF,
    0xA000...0xA4CF, 0xAC00...0xD7A3, 0xF900...0xFAFF, 0xFE30...0xFE4F, 0xFF00...0xFF60,
    0xFFE0...0xFFE6, 0x1F300...0x1F64F, 0x1F680...0x1F6FF, 0x1F900...0x1F9FF,
    0x1FA70...0x1FAFF, 0x20000...0x3FFFD:
    return true
  default:
    return false
  }
}
