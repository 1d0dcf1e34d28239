import Glibc
import SwitchProtocol
import SwitchTestSupport
import Testing

/// Issue 13, continued: a slow command stalls nobody else (rule 16), the
/// start's reconcile does not hold back readiness, reloads that give or
/// take a command, a policy the command cannot apply, and `--check-config`.
@Suite struct ApplyConcurrencyEndToEndTests {
  /// `slow` blocks on the FIFO `gate` until the test lets it go; `fast`
  /// records; `plain` has no command.
  static let gatedSwitches = """
    [slow]
    Label=Slow
    Default=off
    ExecApply=@DIR@/gated @DIR@/gate

    [fast]
    Label=Fast
    Default=off
    ExecApply=@DIR@/record @DIR@/fast.log

    [plain]
    Label=Plain
    Default=off
    """

  static func gatedDaemon() throws -> (DaemonFixture, Gate) {
    var gate: Gate?
    let daemon = try DaemonFixture.withAppliers(
      gatedSwitches,
      prepare: {
        try $0.writeApplier("gated", Gate.gatedApplier)
        try $0.writeRecordingApplier()
        gate = try Gate($0.directory + "/gate")
      })
    return (daemon, try #require(gate))
  }

  @Test func callsAreServedWhileTheStartsReconcileRuns() throws {
    let (daemon, gate) = try Self.gatedDaemon()
    let client = try daemon.client()
    // The reconcile of `slow` waits on the gate, yet switchd serves.
    #expect(pollUntil(seconds: 60) { gate.runs == 1 })
    // `fast` is reconciled soon; `slow` stays.
    #expect(
      try pollUntil(seconds: 60) { try client.result("status")["reconciling"]?.int64Value == 1 })
    #expect(try client.result("get", keyParam("plain"))["checked"]?.boolValue == false)
    #expect(try client.result("toggle", keyParam("plain"))["changed"]?.boolValue == true)
    #expect(daemon.ctl(["status"]).stdout.contains("reconciling: 1"))
    try gate.open()
    #expect(
      try pollUntil(seconds: 60) { try client.result("status")["reconciling"]?.int64Value == 0 })
  }

  @Test func aSlowCommandDelaysNoOtherSwitch() throws {
    let (daemon, gate) = try Self.gatedDaemon()
    try gate.open()  // the start's reconcile
    let slowWriter = try daemon.client()
    #expect(
      try pollUntil(seconds: 60) {
        try slowWriter.result("status")["reconciling"]?.int64Value == 0
      })
    let watcher = try daemon.client()
    _ = try watcher.result("watch")

    // The toggle of `slow` is sent, not awaited: its command waits on the gate.
    try slowWriter.send(
      raw: #"{"jsonrpc":"2.0","id":"slow","method":"toggle","params":{"key":"slow"}}"# + "\n")
    #expect(pollUntil(seconds: 60) { gate.runs == 2 })

    // Meanwhile, other switches are read and written, with and without a command.
    let other = try daemon.client()
    #expect(try other.result("get", keyParam("slow"))["checked"]?.boolValue == false)
    #expect(try other.result("toggle", keyParam("plain"))["changed"]?.boolValue == true)
    #expect(try other.result("toggle", keyParam("fast"))["changed"]?.boolValue == true)
    #expect(
      daemon.recordedRuns("fast.log").last?.environment.contains("SWITCH_EFFECTIVE=on") == true)
    // A second write of `slow` waits behind the first, in order.
    try other.send(
      raw: #"{"jsonrpc":"2.0","id":"again","method":"set","params":{"key":"slow","checked":false}}"#
        + "\n")
    #expect(try watcher.nextEvent()["key"]?.stringValue == "plain")
    #expect(try watcher.nextEvent()["key"]?.stringValue == "fast")

    try gate.open()
    let answer = try slowWriter.readJSON()
    #expect(answer["id"]?.stringValue == "slow")
    #expect(answer["result"]?["changed"]?.boolValue == true)
    #expect(answer["result"]?["switch"]?["checked"]?.boolValue == true)
    let slowEvent = try watcher.nextEvent()
    #expect(slowEvent["key"]?.stringValue == "slow")
    #expect(slowEvent["cause"]?.stringValue == "toggle")
    // Then the second write runs its command (off) and commits after it.
    try gate.open()
    let again = try other.readJSON()
    #expect(again["id"]?.stringValue == "again")
    #expect(again["result"]?["switch"]?["checked"]?.boolValue == false)
    let secondEvent = try watcher.nextEvent()
    #expect(secondEvent["cause"]?.stringValue == "set")
    #expect(secondEvent["revision"]?.int64Value == (slowEvent["revision"]?.int64Value ?? 0) + 1)
  }

  @Test func aReloadWaitingForASlowCommandHoldsBackNoOtherSwitch() throws {
    var gate: Gate?
    let daemon = try DaemonFixture.withAppliers(
      """
      [slow]
      Label=Slow
      ExecApply=@DIR@/gated @DIR@/gate
      ApplyTimeoutSec=3600

      [plain]
      Label=Plain

      [email.marketing]
      Label=Marketing emails
      Scope=user
      """,
      prepare: {
        try $0.writeApplier("gated", Gate.gatedApplier)
        gate = try Gate($0.directory + "/gate")
      })
    let slowGate = try #require(gate)
    // The start's reconcile of `slow` waits on the gate; a reload waits for it.
    #expect(pollUntil(seconds: 60) { slowGate.runs == 1 })
    let admin = try daemon.client()
    try admin.send(raw: #"{"jsonrpc":"2.0","id":"reload","method":"reload","params":{}}"# + "\n")
    let other = try daemon.client()
    let status = try other.result("status")
    #expect(status["lastReload"] == .null && status["reconciling"]?.int64Value == 1)

    // Meanwhile writes of switches without a command, and users' own values, go on.
    #expect(try other.result("toggle", keyParam("plain"))["changed"]?.boolValue == true)
    #expect(try other.result("toggle", keyParam("email.marketing"))["changed"]?.boolValue == true)
    #expect(slowGate.runs == 1)

    try slowGate.open()
    let answer = try admin.readJSON()
    #expect(answer["id"]?.stringValue == "reload")
    #expect(answer["result"]?["switches"]?.int64Value == 3)
  }

  @Test func aReloadThatGivesOrTakesACommandReconcilesOrClearsInvalid() throws {
    let daemon = try DaemonFixture.withAppliers(
      "[wifi]\nLabel=Wi-Fi\nDefault=on\n", prepare: { try $0.writeRecordingApplier() })
    let admin = try daemon.client()
    try daemon.recordedAppliersFail("radio missing")
    let withCommand = "[wifi]\nLabel=Wi-Fi\nDefault=on\nExecApply=\(daemon.directory)/record "
    try daemon.writeFile("switches.d/10-test.conf", withCommand + "\(daemon.directory)/wifi.log\n")
    _ = try admin.result("reload")
    // Answered once the new command has run.
    #expect(daemon.recordedRuns("wifi.log").count == 1)
    let wifi = try admin.result("get", keyParam("wifi"))
    #expect(wifi["invalid"]?.boolValue == true)
    #expect(wifi["invalidReason"]?.stringValue == "radio missing")
    // A reload that keeps the same command runs nothing, also with only a new timeout.
    _ = try admin.result("reload")
    #expect(daemon.recordedRuns("wifi.log").count == 1)
    try daemon.writeFile(
      "switches.d/10-test.conf",
      withCommand + "\(daemon.directory)/wifi.log\nApplyTimeoutSec=7\n")
    _ = try admin.result("reload")
    #expect(daemon.recordedRuns("wifi.log").count == 1)

    // Removing the command clears invalid, with its own revision.
    try daemon.writeFile("switches.d/10-test.conf", "[wifi]\nLabel=Wi-Fi\nDefault=on\n")
    _ = try admin.result("reload")
    let cleared = try admin.result("get", keyParam("wifi"))
    #expect(cleared["invalid"]?.boolValue == false)
    let entry = try admin.result("history", #"{"key":"wifi","limit":1}"#)["entries"]?
      .arrayValue?.first
    #expect(entry?["cause"]?.stringValue == "reconcile")
    #expect(
      entry?["fields"]?.arrayValue?.compactMap(\.stringValue) == ["invalid", "invalidReason"])
  }

  @Test func aPolicyTheCommandCannotApplyHoldsAndMarksTheSwitchInvalidInOneChange() throws {
    let daemon = try DaemonFixture.withAppliers(
      "[wifi]\nLabel=Wi-Fi\nDefault=on\nExecApply=@DIR@/record @DIR@/wifi.log\n",
      prepare: { try $0.writeRecordingApplier() })
    let admin = try daemon.client()
    #expect(
      try pollUntil(seconds: 60) { try admin.result("status")["reconciling"]?.int64Value == 0 })
    let before = try admin.result("status")["revision"]?.int64Value ?? 0
    try daemon.recordedAppliersFail("cannot turn the radio off")
    try daemon.writeFile(
      "policy.d/50-corp.conf", "[wifi]\nReadOnly=yes\nChecked=off\nReason=Radios off.\n")
    _ = try admin.result("reload")
    let wifi = try admin.result("get", keyParam("wifi"))
    #expect(wifi["checked"]?.boolValue == false)
    #expect(wifi["heldBy"]?.stringValue == "policy")
    #expect(wifi["invalid"]?.boolValue == true)
    #expect(wifi["invalidReason"]?.stringValue == "cannot turn the radio off")
    #expect(wifi["revision"]?.int64Value == before + 1)
    let entry = try admin.result("history", #"{"key":"wifi","limit":1}"#)["entries"]?
      .arrayValue?.first
    #expect(entry?["cause"]?.stringValue == "policy")
    #expect(
      entry?["fields"]?.arrayValue?.compactMap(\.stringValue) == [
        "checked", "readOnly", "readOnlyReason", "heldBy", "invalid", "invalidReason",
      ])
    #expect(
      daemon.recordedRuns("wifi.log").last?.environment
        == applyEnvironment(
          key: "wifi", effective: false, checked: false, disabled: false, cause: "policy"))
  }

  @Test func checkConfigRefusesBadCommandsWithFileAndLine() throws {
    let daemon = try DaemonFixture(
      switches: """
        [a]
        Label=A
        ExecApply=bin/relative on

        [b]
        Label=B
        ExecApply=

        [c]
        Label=C
        Scope=user
        ExecApply=/usr/bin/true

        [d]
        Label=D
        ExecApply=/usr/bin/true "unclosed
        ApplyTimeoutSec=0
        """, start: false)
    let check = runProcess([Products.path("switchd"), "--check-config", daemon.configDirectory])
    #expect(check.status == 1)
    let output = check.stdout + check.stderr
    for expected in [
      "switches.d/10-test.conf:3: error: ExecApply=bin/relative on: the program bin/relative is not an "
        + "absolute path",
      "switches.d/10-test.conf:7: error: ExecApply= is empty",
      "switches.d/10-test.conf:12: error: ExecApply= on user-scope switch c",
      "switches.d/10-test.conf:16: error: ExecApply=/usr/bin/true \"unclosed has an unclosed double quote",
      "switches.d/10-test.conf:17: error: ApplyTimeoutSec=0 is not a positive number",
    ] {
      #expect(output.contains(expected), "\(expected) in \(output)")
    }
  }
}

