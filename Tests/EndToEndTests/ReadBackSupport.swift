import Glibc
import SwitchProtocol
import SwitchTestSupport
import Testing

/// A fake radio for the read-back tests: a state file `radio` holding `on`
/// or `off`, an apply command that writes it, a check that reads it, and a
/// watch that follows it (a short poll inside the script: the test itself
/// never sleeps, it waits for what the daemon reports).
extension DaemonFixture {
  /// The fake radio's `[radio]` section: its apply command, then `readBack`
  /// lines (its watch by default) and `extra`; `defaultOn` nil leaves
  /// `Default=` out.
  static func radioSwitch(
    defaultOn: Bool? = false, readBack: [String] = ["ExecWatch=@DIR@/radio-watch @DIR@/radio"],
    extra: String = ""
  ) -> String {
    var lines = ["[radio]", "Label=Radio"]
    if let defaultOn { lines.append("Default=\(defaultOn ? "on" : "off")") }
    lines.append("ExecApply=@DIR@/radio-apply @DIR@/radio")
    lines += readBack
    if !extra.isEmpty { lines.append(extra) }
    return lines.joined(separator: "\n") + "\n"
  }

  static let radioCheck = "ExecCheck=@DIR@/radio-check @DIR@/radio"

  func writeFakeRadio(initially state: String = "off") throws {
    try writeWholeFile(directory + "/radio", state + "\n")
    // While the file `radio.fail` exists, applying fails with its reason;
    // while `radio.stuck` exists, it succeeds and changes nothing.
    try writeApplier(
      "radio-apply",
      """
      if [ -e "$1.fail" ]; then echo "the radio is jammed" >&2; exit 1; fi
      echo "$SWITCH_EFFECTIVE $SWITCH_CAUSE" >> "$1.applies"
      if [ -e "$1.stuck" ]; then exit 0; fi
      echo "$SWITCH_EFFECTIVE" > "$1.new" && mv "$1.new" "$1"
      """)
    try writeApplier("radio-check", #"read state < "$1" && echo "$state""#)
    // Prints the state each time it changes, the current one first; while
    // the file `watch-exit` exists it says so on standard error and exits.
    try writeApplier(
      "radio-watch",
      """
      last=""
      while :; do
        if [ -e "$1.watch-exit" ]; then echo "the radio went away" >&2; exit 1; fi
        read state < "$1"
        if [ "$state" != "$last" ]; then echo "$state"; last="$state"; fi
        sleep 0.05
      done
      """)
  }

  /// A check of the radio that counts its runs (`radioChecks`), and
  /// prints nonsense while the file `radio.bad` exists.
  static let countingRadioCheck = "ExecCheck=@DIR@/counting-check @DIR@/radio"

  func writeCountingCheck() throws {
    try writeApplier(
      "counting-check",
      #"echo x >> "$1.checks"; if [ -e "$1.bad" ]; then echo maybe; exit 0; fi; "#
        + #"read state < "$1" && echo "$state""#)
  }

  /// How many times `countingRadioCheck` has run.
  func radioChecks() -> Int {
    ((try? readWholeFile(directory + "/radio.checks")) ?? "").count { $0 == "\n" }
  }

  /// Another program changes the radio behind switchd's back.
  func turnRadio(_ state: String) throws {
    try writeWholeFile(directory + "/radio.new", state + "\n")
    rename(directory + "/radio.new", directory + "/radio")
  }

  /// The values the apply command was run with, and their causes: `on set`.
  func radioApplies() -> [String] {
    let text = (try? readWholeFile(directory + "/radio.applies")) ?? ""
    return text.split(separator: "\n").map(String.init)
  }

  /// The `observed` member of `key`'s Switch object: true, false, or nil for null.
  func observed(_ key: String, _ client: RPCClient) throws -> Bool?? {
    let object = try client.result("get", #"{"key":"\#(key)"}"#)
    guard let member = object["observed"] else { return nil }
    return member.isNull ? .some(nil) : .some(member.boolValue)
  }
}
