import Glibc
import SwitchTestSupport
import Testing

/// The shipped `libexec/rfkill-watch` and `libexec/nm-radio` (issue 23 item
/// 3) against fakes first on PATH: an `rfkill event` and a `dbus-monitor`
/// that stream lines the test appends to a file, and an `nmcli` that keeps
/// the radio in a file. There is no /dev/rfkill here; NetworkManager itself
/// is checked in a booted system by .ci/check-booted.sh.
@Suite struct RadioAdapterTests {
  static func script(_ name: String) -> String {
    var path = #filePath
    for _ in 0..<3 { path = String(path[..<path.lastIndex(of: "/")!]) }
    return path + "/libexec/" + name
  }

  /// `rfkill event` prints $FAKE_EVENTS and follows it; FAKE_EVENTS_END=1
  /// prints it and ends, like an rfkill that lost its device.
  static let fakeRfkill = #"""
    #!/bin/sh
    if [ "$1" = --noheadings ]; then
      case "$5" in wlan) t=1 ;; bluetooth) t=2 ;; *) t=0 ;; esac
      grep " type $t op 0 " "$FAKE_EVENTS" | sed 's/.* idx \([0-9]*\) .*/\1/'; exit 0
    fi
    [ "$1" = event ] || { echo "rfkill: only event and list here" >&2; exit 1; }
    [ -n "${FAKE_EVENTS_END-}" ] && exec cat "$FAKE_EVENTS"
    exec tail -n +1 -f "$FAKE_EVENTS"
    """#

  /// `nmcli radio wifi|wwan [on|off]` and `nmcli -t -f WIFI-HW radio` on the
  /// state in $FAKE_NM/RADIO (enabled/disabled); each set is appended to
  /// $FAKE_NM/calls. FAKE_NM_DOWN=1: NetworkManager is not running;
  /// FAKE_NM_DENY=1: polkit says no; FAKE_NM_STUCK=1: a set is taken and
  /// changes nothing, with the hardware switch off.
  static let fakeNmcli = #"""
    #!/bin/sh
    if [ -n "${FAKE_NM_DOWN-}" ]; then echo "Error: NetworkManager is not running." >&2; exit 8; fi
    if [ "$1" = -t ]; then [ -n "${FAKE_NM_STUCK-}" ] && echo disabled || echo enabled; exit 0; fi
    [ "$1" = radio ] || exit 2
    if [ $# -eq 2 ]; then cat "$FAKE_NM/$2"; exit 0; fi
    if [ -n "${FAKE_NM_DENY-}" ]; then
      echo "Error: failed to set Wi-Fi radio: Not authorized to perform this operation" >&2; exit 1
    fi
    echo "$2 $3" >>"$FAKE_NM/calls"
    [ -n "${FAKE_NM_STUCK-}" ] && exit 0
    [ "$3" = on ] && echo enabled >"$FAKE_NM/$2" || echo disabled >"$FAKE_NM/$2"
    """#

  /// dbus-monitor's own NameAcquired, then what the test appends to $FAKE_EVENTS
  /// after it: counted before NameAcquired goes out, so a line appended while
  /// `tail` starts is not skipped.
  static let fakeDbusMonitor = #"""
    #!/bin/sh
    seen=$(wc -l <"$FAKE_EVENTS")
    echo "signal time=1 sender=org.freedesktop.DBus -> destination=:1.7 serial=2 path=/org/freedesktop/DBus; interface=org.freedesktop.DBus; member=NameAcquired"
    exec tail -n +$((seen + 1)) -f "$FAKE_EVENTS"
    """#

  /// A temp directory with the fakes in `bin/`, the radios and an event file.
  final class Machine {
    let directory: String
    var events: String { directory + "/events" }
    var bin: String { directory + "/bin" }

    init(fakes: [String: String] = [:]) throws {
      var template = Array("/tmp/switchd-radio-XXXXXX".utf8CString)
      guard let made = mkdtemp(&template) else { throw FixtureError("mkdtemp failed") }
      directory = String(cString: made)
      mkdir(bin, 0o755)
      for (name, text) in fakes {
        try writeWholeFile(bin + "/" + name, text)
        chmod(bin + "/" + name, 0o755)
      }
      try writeWholeFile(events, "")
      try writeWholeFile(directory + "/wifi", "enabled\n")
      try writeWholeFile(directory + "/wwan", "disabled\n")
      try writeWholeFile(directory + "/calls", "")
    }

    deinit { _ = runProcess(["/bin/rm", "-rf", directory]) }

    /// The environment switchd gives a command, the fakes first on PATH.
    func environment(_ extra: [String]) -> [String] {
      [
        "PATH=\(bin):/usr/sbin:/usr/bin:/sbin:/bin", "FAKE_EVENTS=\(events)",
        "FAKE_NM=\(directory)",
      ]
        + extra
    }

    func run(_ name: String, _ arguments: [String], _ extra: [String] = []) -> ProcessResult {
      runProcess(
        ["/usr/bin/env", "-i"] + environment(extra) + [RadioAdapterTests.script(name)] + arguments)
    }

    /// A watch program in its own session, so that the whole group (the
    /// fakes' `tail -f` too) is killed at the end.
    func watch(_ name: String, _ arguments: [String]) throws -> WatchProgram {
      try WatchProgram(
        ["/usr/bin/setsid", "/usr/bin/env", "-i"] + environment([]) + [
          RadioAdapterTests.script(name)
        ]
          + arguments, log: directory + "/watch.log")
    }

    func append(_ line: String) throws {
      let fd = open(events, O_WRONLY | O_APPEND | O_CLOEXEC)
      guard fd >= 0 else { throw FixtureError("open \(events) failed") }
      defer { close(fd) }
      _ = (line + "\n").withCString { write(fd, $0, strlen($0)) }
    }

    /// Written whole and renamed in place: the watch may be reading the
    /// radio at that moment (a truncated file read as '' failed CI once).
    func set(_ radio: String, _ state: String) throws {
      let path = directory + "/" + radio
      try writeWholeFile(path + ".new", state + "\n")
      guard rename(path + ".new", path) == 0 else { throw FixtureError("rename \(path) failed") }
    }
    var calls: String { (try? readWholeFile(directory + "/calls")) ?? "" }
  }

  final class WatchProgram {
    let child: Child
    let log: String
    init(_ argv: [String], log: String) throws {
      self.log = log
      child = try Child(argv, logPath: log)
    }
    deinit { kill(-child.pid, SIGKILL) }
    var lines: [String] {
      ((try? readWholeFile(log)) ?? "").split(separator: "\n").map(String.init)
    }
    /// Whether the output so far is exactly `expected` (polled: the program runs on).
    /// Generous: a loaded two-core machine under a sanitizer runs the shell slowly.
    func says(_ expected: [String]) -> Bool { pollUntil(seconds: 90) { lines == expected } }
  }

  static func event(_ idx: Int, type: Int, op: Int, soft: Int, hard: Int = 0) -> String {
    "2026-12-01 10:00:00,000000+00:00: idx \(idx) type \(type) op \(op) soft \(soft) hard \(hard)"
  }

  // MARK: rfkill-watch

  @Test func rfkillWatchPrintsTheCurrentStateThenEachChangeOfItsTypeOnly() throws {
    let machine = try Machine(fakes: ["rfkill": Self.fakeRfkill])
    try machine.append(Self.event(0, type: 1, op: 0, soft: 1))
    try machine.append(Self.event(1, type: 2, op: 0, soft: 0))
    let watch = try machine.watch("rfkill-watch", ["wlan"])
    #expect(watch.says(["off"]), "\(watch.lines)")
    try machine.append(Self.event(1, type: 2, op: 2, soft: 1))  // bluetooth: not ours
    try machine.append(Self.event(0, type: 1, op: 2, soft: 0))
    #expect(watch.says(["off", "on"]), "\(watch.lines)")
    // A second Wi-Fi radio, blocked: one radio still transmits, so still on.
    try machine.append(Self.event(2, type: 1, op: 0, soft: 1))
    try machine.append(Self.event(0, type: 1, op: 2, soft: 0, hard: 1))
    #expect(watch.says(["off", "on", "off"]), "\(watch.lines)")
    try machine.append(Self.event(0, type: 1, op: 1, soft: 0))
    try machine.append(Self.event(2, type: 1, op: 1, soft: 1))
    #expect(watch.says(["off", "on", "off", "no wlan radio on this machine"]), "\(watch.lines)")
    try machine.append(Self.event(3, type: 1, op: 0, soft: 0))
    #expect(
      watch.says(["off", "on", "off", "no wlan radio on this machine", "on"]), "\(watch.lines)")
  }

  /// No radio of its type at the start: no event would ever say so (events
  /// come only for radios that exist), so the list read first does.
  @Test func rfkillWatchSaysAtTheStartWhenThereIsNoRadioOfItsType() throws {
    let machine = try Machine(fakes: ["rfkill": Self.fakeRfkill])
    try machine.append(Self.event(1, type: 2, op: 0, soft: 0))  // bluetooth only
    let watch = try machine.watch("rfkill-watch", ["wlan"])
    #expect(watch.says(["no wlan radio on this machine"]), "\(watch.lines)")
    try machine.append(Self.event(2, type: 1, op: 0, soft: 0))
    #expect(watch.says(["no wlan radio on this machine", "on"]), "\(watch.lines)")
  }

  @Test func rfkillWatchExitsWithAReasonWhenTheEventsEnd() throws {
    let machine = try Machine(fakes: ["rfkill": Self.fakeRfkill])
    try machine.append(Self.event(0, type: 2, op: 0, soft: 0))
    let result = machine.run("rfkill-watch", ["bluetooth"], ["FAKE_EVENTS_END=1"])
    #expect(result.status == 1, "\(result)")
    #expect(result.stdout == "on\n", "\(result)")
    #expect(result.stderr == "the rfkill event stream ended\n", "\(result)")
  }

  @Test func rfkillWatchRefusesMisuse() throws {
    let machine = try Machine(fakes: ["rfkill": Self.fakeRfkill])
    let none = machine.run("rfkill-watch", [])
    #expect(none.status == 2)
    #expect(none.stderr.hasPrefix("usage: rfkill-watch TYPE"), "\(none)")
    let radar = machine.run("rfkill-watch", ["radar"])
    #expect(radar.status == 2)
    #expect(radar.stderr.hasPrefix("unknown rfkill type 'radar'"), "\(radar)")
  }

  @Test(.enabled(if: access("/dev/rfkill", F_OK) != 0, "this machine has a /dev/rfkill"))
  func rfkillWatchWithoutRfkillOrItsDeviceSaysSo() throws {
    let machine = try Machine()
    let result = runProcess([
      "/usr/bin/env", "-i", "PATH=\(machine.bin)", Self.script("rfkill-watch"), "wlan",
    ])
    #expect(result.status == 1, "\(result)")
    #expect(result.stderr.hasPrefix("cannot read /dev/rfkill"), "\(result)")
  }

  // MARK: nm-radio

  @Test func nmRadioAppliesReadsBackAndIsIdempotent() throws {
    let machine = try Machine(fakes: ["nmcli": Self.fakeNmcli])
    #expect(machine.run("nm-radio", ["check", "wifi"]).stdout == "on\n")
    #expect(machine.run("nm-radio", ["check", "wwan"]).stdout == "off\n")
    let off = machine.run("nm-radio", ["apply", "wifi"], ["SWITCH_EFFECTIVE=off"])
    #expect(off.status == 0, "\(off)")
    #expect(machine.run("nm-radio", ["check", "wifi"]).stdout == "off\n")
    let again = machine.run("nm-radio", ["apply", "wifi"], ["SWITCH_EFFECTIVE=off"])
    #expect(again.status == 0, "\(again)")
    let on = machine.run("nm-radio", ["apply", "wwan"], ["SWITCH_EFFECTIVE=on"])
    #expect(on.status == 0, "\(on)")
    #expect(machine.calls == "wifi off\nwwan on\n")
  }

  @Test func nmRadioSaysWhenNetworkManagerIsNotRunning() throws {
    let machine = try Machine(fakes: ["nmcli": Self.fakeNmcli])
    for arguments in [["check", "wifi"], ["apply", "wifi"]] {
      let result = machine.run("nm-radio", arguments, ["SWITCH_EFFECTIVE=off", "FAKE_NM_DOWN=1"])
      #expect(result.status == 1, "\(result)")
      #expect(result.stdout.isEmpty)
      #expect(result.stderr == "NetworkManager is not running\n", "\(result)")
    }
    #expect(machine.calls.isEmpty)
  }

  @Test func nmRadioNamesPolkitWhenRefusedAndTheHardwareSwitchWhenStuck() throws {
    let machine = try Machine(fakes: ["nmcli": Self.fakeNmcli])
    let denied = machine.run(
      "nm-radio", ["apply", "wifi"], ["SWITCH_EFFECTIVE=off", "FAKE_NM_DENY=1"])
    #expect(denied.status == 1)
    #expect(
      denied.stderr.hasPrefix(
        "nmcli radio wifi off failed: failed to set Wi-Fi radio: Not authorized to perform this operation (polkit:"
      ), "\(denied)")
    #expect(machine.run("nm-radio", ["check", "wifi"]).stdout == "on\n")
    try machine.set("wifi", "disabled")
    let stuck = machine.run(
      "nm-radio", ["apply", "wifi"], ["SWITCH_EFFECTIVE=on", "FAKE_NM_STUCK=1"])
    #expect(stuck.status == 1)
    #expect(
      stuck.stderr
        == "the Wi-Fi radio is turned off by a hardware switch (NetworkManager: WIFI-HW disabled)\n",
      "\(stuck)")
    // Put back as it was: the set, then the restore.
    #expect(machine.calls == "wifi on\nwifi off\n")
  }

  @Test func nmRadioRefusesMisuse() throws {
    let machine = try Machine(fakes: ["nmcli": Self.fakeNmcli])
    for arguments in [[], ["apply"], ["toggle", "wifi"], ["check", "bluetooth"]] {
      let result = machine.run("nm-radio", arguments)
      #expect(result.status == 2, "\(arguments): \(result)")
      #expect(result.stderr == "usage: nm-radio apply|check|watch wifi|wwan\n", "\(result)")
    }
    let unset = machine.run("nm-radio", ["apply", "wifi"])
    #expect(unset.status == 2)
    #expect(unset.stderr == "SWITCH_EFFECTIVE must be on or off, not ''\n", "\(unset)")
    let noNmcli = try Machine()
    let missing = runProcess([
      "/usr/bin/env", "-i", "PATH=\(noNmcli.bin)", Self.script("nm-radio"), "check", "wifi",
    ])
    #expect(missing.status == 1)
    #expect(missing.stderr == "nmcli is not installed (Debian: apt install network-manager)\n")
    #expect(machine.calls.isEmpty)
  }

  @Test func nmRadioWatchFollowsThePropertyOnTheBus() throws {
    let machine = try Machine(fakes: [
      "nmcli": Self.fakeNmcli, "dbus-monitor": Self.fakeDbusMonitor,
    ])
    let watch = try machine.watch("nm-radio", ["watch", "wifi"])
    #expect(watch.says(["on"]), "\(watch.lines)")
    try machine.set("wifi", "disabled")
    try machine.append(#"   string "WwanEnabled""#)  // not ours: not read
    try machine.append(#"   string "WirelessEnabled""#)
    #expect(watch.says(["on", "off"]), "\(watch.lines)")
    try machine.append(#"   string "WirelessEnabled""#)  // the same state: no line
    try machine.set("wifi", "enabled")
    try machine.append(
      "signal time=2 sender=org.freedesktop.DBus -> destination=(null destination) serial=9 "
        + "path=/org/freedesktop/DBus; interface=org.freedesktop.DBus; member=NameOwnerChanged")
    #expect(watch.says(["on", "off", "on"]), "\(watch.lines)")
  }
}