/// Rule 20 with an apply command: a maker whose connection closes while its
/// tried write still waits for the command has left all the same; the
/// change is reverted (through the command again) once it is committed.
/// (The loop tells the writer of a closed connection behind its writes.)
@Suite struct TriedWriteParkedEndToEndTests {
  @Test func aMakerThatLeavesWhileItsTriedWriteWaitsForItsCommandIsReverted() throws {
    let (daemon, gate) = try ApplyConcurrencyEndToEndTests.gatedDaemon()
    try gate.open()  // the start's reconcile
    let watcher = try daemon.client()
    #expect(
      try pollUntil(seconds: 60) { try watcher.result("status")["reconciling"]?.int64Value == 0 })
    _ = try watcher.result("watch", #"{"keys":["slow"]}"#)
    let maker = try daemon.client()
    try maker.send(
      raw:
        #"{"jsonrpc":"2.0","id":1,"method":"toggle","params":{"key":"slow","confirmWithin":3600}}"#
        + "\n")
    #expect(pollUntil(seconds: 60) { gate.runs == 2 })
    // Gone while its write waits: the loop ends the connection once that
    // write is answered, and the writer hears of it only then (behind it).
    maker.close()
    try gate.open()
    let tried = try watcher.nextEvent()
    #expect(tried["cause"]?.stringValue == "toggle")
    #expect(tried["state"]?["pendingUntil"]?.isNull == false)
    // The revert runs the command too.
    #expect(pollUntil(seconds: 60) { gate.runs == 3 })
    try gate.open()
    let revert = try watcher.nextEvent()
    #expect(revert["cause"]?.stringValue == "revert")
    #expect(revert["state"]?["checked"]?.boolValue == false)
    #expect(revert["state"]?["pendingUntil"]?.isNull == true)
  }
}
