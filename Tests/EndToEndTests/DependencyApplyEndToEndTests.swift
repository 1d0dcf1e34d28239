import Glibc
import SwitchProtocol
import SwitchTestSupport
import Testing

/// Rules 14 and 17 together: a change that disables or enables dependents
/// runs the apply command of every switch whose effective value changes
/// before anything commits, all or nothing.
@Suite struct DependencyApplyEndToEndTests {
  static let switches = """
    [airplane-mode]
    Label=Airplane mode
    Default=off

    [wifi]
    Label=Wi-Fi
    Default=on
    Conflicts=airplane-mode
    ExecApply=@DIR@/radio @DIR@/wifi.log

    [bluetooth]
    Label=Bluetooth
    Default=on
    Conflicts=airplane-mode
    ExecApply=@DIR@/radio @DIR@/bluetooth.log
    """

  /// Records "EFFECTIVE CAUSE" a line in the log its argument names; fails
  /// while `LOG.fail` exists, with that file's text as its reason.
  static func fixture() throws -> DaemonFixture {
    let daemon = try DaemonFixture.withAppliers(
      switches,
      prepare: {
        try $0.writeApplier(
          "radio",
          """
          echo "$SWITCH_EFFECTIVE $SWITCH_CAUSE" >> "$1"
          if [ -e "$1.fail" ]; then cat "$1.fail" >&2; exit 1; fi
          """)
      })
    let client = try daemon.client()
    #expect(
      try pollUntil(seconds: 60) { try client.result("status")["reconciling"]?.int64Value == 0 })
    return daemon
  }

  static func runs(_ daemon: DaemonFixture, _ log: String) -> [String] {
    let text = (try? readWholeFile(daemon.directory + "/" + log)) ?? ""
    return text.split(separator: "\n").map(String.init)
  }

  @Test func airplaneModeAppliesOffToEachRadioBeforeItCommits() throws {
    let daemon = try Self.fixture()
    let client = try daemon.client()
    #expect(Self.runs(daemon, "wifi.log") == ["on reconcile"])
    let before = try #require(try client.result("status")["revision"]?.int64Value)

    let on = try client.result("set", #"{"key":"airplane-mode","checked":true}"#)
    #expect(on["changed"]?.boolValue == true)
    #expect(Self.runs(daemon, "wifi.log") == ["on reconcile", "off set"])
    #expect(Self.runs(daemon, "bluetooth.log") == ["on reconcile", "off set"])
    // The switch and its two dependents: one revision each.
    #expect(try client.result("status")["revision"]?.int64Value == before + 3)
    let wifi = try client.result("get", keyParam("wifi"))
    #expect(wifi["disabledBy"]?.stringValue == "dependency")
    #expect(wifi["effective"]?.boolValue == false)
    #expect(wifi["invalid"]?.boolValue == false)

    _ = try client.result("set", #"{"key":"airplane-mode","checked":false}"#)
    #expect(Self.runs(daemon, "wifi.log").last == "on set")
    #expect(Self.runs(daemon, "bluetooth.log").last == "on set")
    #expect(try client.result("get", keyParam("wifi"))["effective"]?.boolValue == true)
  }

  @Test func oneRadioThatCannotBeTurnedOffRefusesAirplaneModeAndChangesNothing() throws {
    let daemon = try Self.fixture()
    let client = try daemon.client()
    let watcher = try daemon.client()
    _ = try watcher.result("watch")
    let before = try #require(try client.result("status")["revision"]?.int64Value)
    try writeWholeFile(daemon.directory + "/bluetooth.log.fail", "bluetooth radio is jammed\n")

    let error = try client.error("set", #"{"key":"airplane-mode","checked":true}"#)
    expectErrorObject(error, -32006, "ApplyFailed")
    #expect(error["data"]?["reason"]?.stringValue == "bluetooth radio is jammed")
    // The sentence names the switch whose command failed; `data.key` the one the call named.
    #expect(error["data"]?["key"]?.stringValue == "airplane-mode")
    #expect(
      error["message"]?.stringValue
        == "Applying bluetooth (which this change of airplane-mode changes too) failed,"
        + " nothing changed: bluetooth radio is jammed")
    // Nothing committed: no revision, every switch as it was.
    #expect(try client.result("status")["revision"]?.int64Value == before)
    #expect(try client.result("get", keyParam("airplane-mode"))["checked"]?.boolValue == false)
    for key in ["wifi", "bluetooth"] {
      let radio = try client.result("get", keyParam(key))
      #expect(radio["disabled"]?.boolValue == false)
      #expect(radio["effective"]?.boolValue == true)
    }
    // Whatever ran was put back: Wi-Fi ends on as it started.
    let wifi = Self.runs(daemon, "wifi.log")
    #expect(
      wifi == ["on reconcile"] || wifi == ["on reconcile", "off set", "on set"])

    // No event came for the refused call: the next one is the next change.
    unlink(daemon.directory + "/bluetooth.log.fail")
    _ = try client.result("set", #"{"key":"airplane-mode","checked":true}"#)
    let event = try watcher.nextEvent()
    #expect(event["revision"]?.int64Value == before + 1)
    #expect(event["key"]?.stringValue == "airplane-mode")
  }

  @Test func writesOfADependentWaitBehindTheChangeThatRunsItsCommand() throws {
    let daemon = try Self.fixture()
    let client = try daemon.client()
    // Pipelined: airplane mode on, then Wi-Fi off. The second is decided
    // after the first committed, so Wi-Fi is disabled by then.
    try client.send(
      raw:
        #"{"jsonrpc":"2.0","id":1,"method":"set","params":{"key":"airplane-mode","checked":true}}"#
        + "\n" + #"{"jsonrpc":"2.0","id":2,"method":"set","params":{"key":"wifi","checked":false}}"#
        + "\n")
    let first = try client.readJSON()
    #expect(first["id"]?.int64Value == 1)
    #expect(first["result"]?["changed"]?.boolValue == true)
    let second = try client.readJSON()
    #expect(second["id"]?.int64Value == 2)
    expectErrorObject(second["error"] ?? .null, -32003, "Disabled")
  }

  @Test func aPolicyThatTurnsAirplaneModeOnRunsTheRadiosCommandsFirstThenCommitsAsOne() throws {
    var gate: Gate?
    let daemon = try DaemonFixture.withAppliers(
      """
      [airplane-mode]
      Label=Airplane mode
      Default=off

      [wifi]
      Label=Wi-Fi
      Default=on
      Conflicts=airplane-mode
      ExecApply=@DIR@/gated @DIR@/gate
      """,
      prepare: {
        try $0.writeApplier("gated", Gate.gatedApplier)
        gate = try Gate($0.directory + "/gate")
      })
    let wifiGate = try #require(gate)
    // The start's reconcile of Wi-Fi waits on the gate: let it through.
    try wifiGate.open()
    let client = try daemon.client()
    #expect(
      try pollUntil(seconds: 60) { try client.result("status")["reconciling"]?.int64Value == 0 })
    let watcher = try daemon.client()
    _ = try watcher.result("watch")
    let before = try #require(try client.result("status")["revision"]?.int64Value)

    try daemon.writeFile(
      "policy.d/50-test.conf", "[airplane-mode]\nReadOnly=yes\nChecked=on\nReason=Flying.\n")
    let admin = try daemon.client()
    try admin.send(raw: #"{"jsonrpc":"2.0","id":"reload","method":"reload","params":{}}"# + "\n")
    // Wi-Fi's command runs first; until it ends nothing of the reload is committed.
    #expect(pollUntil(seconds: 60) { wifiGate.runs == 2 })
    #expect(try client.result("get", keyParam("airplane-mode"))["checked"]?.boolValue == false)
    #expect(try client.result("status")["revision"]?.int64Value == before)

    try wifiGate.open()
    let answer = try admin.readJSON()
    #expect(answer["id"]?.stringValue == "reload")
    #expect(answer["result"] != nil)
    let first = try watcher.nextEvent()
    let second = try watcher.nextEvent()
    #expect(first["key"]?.stringValue == "airplane-mode")
    #expect(first["cause"]?.stringValue == "policy")
    #expect(first["revision"]?.int64Value == before + 1)
    #expect(second["key"]?.stringValue == "wifi")
    #expect(second["cause"]?.stringValue == "dependency")
    #expect(second["revision"]?.int64Value == before + 2)
    #expect(second["state"]?["disabledBy"]?.stringValue == "dependency")
    #expect(second["state"]?["invalid"]?.boolValue == false)
  }
}
