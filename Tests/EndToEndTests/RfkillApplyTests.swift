import Glibc
import SwitchTestSupport
import Testing

/// The shipped `libexec/rfkill-apply` (issue 13 item 5) against a fake
/// `rfkill` first on PATH that keeps its radios in a file: it unblocks or
/// blocks the radios of one type as SWITCH_EFFECTIVE says, is idempotent,
/// fails with a one-line reason first on standard error, and leaves the
/// radios as they were when it fails.
@Suite struct RfkillApplyTests {
  /// The script, found from this file's path.
  static let script: String = {
    var path = #filePath
    for _ in 0..<3 { path = String(path[..<path.lastIndex(of: "/")!]) }
    return path + "/libexec/rfkill-apply"
  }()

  /// A stand-in for rfkill(8) with its `list`, `block` and `unblock`: the
  /// radios are lines `ID NAME TYPE SOFT HARD` in $FAKE_RFKILL_STATE, each
  /// call is appended to $FAKE_RFKILL_CALLS. FAKE_RFKILL_FAIL=VERB makes that
  /// verb fail untouched; FAKE_RFKILL_PARTIAL=VERB makes it change the first
  /// radio only, then fail.
  static let fakeRfkill = #"""
    #!/bin/sh
    echo "$*" >>"$FAKE_RFKILL_CALLS"
    verb=$1
    what=${2-all}
    case "$what" in
      all|wlan|wifi|bluetooth|uwb|wimax|wwan|gps|fm|nfc|[0-9]*) ;;
      *) echo "rfkill: invalid identifier: $what" >&2; exit 1 ;;
    esac
    [ "$what" = wifi ] && what=wlan
    matches() { [ "$what" = all ] || [ "$what" = "$1" ] || [ "$what" = "$2" ]; }
    case "$verb" in
      list)
        while read -r id name type soft hard; do
          matches "$id" "$type" || continue
          case "$type" in wlan) label="Wireless LAN" ;; bluetooth) label=Bluetooth ;; *) label=$type ;; esac
          printf '%s: %s: %s\n\tSoft blocked: %s\n\tHard blocked: %s\n' "$id" "$name" "$label" "$soft" "$hard"
        done <"$FAKE_RFKILL_STATE"
        ;;
      block|unblock)
        if [ "${FAKE_RFKILL_FAIL-}" = "$verb" ]; then
          echo "rfkill: cannot open /dev/rfkill: Permission denied" >&2
          exit 1
        fi
        soft=no; [ "$verb" = block ] && soft=yes
        changed=0
        while read -r id name type old hard; do
          if matches "$id" "$type" && { [ "${FAKE_RFKILL_PARTIAL-}" != "$verb" ] || [ $changed = 0 ]; }; then
            echo "$id $name $type $soft $hard"; changed=1
          else
            echo "$id $name $type $old $hard"
          fi
        done <"$FAKE_RFKILL_STATE" >"$FAKE_RFKILL_STATE.new"
        mv "$FAKE_RFKILL_STATE.new" "$FAKE_RFKILL_STATE"
        if [ "${FAKE_RFKILL_PARTIAL-}" = "$verb" ]; then echo "rfkill: write failed" >&2; exit 1; fi
        ;;
      *) echo "rfkill: unknown command $verb" >&2; exit 1 ;;
    esac
    """#

  /// A temp directory with the fake rfkill in `bin/`, its radios and its call log.
  final class Machine {
    let directory: String
    var state: String { directory + "/radios" }
    var calls: String { directory + "/calls" }

    init(radios: String, withRfkill: Bool = true) throws {
      directory = try makeTemporaryDirectory("switchd-rfkill")
      mkdir(directory + "/bin", 0o755)
      if withRfkill {
        try writeWholeFile(directory + "/bin/rfkill", RfkillApplyTests.fakeRfkill)
        chmod(directory + "/bin/rfkill", 0o755)
      }
      try writeWholeFile(state, radios)
      try writeWholeFile(calls, "")
    }

    deinit { removeTree(directory) }

    /// Runs rfkill-apply with exactly the environment switchd gives it, the
    /// fake first on PATH, and `effective` as SWITCH_EFFECTIVE (nil: unset).
    func apply(_ arguments: [String], effective: String?, fake: [String] = []) -> ProcessResult {
      var environment = [
        "PATH=\(directory)/bin:/usr/sbin:/usr/bin:/sbin:/bin", "SWITCH_KEY=radio",
        "FAKE_RFKILL_STATE=\(state)", "FAKE_RFKILL_CALLS=\(calls)",
      ]
      if let effective { environment.append("SWITCH_EFFECTIVE=\(effective)") }
      return runProcess(
        ["/usr/bin/env", "-i"] + environment + fake + [RfkillApplyTests.script] + arguments)
    }

    var radios: String { (try? readWholeFile(state)) ?? "" }
    /// The rfkill calls that change something.
    var writes: [String] {
      ((try? readWholeFile(calls)) ?? "").split(separator: "\n").map(String.init)
        .filter { !$0.hasPrefix("list") }
    }
  }

  static let laptop = "0 phy0 wlan no no\n1 hci0 bluetooth yes no\n2 hci1 bluetooth yes no\n"

  static func firstLine(_ text: String) -> String {
    String(text.split(separator: "\n").first ?? "")
  }

  @Test func onUnblocksAndOffBlocksTheRadiosOfOneTypeOnly() throws {
    let machine = try Machine(radios: Self.laptop)
    let on = machine.apply(["bluetooth"], effective: "on")
    #expect(on.status == 0, "\(on)")
    #expect(on.stderr.isEmpty, "\(on)")
    #expect(machine.radios == "0 phy0 wlan no no\n1 hci0 bluetooth no no\n2 hci1 bluetooth no no\n")
    #expect(machine.writes == ["unblock bluetooth"])

    let off = machine.apply(["wlan"], effective: "off")
    #expect(off.status == 0, "\(off)")
    #expect(
      machine.radios == "0 phy0 wlan yes no\n1 hci0 bluetooth no no\n2 hci1 bluetooth no no\n")
  }

  @Test func applyingTheStateInPlaceSucceedsAndChangesNothing() throws {
    let machine = try Machine(radios: Self.laptop)
    for _ in 0..<2 {
      let off = machine.apply(["bluetooth"], effective: "off")
      #expect(off.status == 0, "\(off)")
      #expect(machine.radios == Self.laptop)
    }
  }

  @Test func aMachineWithoutThatRadioFailsWithAClearFirstLine() throws {
    let machine = try Machine(radios: "0 phy0 wlan no no\n")
    for effective in ["on", "off"] {
      let result = machine.apply(["bluetooth"], effective: effective)
      #expect(result.status != 0, "\(result)")
      #expect(Self.firstLine(result.stderr) == "no bluetooth radio on this machine", "\(result)")
    }
    #expect(machine.writes.isEmpty)
    #expect(machine.radios == "0 phy0 wlan no no\n")
    let empty = try Machine(radios: "")
    let none = empty.apply(["wlan"], effective: "on")
    #expect(Self.firstLine(none.stderr) == "no wlan radio on this machine", "\(none)")
  }

  @Test func anRfkillFailureIsTheReasonAndChangesNothing() throws {
    let machine = try Machine(radios: Self.laptop)
    let result = machine.apply(
      ["bluetooth"], effective: "on", fake: ["FAKE_RFKILL_FAIL=unblock"])
    #expect(result.status == 1, "\(result)")
    #expect(
      Self.firstLine(result.stderr)
        == "rfkill unblock bluetooth failed: rfkill: cannot open /dev/rfkill: Permission denied",
      "\(result)")
    #expect(machine.radios == Self.laptop)
  }

  @Test func aPartialFailurePutsTheRadiosBackAsTheyWere() throws {
    let machine = try Machine(radios: Self.laptop)
    let result = machine.apply(
      ["bluetooth"], effective: "on", fake: ["FAKE_RFKILL_PARTIAL=unblock"])
    #expect(result.status == 1, "\(result)")
    #expect(
      Self.firstLine(result.stderr) == "rfkill unblock bluetooth failed: rfkill: write failed",
      "\(result)")
    #expect(machine.radios == Self.laptop)
    #expect(machine.writes.first == "unblock bluetooth")
    #expect(machine.writes.dropFirst().allSatisfy { $0.hasPrefix("block ") })
  }

  @Test func aHardwareSwitchThatKeepsTheRadioOffIsAFailure() throws {
    let machine = try Machine(radios: "0 phy0 wlan yes yes\n")
    let on = machine.apply(["wlan"], effective: "on")
    #expect(on.status == 1, "\(on)")
    #expect(
      Self.firstLine(on.stderr)
        == "the wlan radio 0 is turned off by a hardware switch (rfkill: hard blocked)", "\(on)")
    #expect(machine.radios == "0 phy0 wlan yes yes\n")
    // Off is what the hardware switch already gives: that succeeds.
    #expect(machine.apply(["wlan"], effective: "off").status == 0)
  }

  @Test func misuseIsRefusedBeforeRfkillRuns() throws {
    let machine = try Machine(radios: Self.laptop)
    let unset = machine.apply(["bluetooth"], effective: nil)
    #expect(unset.status == 2)
    #expect(Self.firstLine(unset.stderr) == "SWITCH_EFFECTIVE must be on or off, not ''")
    let bad = machine.apply(["bluetooth"], effective: "yes")
    #expect(Self.firstLine(bad.stderr) == "SWITCH_EFFECTIVE must be on or off, not 'yes'")
    let noType = machine.apply([], effective: "on")
    #expect(noType.status == 2)
    #expect(noType.stderr.hasPrefix("usage: rfkill-apply TYPE"))
    let unknown = machine.apply(["radar"], effective: "on")
    #expect(unknown.status == 1)
    #expect(
      Self.firstLine(unknown.stderr)
        == "cannot list the radar radios: rfkill: invalid identifier: radar", "\(unknown)")
    #expect(machine.writes.isEmpty)
    #expect(machine.radios == Self.laptop)
  }

  @Test func withoutRfkillItSaysSo() throws {
    let machine = try Machine(radios: Self.laptop, withRfkill: false)
    // PATH is only the fake's bin, empty here: whether this machine has rfkill does not matter.
    let result = runProcess([
      "/usr/bin/env", "-i", "PATH=\(machine.directory)/bin", "SWITCH_EFFECTIVE=on", Self.script,
      "wlan",
    ])
    #expect(result.status == 1)
    #expect(
      Self.firstLine(result.stderr) == "rfkill is not installed (Debian: apt install rfkill)")
  }
}
