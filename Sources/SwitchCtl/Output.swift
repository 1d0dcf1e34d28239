import SwitchCore
import SwitchProtocol

/// Text for people, from the JSON the daemon sends. Pure functions of JSON
/// values, so golden tests need no daemon. Fields a newer daemon adds are
/// ignored; fields that are missing render as `?` rather than failing.
enum Output {
  // MARK: Values

  /// `on`, `off`, or `?` for anything that is not a boolean.
  static func onOff(_ value: JSONValue?) -> String {
    switch value {
    case .bool(true)?: return "on"
    case .bool(false)?: return "off"
    default: return "?"
    }
  }

  /// The notes for a Switch or a State that is disabled, read-only or
  /// invalid, in the order a person must read them: disabled wins
  /// (docs/semantics.md rule 5), so it comes first. E.g. `disabled by admin: Gone.`.
  /// `invalid` says the system did not take the value: `invalid: rfkill: no device`.
  static func notes(_ state: JSONValue) -> [String] {
    var notes: [String] = []
    if state[WireField.disabled] == .bool(true) {
      notes.append(
        hold("disabled", by: state[WireField.disabledBy], reason: state[WireField.disabledReason]))
    }
    if state[WireField.readOnly] == .bool(true) {
      notes.append(
        hold("read-only", by: state[WireField.heldBy], reason: state[WireField.readOnlyReason]))
    }
    if state[WireField.invalid] == .bool(true) {
      notes.append(hold("invalid", by: nil, reason: state[WireField.invalidReason]))
    }
    return notes
  }

  private static func hold(_ what: String, by holder: JSONValue?, reason: JSONValue?) -> String {
    var text = what
    if let name = holder?.stringValue { text += " by " + name }
    if let reason = reason?.stringValue, !reason.isEmpty { text += ": " + printable(reason) }
    return text
  }

