import Glibc
import SwitchProtocol
import SwitchTestSupport
import Testing

/// Issue 13 from the outside: apply commands run before a change commits,
/// with the documented environment and no shell; failures, timeouts and
/// floods of output; reconcile at start and `invalid`; the `apply` method.
@Suite struct ApplyEndToEndTests {
  /// wifi and bluetooth record their runs; `plain` has no command.
  static let recordedSwitches = """
    [wifi]
    Label=Wi-Fi
    Default=on
    ExecApply=@DIR@/record @DIR@/wifi.log

    [bluetooth]
    Label=Bluetooth
    Default=off
    ExecApply=@DIR@/record @DIR@/bluetooth.log

    [plain]
    Label=Plain
    Default=off
    """

  @Test func commandsRunWithExactlyTheDocumentedEnvironmentAndNoShell() throws {
    let daemon = try DaemonFixture.withAppliers(
      """
      [wifi]
      Label=Wi-Fi
      Default=on
      ExecApply=@DIR@/record @DIR@/wifi.log $HOME "a;b" 'c' "two words" %n \\x ""
      """,
      prepare: { try $0.writeRecordingApplier() })
    let client = try daemon.client()
    // The start's reconcile ran it (calls are served before it ends).
    #expect(
      try pollUntil(seconds: 60) { try client.result("status")["reconciling"]?.int64Value == 0 })
    let set = try client.result("set", #"{"key":"wifi","checked":false}"#)
    #expect(set["changed"]?.boolValue == true)
    let runs = daemon.recordedRuns("wifi.log")
    try #require(runs.count == 2)
    // Every argument reaches the program as written: no expansion, no word
    // splitting but the documented one, quotes grouping.
    #expect(runs[0].arguments == " [$HOME] [a;b] ['c'] [two words] [%n] [\\x] []")
    #expect(
      runs[0].environment
        == applyEnvironment(
          key: "wifi", effective: true, checked: true, disabled: false, cause: "reconcile"))
    #expect(
      runs[1].environment
        == applyEnvironment(
          key: "wifi", effective: false, checked: false, disabled: false, cause: "set"))
  }

  @Test func aChangeOfTheEffectiveValueRunsTheCommandAndNothingElseDoes() throws {
    let daemon = try DaemonFixture.withAppliers(
      Self.recordedSwitches, prepare: { try $0.writeRecordingApplier() })
    let client = try daemon.client()
    #expect(
      try pollUntil(seconds: 60) { try client.result("status")["reconciling"]?.int64Value == 0 })
    func runs() -> Int {
      daemon.recordedRuns("wifi.log").count + daemon.recordedRuns("bluetooth.log").count
    }
    #expect(runs() == 2)  // wifi and bluetooth at start
    func lastRun() -> [String] { daemon.recordedRuns("wifi.log").last?.environment ?? [] }

    // A switch without a command, and a write that changes nothing: no run.
    _ = try client.result("toggle", keyParam("plain"))
    _ = try client.result("set", #"{"key":"wifi","checked":true}"#)
    // A lock that keeps the value changes the State, not the effective value.
    _ = try client.result("lock", #"{"key":"wifi","reason":"Held."}"#)
    _ = try client.result("unlock", keyParam("wifi"))
    #expect(runs() == 2)

    // Disabling an "on" switch applies off; enabling applies the stored value.
    _ = try client.result("disable", keyParam("wifi"))
    #expect(
      lastRun()
        == applyEnvironment(
          key: "wifi", effective: false, checked: true, disabled: true, cause: "disable"))
    _ = try client.result("enable", keyParam("wifi"))
    #expect(
      lastRun()
        == applyEnvironment(
          key: "wifi", effective: true, checked: true, disabled: false, cause: "enable"))
    // Disabling an "off" switch leaves it off: no run.
    _ = try client.result("disable", keyParam("bluetooth"))
    #expect(runs() == 4)
  }

  @Test func aFailedCommandRefusesTheCallWithItsReasonAndChangesNothing() throws {
    let daemon = try DaemonFixture.withAppliers(
      Self.recordedSwitches, prepare: { try $0.writeRecordingApplier() })
    let client = try daemon.client()
    #expect(
      try pollUntil(seconds: 60) { try client.result("status")["reconciling"]?.int64Value == 0 })
    let watcher = try daemon.client()
    _ = try watcher.result("watch")
    let before = try client.result("status")["revision"]?.int64Value

    try daemon.recordedAppliersFail("\n   \nrfkill: radio is jammed\nmore detail\n")
    let error = try client.error("toggle", keyParam("wifi"))
    expectErrorObject(error, -32006, "ApplyFailed")
    #expect(error["data"]?["reason"]?.stringValue == "rfkill: radio is jammed")
    #expect(error["data"]?["key"]?.stringValue == "wifi")
    #expect(try client.result("get", keyParam("wifi"))["checked"]?.boolValue == true)
    #expect(try client.result("status")["revision"]?.int64Value == before)
    // switchctl: exit status 1, the reason on standard error.
    let ctl = daemon.ctl(["off", "wifi"])
    #expect(ctl.status == 1)
    #expect(ctl.stderr.contains("rfkill: radio is jammed"))

    // Nothing on standard error: the exit status is the reason.
    try daemon.recordedAppliersFail("")
    let silent = try client.error("toggle", keyParam("wifi"))
    #expect(silent["data"]?["reason"]?.stringValue == "exit status 3")

    // No event was sent for any of it: the next one is the next change.
    try daemon.recordedAppliersFail(nil)
    _ = try client.result("toggle", keyParam("plain"))
    let event = try watcher.nextEvent()
    #expect(event["key"]?.stringValue == "plain")
    #expect(event["revision"]?.int64Value == (before ?? 0) + 1)
  }

  @Test func aProgramThatCannotStartFailsWithWhy() throws {
    let daemon = try DaemonFixture.withAppliers(
      "[ghost]\nLabel=Ghost\nExecApply=@DIR@/missing-applier\n")
    let client = try daemon.client()
    #expect(
      try pollUntil(seconds: 60) { try client.result("status")["reconciling"]?.int64Value == 0 })
    let ghost = try client.result("get", keyParam("ghost"))
    #expect(ghost["invalid"]?.boolValue == true)
    #expect(ghost["invalidReason"]?.stringValue?.contains("No such file or directory") == true)
    let error = try client.error("set", #"{"key":"ghost","checked":true}"#)
    expectErrorObject(error, -32006, "ApplyFailed")
    #expect(error["data"]?["reason"]?.stringValue == ghost["invalidReason"]?.stringValue)
  }

  @Test func aTimeoutKillsTheWholeProcessGroup() throws {
    let daemon = try DaemonFixture.withAppliers(
      """
      [slow]
      Label=Slow
      Default=off
      ExecApply=@DIR@/hang @DIR@
      ApplyTimeoutSec=2.5
      """,
      prepare: {
        // Reconcile passes; a write starts a child that would outlive it.
        // The timeout leaves a loaded machine time to write the child's pid.
        try $0.writeApplier(
          "hang",
          """
          [ "$SWITCH_CAUSE" = reconcile ] && exit 0
          sleep 1000 &
          echo $! > "$1/child"
          wait
          """)
      })
    let client = try daemon.client()
    #expect(
      try pollUntil(seconds: 60) { try client.result("status")["reconciling"]?.int64Value == 0 })
    let error = try client.error("toggle", keyParam("slow"))
    expectErrorObject(error, -32006, "ApplyFailed")
    #expect(error["data"]?["reason"]?.stringValue == "timed out after 2.5s")
    #expect(try client.result("get", keyParam("slow"))["checked"]?.boolValue == false)
    let child = Int32(
      try readWholeFile(daemon.directory + "/child").split(separator: "\n").first ?? "")
    let pid = try #require(child)
    #expect(pollUntil(seconds: 30) { processIsGone(pid) })
  }

  @Test func whatACommandLeavesInItsGroupIsKilledAndItsFloodIsBounded() throws {
    let daemon = try DaemonFixture.withAppliers(
      """
      [noisy]
      Label=Noisy
      Default=off
      ExecApply=@DIR@/noisy @DIR@
      """,
      prepare: {
        try $0.writeApplier(
          "noisy",
          """
          [ "$SWITCH_CAUSE" = reconcile ] && exit 0
          sleep 1000 </dev/null >/dev/null 2>&1 &
          echo $! > "$1/child"
          echo "the first line" >&2
          head -c 50000000 /dev/zero | tr '\\0' x >&2
          head -c 50000000 /dev/zero
          exit 1
          """)
      })
    let client = try daemon.client()
    #expect(
      try pollUntil(seconds: 60) { try client.result("status")["reconciling"]?.int64Value == 0 })
    let error = try client.error("toggle", keyParam("noisy"))
    #expect(error["data"]?["reason"]?.stringValue == "the first line")
    let pid = try #require(
      Int32(try readWholeFile(daemon.directory + "/child").split(separator: "\n").first ?? ""))
    #expect(pollUntil(seconds: 30) { processIsGone(pid) })
    // The daemon is well and serves on.
    #expect(try client.result("get", keyParam("noisy"))["checked"]?.boolValue == false)
  }

  @Test func aFailedReconcileMarksTheSwitchInvalidAndApplyClearsIt() throws {
    let daemon = try DaemonFixture.withAppliers(
      Self.recordedSwitches,
      prepare: {
        try $0.writeRecordingApplier()
        try $0.recordedAppliersFail("no radio here")
      })
    let client = try daemon.client()
    #expect(
      try pollUntil(seconds: 60) { try client.result("status")["reconciling"]?.int64Value == 0 })
    let wifi = try client.result("get", keyParam("wifi"))
    #expect(wifi["invalid"]?.boolValue == true)
    #expect(wifi["invalidReason"]?.stringValue == "no radio here")
    #expect(wifi["checked"]?.boolValue == true)  // the value is kept
    let history = try client.result("history", #"{"key":"wifi"}"#)["entries"]
    let entry = try #require(history?.arrayValue?.first)
    #expect(entry["cause"]?.stringValue == "reconcile")
    #expect(entry["fields"]?.arrayValue?.compactMap(\.stringValue) == ["invalid", "invalidReason"])
    #expect(
      entry["actor"]?.jsonText == #"{"uid":null,"gid":null,"pid":null,"source":"reconcile"}"#)
    #expect(entry["state"]?["invalidReason"]?.stringValue == "no radio here")
    #expect(entry["previous"]?["invalid"]?.boolValue == false)

    // switchctl shows it.
    let get = daemon.ctl(["get", "wifi"])
    #expect(get.stdout.contains("invalid") && get.stdout.contains("no radio here"))
    #expect(daemon.ctl(["list"]).stdout.contains("no radio here"))
    #expect(daemon.ctl(["why", "wifi"]).stdout.contains("no radio here"))

    // A failed retry changes nothing.
    let revision = try client.result("status")["revision"]?.int64Value
    let retry = try client.error("apply", keyParam("wifi"))
    expectErrorObject(retry, -32006, "ApplyFailed")
    #expect(try client.result("status")["revision"]?.int64Value == revision)
    let ctlRetry = daemon.ctl(["apply", "wifi"])
    #expect(ctlRetry.status == 1 && ctlRetry.stderr.contains("no radio here"))

    // A successful one clears it, with cause apply, and runs the stored value.
    try daemon.recordedAppliersFail(nil)
    let applied = try client.result("apply", keyParam("wifi"))
    #expect(applied["changed"]?.boolValue == true)
    #expect(applied["switch"]?["invalid"]?.boolValue == false)
    #expect(applied["switch"]?["invalidReason"]?.isNull == true)
    #expect(
      daemon.recordedRuns("wifi.log").last?.environment
        == applyEnvironment(
          key: "wifi", effective: true, checked: true, disabled: false, cause: "apply"))
    let cleared = try client.result("history", #"{"key":"wifi","limit":1}"#)["entries"]?.arrayValue?
      .first
    #expect(cleared?["cause"]?.stringValue == "apply")
    #expect(cleared?["revision"]?.int64Value == (revision ?? 0) + 1)
    // Again: it runs, but nothing changes.
    #expect(try client.result("apply", keyParam("wifi"))["changed"]?.boolValue == false)
    #expect(daemon.ctl(["apply", "wifi"]).status == 0)

    // apply works on a disabled switch (applying off), and changes no value.
    _ = try client.result("disable", keyParam("bluetooth"))
    let bluetooth = try client.result("apply", keyParam("bluetooth"))["switch"]
    #expect(bluetooth?["checked"]?.boolValue == false)
    #expect(bluetooth?["disabled"]?.boolValue == true)
    #expect(bluetooth?["invalid"]?.boolValue == false)
    #expect(
      daemon.recordedRuns("bluetooth.log").last?.environment
        == applyEnvironment(
          key: "bluetooth", effective: false, checked: false, disabled: true, cause: "apply"))
    // Not for a switch without a command, nor an unknown one.
    expectErrorObject(try client.error("apply", keyParam("plain")), -32602, "InvalidParams")
    expectErrorObject(try client.error("apply", keyParam("nope")), -32001, "UnknownSwitch")
  }

  /// A stop while a command runs waits for it, and says so in the log
  /// (a slow stop was unexplained, the apply audit).
  @Test func aStopThatWaitsForACommandSaysWhich() throws {
    var gate = ""
    let daemon = try DaemonFixture.withAppliers(
      "[gated]\nLabel=Gated\nExecApply=/bin/cat @DIR@/gate\nApplyTimeoutSec=3600\n",
      prepare: {
        gate = $0.directory + "/gate"
        guard mkfifo(gate, 0o600) == 0 else { throw FixtureError("mkfifo failed") }
      })
    // The start's reconcile waits at the gate.
    #expect(try daemon.client().result("status")["reconciling"]?.int64Value == 1)
    daemon.signal(SIGTERM)
    let said = "stopping once the apply commands under way end (gated)"
    #expect(pollUntil(seconds: 30) { daemon.log.contains(said) }, "\(daemon.log)")
    // Opened and closed for writing: the command's input ends, and so does the stop.
    let opened = pollUntil(seconds: 30) {
      let fd = open(gate, O_WRONLY | O_NONBLOCK | O_CLOEXEC)
      if fd >= 0 { close(fd) }
      return fd >= 0
    }
    #expect(opened)
    #expect(daemon.stop() == 0)
  }

  @Test func reconcileRunsAgainAtEveryStartAndASuccessfulWriteClearsInvalid() throws {
    let daemon = try DaemonFixture.withAppliers(
      Self.recordedSwitches, prepare: { try $0.writeRecordingApplier() })
    var client = try daemon.client()
    #expect(
      try pollUntil(seconds: 60) { try client.result("status")["reconciling"]?.int64Value == 0 })
    _ = try client.result("set", #"{"key":"bluetooth","checked":true}"#)
    daemon.stop()
    try daemon.recordedAppliersFail("adapter missing")
    try daemon.start()
    client = try daemon.client()
    #expect(
      try pollUntil(seconds: 60) { try client.result("status")["reconciling"]?.int64Value == 0 })
    // The stored value is what the start applied.
    #expect(
      daemon.recordedRuns("bluetooth.log").last?.environment
        == applyEnvironment(
          key: "bluetooth", effective: true, checked: true, disabled: false, cause: "reconcile"))
    #expect(try client.result("get", keyParam("bluetooth"))["invalid"]?.boolValue == true)
    try daemon.recordedAppliersFail(nil)
    let off = try client.result("set", #"{"key":"bluetooth","checked":false}"#)
    #expect(off["switch"]?["invalid"]?.boolValue == false)
    #expect(off["switch"]?["checked"]?.boolValue == false)
  }
}
