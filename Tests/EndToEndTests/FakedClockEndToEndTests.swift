import Glibc
import SwitchProtocol
import SwitchTestSupport
import Testing

/// The wall clock moved under a running daemon (issue 24 item 7), with
/// Debian's `faketime`: libfaketime, preloaded, reads the clock's offset
/// from a file on every call, so the test moves switchd's clock and no one
/// else's. Forward past a deadline carries it out at once; back delays it;
/// a tried change's window (the boot clock) moves with neither; a scheduled
/// hold starts and ends at local hours across a daylight-saving change in
/// `TZ=Europe/Berlin`.
@Suite(
  .enabled(if: FakedClock.library != nil, "needs libfaketime (Debian: apt install faketime)"))
struct FakedClockEndToEndTests {
  @Test func movingTheClockPastADeadlineEndsItAtOnceAndNotTheTriedChange() throws {
    let daemon = try DaemonFixture(start: false)
    let clock = try FakedClock(daemon)
    try clock.launch()
    let client = try daemon.client()
    _ = try client.result("watch", #"{"keys":["wifi","bluetooth"]}"#)
    _ = try client.result("set", #"{"key":"wifi","checked":false,"for":3600}"#)
    #expect(try client.nextEvent()["revision"]?.int64Value == 1)
    _ = try client.result(
      "toggle", #"{"key":"bluetooth","confirmWithin":600,"revertOnDisconnect":false}"#)
    #expect(try client.nextEvent()["revision"]?.int64Value == 2)

    try clock.set(offsetSeconds: 2 * 3600)
    let expiry = try client.nextEvent()
    #expect(expiry["key"]?.stringValue == "wifi")
    #expect(expiry["revision"]?.int64Value == 3)
    #expect(expiry["cause"]?.stringValue == "expiry")
    #expect(expiry["state"]?["checked"]?.boolValue == true)
    // The tried change's window is on the boot clock, which no clock setting moves.
    let bluetooth = try client.result("get", #"{"key":"bluetooth"}"#)
    #expect(bluetooth["pendingUntil"]?.isNull == false)
    #expect(try client.result("status")["revision"]?.int64Value == 3)
  }

  @Test func settingTheClockBackDelaysADeadline() throws {
    let daemon = try DaemonFixture(start: false)
    let clock = try FakedClock(daemon)
    try clock.launch()
    let client = try daemon.client()
    _ = try client.result("watch", #"{"keys":["wifi","bluetooth"]}"#)
    _ = try client.result("set", #"{"key":"wifi","checked":false,"for":2}"#)
    #expect(try client.nextEvent()["revision"]?.int64Value == 1)
    try clock.set(offsetSeconds: -3600)
    // A tried change that reverts 3 s from now on the boot clock: by then
    // wifi's 2 s would have passed, had the clock not been set back.
    _ = try client.result(
      "toggle", #"{"key":"bluetooth","confirmWithin":3,"revertOnDisconnect":false}"#)
    #expect(try client.nextEvent()["revision"]?.int64Value == 2)
    let revert = try client.nextEvent()
    #expect(revert["key"]?.stringValue == "bluetooth")
    #expect(revert["cause"]?.stringValue == "revert")
    #expect(revert["revision"]?.int64Value == 3)
    let wifi = try client.result("get", #"{"key":"wifi"}"#)
    #expect(wifi["checked"]?.boolValue == false)
    #expect(wifi["expiresAt"]?.isNull == false)

    // The clock back where it was: wifi's deadline has passed.
    try clock.set(offsetSeconds: 0)
    let expiry = try client.nextEvent()
    #expect(expiry["key"]?.stringValue == "wifi")
    #expect(expiry["cause"]?.stringValue == "expiry")
    #expect(expiry["revision"]?.int64Value == 4)
  }

  /// libfaketime preloaded without its wrapper calls setenv in its
  /// constructor, which leaves Swift no `CommandLine.arguments`: both
  /// programs read /proc/self/cmdline then (`processArguments`), or switchd
  /// would serve /etc/switchd and switchctl say no command was given.
  @Test func aBarePreloadOfLibfaketimeKeepsTheArguments() throws {
    let library = try #require(FakedClock.library, "libfaketime.so.1 not found")
    let preload = ["/usr/bin/env", "FAKETIME=+0", "LD_PRELOAD=\(library)", FakedClock.asanOptions]
    let ctl = runProcess(preload + [Products.path("switchctl"), "--version"])
    #expect(ctl.stdout.hasPrefix("switchctl "), "\(ctl)")
    let daemon = try DaemonFixture(start: false)
    let check = runProcess(
      preload + [Products.path("switchd"), "--check-config", daemon.configDirectory])
    #expect(check.status == 0, "\(check)")
    #expect(check.stdout.contains(": ok"), "\(check)")
  }

  /// 2027-03-28, a Sunday: at 01:00 UTC Berlin goes from 02:00 CET to 03:00
  /// CEST. A window of 03:00–04:00 local starts at 01:00 UTC (not 02:00, as
  /// an hour of +1 would have it) and ends at 02:00 UTC.
  @Test func aScheduledHoldFollowsLocalHoursAcrossADaylightSavingChange() throws {
    let daemon = try DaemonFixture(
      policies: [
        "50-night.conf":
          "[bluetooth]\nReadOnly=yes\nChecked=off\nReason=Night\nSchedule=Sun 03:00-04:00\n"
      ], start: false)
    let switchToSummerTime: Int = 1_806_195_600  // 2027-03-28T01:00:00Z
    let clock = try FakedClock(daemon)
    // Started at 00:00 local that Sunday, outside the window whenever the
    // test runs: started on the real clock, it failed when run on a Sunday
    // between 03:00 and 04:00 in Berlin (the hold was already on).
    try clock.set(to: switchToSummerTime - 2 * 3600)
    try clock.launch(zone: "Europe/Berlin")
    let client = try daemon.client()
    let watch = try client.result("watch", #"{"keys":["bluetooth"]}"#)
    let before = try #require(watch["switches"]?.arrayValue?.first)
    #expect(before["readOnly"]?.boolValue == false)

    try clock.set(to: switchToSummerTime - 3)
    let held = try client.nextEvent()
    #expect(held["cause"]?.stringValue == "policy")
    #expect(held["state"]?["readOnly"]?.boolValue == true)
    #expect(held["state"]?["checked"]?.boolValue == false)
    let heldAt = try #require(held["time"]?.stringValue)
    #expect(heldAt.hasPrefix("2027-03-28T01:00:0"), "\(heldAt)")
    // The hold shows its end: 04:00 CEST.
    #expect(held["state"]?["readOnlyUntil"]?.stringValue == "2027-03-28T02:00:00.000Z")

    try clock.set(to: switchToSummerTime + 3600 - 3)
    let lifted = try client.nextEvent()
    #expect(lifted["cause"]?.stringValue == "policy")
    #expect(lifted["state"]?["readOnly"]?.boolValue == false)
    let liftedAt = try #require(lifted["time"]?.stringValue)
    #expect(liftedAt.hasPrefix("2027-03-28T02:00:0"), "\(liftedAt)")
  }
}

/// A wall clock of switchd's own: libfaketime, preloaded into switchd
/// alone, reads the offset from `file` on every call (FAKETIME_NO_CACHE).
/// Preloaded bare, not through the `faketime` wrapper: the wrapper forks
/// and waits, so killing it left switchd running on; bare, libfaketime calls
/// setenv in its constructor, and switchd reads its arguments from
/// /proc/self/cmdline (`processArguments`).
struct FakedClock {
  /// ASan's runtime checks that it comes first; libfaketime is preloaded before it.
  static var asanOptions: String {
    let given = getenv("ASAN_OPTIONS").map { String(cString: $0) + ":" } ?? ""
    return "ASAN_OPTIONS=\(given)verify_asan_link_order=0"
  }

  /// The library itself, in Debian's multiarch directory.
  static let library: String? = {
    guard let lib = opendir("/usr/lib") else { return nil }
    defer { closedir(lib) }
    while let entry = readdir(lib) {
      let name = withUnsafeBytes(of: entry.pointee.d_name) {
        String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self)
      }
      let path = "/usr/lib/\(name)/faketime/libfaketime.so.1"
      if !name.hasPrefix("."), access(path, R_OK) == 0 { return path }
    }
    return nil
  }()

  let daemon: DaemonFixture
  var file: String { daemon.directory + "/clock" }

  init(_ daemon: DaemonFixture) throws {
    self.daemon = daemon
    try set(offsetSeconds: 0)
  }

  /// The daemon's clock is `seconds` ahead of the real one (behind when negative).
  func set(offsetSeconds seconds: Int) throws {
    try writeWholeFile(file + ".new", (seconds < 0 ? "\(seconds)" : "+\(seconds)") + "\n")
    guard rename(file + ".new", file) == 0 else { throw FixtureError("rename \(file) failed") }
  }

  /// The daemon's clock reads `epochSeconds` now, and runs on from there.
  func set(to epochSeconds: Int) throws {
    try set(offsetSeconds: epochSeconds - Int(time(nil)))
  }

  func launch(zone: String = "UTC") throws {
    // `env` execs switchd: the child the fixture stops is switchd itself.
    try daemon.launch(through: [
      "/usr/bin/env", "-u", "FAKETIME", "LD_PRELOAD=\(FakedClock.library!)",
      "FAKETIME_TIMESTAMP_FILE=\(file)", "FAKETIME_NO_CACHE=1", "TZ=\(zone)",
      FakedClock.asanOptions,
    ])
    try daemon.waitUntilServing()
  }
}