  /// Free text from the daemon (labels, reasons, messages) with control
  /// characters escaped: a reason holding a newline or a terminal escape
  /// must not break "one line per switch" or play tricks on a terminal.
  static func printable(_ text: String) -> String {
    func isControl(_ scalar: Unicode.Scalar) -> Bool {
      scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value)
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
  static func withNotes(_ text: String, _ state: JSONValue) -> String {
    notes(state).reduce(text) { $0 + " (" + $1 + ")" }
  }

  /// Who made a change: `uid 1000 (pid 4321)`, `policy`, or `another user`
  /// when the daemon hides who (null ids: another user's change, shown to
  /// someone who does not administer).
  static func actor(_ actor: JSONValue?, withPID: Bool) -> String {
    guard let actor else { return "?" }
    if let source = actor[WireField.source]?.stringValue { return source }
    if actor[WireField.uid] == .null { return "another user" }
    guard let uid = actor[WireField.uid]?.int64Value else { return "?" }
    if withPID, let pid = actor[WireField.pid]?.int64Value { return "uid \(uid) (pid \(pid))" }
    return "uid \(uid)"
  }

  /// Compact JSON text, as `JSONWriter` writes it: what `--json` prints.
  static func json(_ value: JSONValue) -> String {
    value.jsonText
  }

  // MARK: Commands

  /// `get`: `off (read-only by policy: Bluetooth is turned off by your organisation.)`.
  static func get(_ switchObject: JSONValue) -> String {
    withNotes(onOff(switchObject[WireField.checked]), switchObject)
  }

  /// `list`: key, on/off, label and notes, in aligned columns.
  static func list(_ result: JSONValue) -> [String] {
    let rows = (result[WireField.switches]?.arrayValue ?? []).map { item -> [String] in
      var row = [
        item[WireField.key]?.stringValue ?? "?", onOff(item[WireField.checked]),
        printable(item[WireField.label]?.stringValue ?? ""),
      ]
      let notes = notes(item)
      if !notes.isEmpty { row.append(notes.map { "(" + $0 + ")" }.joined(separator: " ")) }
      return row
    }
    return table(rows)
  }

  /// A write (`set`, `lock`, …): `wifi: on`, `wifi: on (unchanged)`, with notes.
  static func write(_ result: JSONValue) -> String {
    let switchObject = result[WireField.switch] ?? .null
    var text =
      (switchObject[WireField.key]?.stringValue ?? "?") + ": "
      + onOff(switchObject[WireField.checked])
    if result[WireField.changed] == .bool(false) { text += " (unchanged)" }
    return withNotes(text, switchObject)
  }

  /// `history`: `43  2026-11-30T03:41:07.002Z  wifi  toggle  checked: on→off  by uid 1000 (pid 4321)`,
  /// or `no changes` for an empty page, so that a person sees the command worked.
  static func history(_ result: JSONValue) -> [String] {
    let entries = result[WireField.entries]?.arrayValue ?? []
    return entries.isEmpty ? ["no changes"] : table(entries.map(historyRow))
  }

  private static func historyRow(_ entry: JSONValue) -> [String] {
    [
      entry[WireField.revision]?.int64Value.map { String($0) } ?? "?",
      entry[WireField.time]?.stringValue ?? "?",
      keyAndUser(entry),
      entry[WireField.cause]?.stringValue ?? "?",
      // Changes vary too much in width to align; the actor follows them.
      changes(entry) + "  by " + actor(entry[WireField.actor], withPID: true),
    ]
  }

  /// The fields a change altered: `checked: on→off, heldBy: none→admin`.
  static func changes(_ entry: JSONValue) -> String {
    let names = (entry[WireField.fields]?.arrayValue ?? []).compactMap(\.stringValue)
    return names.map { name in
      name + ": " + field(name, entry[WireField.previous]?[name]) + "→"
        + field(name, entry[WireField.state]?[name])
    }.joined(separator: ", ")
  }

  /// One State field's value: on/off for `checked`, yes/no for flags,
  /// reasons quoted (free text), `none` for null.
  private static func field(_ name: String, _ value: JSONValue?) -> String {
    switch value {
    case nil: return "?"
    case .null?: return "none"
    case .bool(let flag)?: return name == WireField.checked ? onOff(value) : (flag ? "yes" : "no")
    case .string(let text)?:
      return name.hasSuffix("Reason") ? JSONValue.string(text).jsonText : text
    case let other?: return other.jsonText
    }
  }

  /// `watch`: `42 wifi off (toggle by uid 1000)`, then the notes of the new state.
  static func event(_ params: JSONValue) -> String {
    let cause = params[WireField.cause]?.stringValue ?? "?"
    let who = actor(params[WireField.actor], withPID: false)
    // A policy change is made by the policy: "(policy by policy)" says nothing twice.
    let origin = who == cause ? cause : cause + " by " + who
    let state = params[WireField.state] ?? .null
    let head =
      (params[WireField.revision]?.int64Value.map { String($0) } ?? "?") + " "
      + keyAndUser(params) + " " + onOff(state[WireField.checked])
    return withNotes(head + " (" + origin + ")", state)
  }

  /// The key of an event or entry, with whose value changed when it is one
  /// user's: `email.marketing[uid 1000]`.
  private static func keyAndUser(_ change: JSONValue) -> String {
    let key = change[WireField.key]?.stringValue ?? "?"
    guard let user = change[WireField.user]?.int64Value else { return key }
    return key + "[uid \(user)]"
  }

  private static func scalar(_ value: JSONValue) -> String {
    switch value {
    case .string(let text): return printable(text)
    case .null: return "none"
    case .number(let number): return number.text
    case .bool(let flag): return flag ? "yes" : "no"
    case let other: return other.jsonText
    }
  }

  /// `status`: one `name: value` line per result member (members a newer
  /// daemon adds print too); the last reload and the caller in words,
  /// each problem of a refused reload on its own line.
  static func status(_ result: JSONValue) -> [String] {
    var lines: [String] = []
    for member in result.objectMembers ?? [] {
      switch member.name {
      case WireField.lastReload:
        guard let time = member.value[WireField.time]?.stringValue else {
          lines.append(member.name + ": none since switchd started")
          continue
        }
        // Only an administrator is shown the errors; anyone their count.
        let errors = (member.value[WireField.errors]?.arrayValue ?? []).compactMap(\.stringValue)
        let count = member.value[WireField.errorCount]?.int64Value ?? Int64(errors.count)
        var text = time + " " + (member.value[WireField.result]?.stringValue ?? "?")
        if count > 0 { text += count == 1 ? " (1 error)" : " (\(count) errors)" }
        lines.append(member.name + ": " + text)
        lines += errors.map { "  " + printable($0) }
      case WireField.caller:
        let c = member.value
        let id = { (name: String) in c[name]?.int64Value.map { String($0) } ?? "?" }
        lines.append(
          member.name + ": uid " + id(WireField.uid) + ", gid " + id(WireField.gid)
            + ", administrator: " + scalar(c[WireField.administrator] ?? .null)
            + ", writes system switches: " + scalar(c[WireField.writesSystemSwitches] ?? .null))
      default:
        lines.append(member.name + ": " + scalar(member.value))
      }
    }
    return lines
  }

  /// `reload`: the counts, and the settings that wait for a restart.
  static func reload(_ result: JSONValue) -> [String] {
    var lines: [String] = []
    for member in result.objectMembers ?? [] where member.name != WireField.restartRequired {
      lines.append(member.name + ": " + scalar(member.value))
    }
    let pending = (result[WireField.restartRequired]?.arrayValue ?? []).compactMap(\.stringValue)
    if !pending.isEmpty {
      lines.append(
        "restart required: " + pending.map(printable).joined(separator: ", ")
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
      let count = errors.count == 1 ? "1 error" : "\(errors.count) errors"
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
    return [sentence]
  }

  /// `why`: several lines explaining the switch.
  static func why(_ explanation: Explanation) -> [String] {
    let s = explanation.switchObject
    let key = s[WireField.key]?.stringValue ?? "?"
    let label = printable(s[WireField.label]?.stringValue ?? "")
    var lines = [
      key + (label.isEmpty ? "" : " (" + label + ")") + ": " + onOff(s[WireField.checked])
        + "; default " + onOff(s[WireField.defaultChecked]) + "."
    ]
    if s[WireField.disabled] == .bool(true) {
      lines.append(
        holdSentence(
          "Disabled", by: s[WireField.disabledBy], source: s[WireField.policySource],
          since: explanation.disabledSince, reason: s[WireField.disabledReason]))
      lines.append("It keeps its value but does not apply while disabled.")
    }
    if s[WireField.readOnly] == .bool(true) {
      lines.append(
        holdSentence(
          "Read-only, held", by: s[WireField.heldBy], source: s[WireField.policySource],
          since: explanation.heldSince, reason: s[WireField.readOnlyReason]))
    }
    if s[WireField.disabled] != .bool(true) && s[WireField.readOnly] != .bool(true) {
      // Free, yet this caller may not change it: the daemon's sentence says why.
      if s[WireField.writable] == .bool(false),
        let reason = s[WireField.writableReason]?.stringValue
      {
        lines.append("Neither read-only nor disabled. " + printable(reason))
      } else {
        lines.append(
          "Neither read-only nor disabled: anyone who may write switches can change it.")
      }
    }
    if s[WireField.invalid] == .bool(true) {
      // The command's own words seldom end a sentence: the period is ours.
      let reason =
        s[WireField.invalidReason]?.stringValue.map {
          ": " + printable($0) + ($0.hasSuffix(".") ? "" : ".")
        } ?? "."
      lines.append(
        "Invalid: its apply command could not make the value real" + reason
          + " `switchctl apply \(key)` tries again.")
    }
    lines.append(lastChange(explanation.lastChange, s))
    return lines
  }

  /// `Read-only, held by policy (50-corp.conf:3) since T: the reason.`
  private static func holdSentence(
    _ head: String, by holder: JSONValue?, source: JSONValue?, since entry: JSONValue?,
    reason: JSONValue?
  ) -> String {
    var text = head + " by "
    switch holder?.stringValue {
    case Holder.policy.wireName?:
      text += "policy" + (source?.stringValue.map { " (" + printable($0) + ")" } ?? "")
    case Holder.admin.wireName?:
      text += "an administrator"
      if let uid = entry?[WireField.actor]?[WireField.uid]?.int64Value { text += " (uid \(uid))" }
    case Holder.dependency.wireName?:
      text += "a switch it depends on"
    case let other?:
      text += other
    case nil:
      text += "?"
    }
    if let time = entry?[WireField.time]?.stringValue { text += " since " + time }
    if let reason = reason?.stringValue, !reason.isEmpty { return text + ": " + printable(reason) }
    return text + "; no reason given."
  }

  private static func lastChange(_ entry: JSONValue?, _ s: JSONValue) -> String {
    if let entry {
      let revision = entry[WireField.revision]?.int64Value.map { String($0) } ?? "?"
      let who = actor(entry[WireField.actor], withPID: true)
      var what: [String] = []
      if let cause = entry[WireField.cause]?.stringValue, cause != who { what.append(cause) }
      let changed = changes(entry)
      if !changed.isEmpty { what.append(changed) }
      return "Last change: revision \(revision) at " + (entry[WireField.time]?.stringValue ?? "?")
        + " by " + who + (what.isEmpty ? "" : ": " + what.joined(separator: ", ")) + "."
    }
    guard let revision = s[WireField.revision]?.int64Value, revision > 0 else {
      return "Last change: none; it has never changed."
    }
    let time = s[WireField.changedAt]?.stringValue.map { " at " + $0 } ?? ""
    return "Last change: revision \(revision)\(time) (no longer in the retained history)."
  }

  // MARK: Layout

  /// Aligns columns two spaces apart. The last cell of a row is not padded,
  /// so no line ends in spaces.
  static func table(_ rows: [[String]]) -> [String] {
    var widths: [Int] = []
    for row in rows {
      for (column, cell) in row.enumerated() {
        if column == widths.count { widths.append(0) }
        widths[column] = max(widths[column], cell.count)
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

/// `text` with spaces after it up to `width` characters.
func pad(_ text: String, _ width: Int) -> String {
  let count = text.count
  return count >= width ? text : text + String(repeating: " ", count: width - count)
}
