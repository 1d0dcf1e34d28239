import Glibc
import SwitchProtocol
import SwitchTestSupport
import Testing

/// Issue 23, rule 19 from the outside: a fake radio that another program
/// changes behind switchd's back; held switches are re-applied, free ones
/// follow, a competitor that does not stop makes the switch invalid.
@Suite struct DriftEndToEndTests {
  static func radio(_ extra: String = "", defaultOn: Bool = false) -> String {
    DaemonFixture.radioSwitch(defaultOn: defaultOn, extra: extra)
  }

  static let heldOff = ["50-corp.conf": "[radio]\nReadOnly=yes\nChecked=off\nReason=Held.\n"]

  /// Starts the daemon and waits until the watch reports the reconciled value.
  static func started(
    _ switches: String, policies: [String: String] = [:], initially: String = "on",
    prepare: (DaemonFixture) throws -> Void = { _ in }
  ) throws -> (DaemonFixture, RPCClient) {
    let daemon = try DaemonFixture.withAppliers(
      switches, policies: policies,
      prepare: {
        try $0.writeFakeRadio(initially: initially)
        try prepare($0)
      })
    let client = try daemon.client()
    let ready = try pollUntil(seconds: 60) {
      try client.result("status")["reconciling"]?.int64Value == 0
        && daemon.observed("radio", client) == .some(false)
    }
    try #require(ready)
    return (daemon, client)
  }

  /// A dependent of the radio whose command records its runs (`hotspot.log`).
  static let hotspot = """

    [hotspot]
    Label=Hotspot
    Default=on
    Requires=radio
    ExecApply=@DIR@/record @DIR@/hotspot.log
    """

  static func history(_ client: RPCClient) throws -> [JSONValue] {
    try client.result("history", #"{"key":"radio"}"#)["entries"]?.arrayValue ?? []
  }

  /// Whether the radio is `invalid` now.
  static func isInvalid(_ client: RPCClient) throws -> Bool? {
    try client.result("get", #"{"key":"radio"}"#)["invalid"]?.boolValue
  }

  static func radioFile(_ daemon: DaemonFixture) -> String {
    ((try? readWholeFile(daemon.directory + "/radio")) ?? "").filter { $0 != "\n" }
  }

  @Test func aHeldSwitchIsReappliedAndItsStateDoesNotChange() throws {
    let (daemon, client) = try Self.started(Self.radio(), policies: Self.heldOff)
    let revision = try client.result("get", #"{"key":"radio"}"#)["revision"]?.int64Value
    try daemon.turnRadio("on")
    #expect(pollUntil(seconds: 60) { daemon.radioApplies().contains("off drift") })
    #expect(pollUntil(seconds: 60) { Self.radioFile(daemon) == "off" })
    #expect(try pollUntil(seconds: 60) { try daemon.observed("radio", client) == .some(false) })
    let after = try client.result("get", #"{"key":"radio"}"#)
    #expect(after["revision"]?.int64Value == revision)
    #expect(after["checked"]?.boolValue == false)
    #expect(after["invalid"]?.boolValue == false)
    // One re-application: switchd's own apply was not taken for another drift.
    #expect(daemon.radioApplies().filter { $0 == "off drift" }.count == 1)
    // status and why show it.
    let report = try client.result("status")["readBack"]?.arrayValue?.first
    #expect(report?["key"]?.stringValue == "radio")
    #expect(report?["reapplied"]?.int64Value == 1)
    #expect(report?["systemHad"]?.stringValue == "on")
    let why = daemon.ctl(["why", "radio"]).stdout
    #expect(why.contains("The system reads it as off."), "\(why)")
    #expect(why.contains("Re-applied once since switchd started; last re-applied at "), "\(why)")
    #expect(why.contains(": the system had turned it on."), "\(why)")
  }

  /// The hold comes with a reload whose apply turns the radio off (as a
  /// policy pushed to a running machine does): drift after it is re-applied
  /// too (it was not while the reload's apply was still counted as running).
  @Test func aSwitchAReloadedPolicyHoldsIsReapplied() throws {
    let daemon = try DaemonFixture.withAppliers(
      Self.radio(defaultOn: true), prepare: { try $0.writeFakeRadio(initially: "on") })
    let client = try daemon.client()
    #expect(try pollUntil(seconds: 60) { try daemon.observed("radio", client) == .some(true) })
    try daemon.writeFile("policy.d/50-corp.conf", Self.heldOff["50-corp.conf"]!)
    _ = try client.result("reload")
    #expect(pollUntil(seconds: 60) { Self.radioFile(daemon) == "off" })
    #expect(try pollUntil(seconds: 60) { try daemon.observed("radio", client) == .some(false) })
    try daemon.turnRadio("on")
    #expect(pollUntil(seconds: 60) { daemon.radioApplies().contains("off drift") })
    #expect(pollUntil(seconds: 60) { Self.radioFile(daemon) == "off" })
    let after = try client.result("get", #"{"key":"radio"}"#)
    #expect(after["checked"]?.boolValue == false)
    #expect(after["readOnly"]?.boolValue == true)
  }

  @Test func aFreeSwitchAdoptsTheSystemsValueOnce() throws {
    let (daemon, client) = try Self.started(Self.radio())
    let before = try Self.history(client).count
    try daemon.turnRadio("on")
    #expect(
      try pollUntil(seconds: 60) {
        try client.result("get", #"{"key":"radio"}"#)["checked"]?.boolValue == true
      })
    let entries = try Self.history(client)
    try #require(entries.count == before + 1)
    #expect(entries[0]["cause"]?.stringValue == "external")
    #expect(entries[0]["actor"]?["source"]?.stringValue == "system")
    #expect(entries[0]["actor"]?["uid"]?.isNull == true)
    // The system already had the value: nothing was applied for it.
    #expect(daemon.radioApplies() == ["off reconcile"])
    // A write afterwards is applied as usual and is not taken for drift.
    _ = try client.result("set", #"{"key":"radio","checked":false}"#)
    #expect(try pollUntil(seconds: 60) { try daemon.observed("radio", client) == .some(false) })
    #expect(try Self.history(client).count == before + 2)
    #expect(daemon.radioApplies() == ["off reconcile", "off set"])
  }

  /// The system changes a switch while a tried change of it waits (rule
  /// 20): nothing is adopted then, and the reading is judged once the
  /// change is kept (a watch prints only changes: no reading comes again).
  @Test func driftDuringATriedChangeIsAdoptedOnceItIsKept() throws {
    let (daemon, client) = try Self.started(Self.radio())
    _ = try client.result(
      "set", #"{"key":"radio","checked":true,"confirmWithin":600,"revertOnDisconnect":false}"#)
    #expect(try pollUntil(seconds: 60) { try daemon.observed("radio", client) == .some(true) })
    try daemon.turnRadio("off")
    #expect(try pollUntil(seconds: 60) { try daemon.observed("radio", client) == .some(false) })
    let during = try client.result("get", #"{"key":"radio"}"#)
    #expect(during["checked"]?.boolValue == true)
    #expect(during["pendingUntil"]?.isNull == false)
    _ = try client.result("confirm", #"{"key":"radio"}"#)
    #expect(
      try pollUntil(seconds: 60) {
        try client.result("get", #"{"key":"radio"}"#)["checked"]?.boolValue == false
      })
    let entries = try Self.history(client)
    #expect(entries.first?["cause"]?.stringValue == "external")
    #expect(entries.dropFirst().first?["cause"]?.stringValue == "confirm")
  }

  @Test func reassertReappliesAFreeSwitch() throws {
    let (daemon, client) = try Self.started(Self.radio("OnDrift=reassert"))
    let before = try Self.history(client).count
    try daemon.turnRadio("on")
    #expect(pollUntil(seconds: 60) { daemon.radioApplies().contains("off drift") })
    #expect(pollUntil(seconds: 60) { Self.radioFile(daemon) == "off" })
    #expect(try Self.history(client).count == before)
  }

  @Test func aFlappingCompetitorMakesTheSwitchInvalidUntilTheSystemAgrees() throws {
    let (daemon, client) = try Self.started(
      Self.radio("DriftLimit=2"), policies: Self.heldOff)
    // Something that keeps turning the radio on.
    let competitor = try Child(
      [
        "/bin/sh", "-c",
        "while :; do echo on > \"$0.c\" && mv \"$0.c\" \"$0\"; sleep 0.05; done",
        daemon.directory + "/radio",
      ], logPath: daemon.directory + "/competitor.log")
    #expect(
      try pollUntil(seconds: 60) { try Self.isInvalid(client) == true })
    let invalid = try client.result("get", #"{"key":"radio"}"#)
    #expect(
      invalid["invalidReason"]?.stringValue
        == "something keeps turning it on: re-applied 2 times in 60 s")
    #expect(daemon.radioApplies().filter { $0 == "off drift" }.count == 2)
    competitor.signal(SIGKILL)
    competitor.wait(seconds: 30)
    try daemon.turnRadio("off")
    #expect(
      try pollUntil(seconds: 60) {
        // SIGKILL reaches the shell, not a `mv` it had started: on a loaded
        // machine that last "on" can land after this "off" (seen under ASan).
        if Self.radioFile(daemon) != "off" { try daemon.turnRadio("off") }
        return try Self.isInvalid(client) == false
      })
    let causes = try Self.history(client).prefix(2).map { $0["cause"]?.stringValue }
    #expect(causes == ["drift", "drift"])
  }

  @Test func aSwitchADependencyDisablesIsReapplied() throws {
    let (daemon, client) = try Self.started(
      """
      [airplane]
      Label=Airplane mode
      Default=on

      """ + Self.radio("Conflicts=airplane", defaultOn: true))
    #expect(
      try client.result("get", #"{"key":"radio"}"#)["disabledBy"]?.stringValue == "dependency")
    try daemon.turnRadio("on")
    #expect(pollUntil(seconds: 60) { daemon.radioApplies().contains("off drift") })
    #expect(pollUntil(seconds: 60) { Self.radioFile(daemon) == "off" })
  }

  @Test func anAdoptedValueMakesItsDependentsFollow() throws {
    let (daemon, client) = try Self.started(
      Self.radio()
        + Self.hotspot,
      prepare: { try $0.writeRecordingApplier() })
    #expect(
      try client.result("get", #"{"key":"hotspot"}"#)["disabledBy"]?.stringValue == "dependency")
    try daemon.turnRadio("on")
    #expect(
      try pollUntil(seconds: 60) {
        try client.result("get", #"{"key":"hotspot"}"#)["disabled"]?.boolValue == false
      })
    let entries = try client.result("history", #"{"limit":2}"#)["entries"]?.arrayValue ?? []
    #expect(entries.map { $0["key"]?.stringValue } == ["hotspot", "radio"])
    #expect(entries.map { $0["cause"]?.stringValue } == ["dependency", "external"])
    #expect(entries.allSatisfy { $0["actor"]?["source"]?.stringValue == "system" })
    // The dependent's command ran, told the cause of the change it follows.
    let runs = daemon.recordedRuns("hotspot.log")
    #expect(runs.last?.environment.contains("SWITCH_CAUSE=external") == true)
    #expect(runs.last?.environment.contains("SWITCH_EFFECTIVE=on") == true)
  }

  @Test func aFailedReapplicationMakesTheSwitchInvalid() throws {
    let (daemon, client) = try Self.started(Self.radio(), policies: Self.heldOff)
    try writeWholeFile(daemon.directory + "/radio.fail", "")
    try daemon.turnRadio("on")
    #expect(
      try pollUntil(seconds: 60) { try Self.isInvalid(client) == true })
    let radio = try client.result("get", #"{"key":"radio"}"#)
    #expect(
      radio["invalidReason"]?.stringValue
        == "re-applying failed after the system had changed it: the radio is jammed")
    let entry = try Self.history(client).first
    #expect(entry?["cause"]?.stringValue == "drift")
    #expect(entry?["actor"]?["source"]?.stringValue == "system")
    // The system agrees again: valid again, cause drift.
    unlink(daemon.directory + "/radio.fail")
    try daemon.turnRadio("off")
    #expect(
      try pollUntil(seconds: 60) { try Self.isInvalid(client) == false })
    #expect(try Self.history(client).first?["cause"]?.stringValue == "drift")
  }

  /// Adopting the system's value fails when a dependent's command fails
  /// (rule 17: nothing changes): the switch becomes invalid, once, and is
  /// not adopted again at every check (each try ran the dependent's
  /// command: ~50 a second, for ever). The system agreeing clears it.
  @Test func anAdoptionADependentRefusesMakesTheSwitchInvalidOnce() throws {
    let daemon = try DaemonFixture.withAppliers(
      DaemonFixture.radioSwitch(
        defaultOn: true, readBack: [DaemonFixture.countingRadioCheck],
        extra: "CheckIntervalSec=0.1")
        + Self.hotspot,
      prepare: {
        try $0.writeFakeRadio(initially: "on")
        try $0.writeRecordingApplier()
        try $0.writeCountingCheck()
      })
    let client = try daemon.client()
    #expect(try pollUntil(seconds: 60) { try daemon.observed("radio", client) == .some(true) })
    try writeWholeFile(daemon.directory + "/fail", "no hotspot today")
    try daemon.turnRadio("off")
    #expect(try pollUntil(seconds: 60) { try Self.isInvalid(client) == true })
    let radio = try client.result("get", #"{"key":"radio"}"#)
    #expect(radio["checked"]?.boolValue == true)
    #expect(
      radio["invalidReason"]?.stringValue?.hasPrefix(
        "adopting the value the system had turned it to failed: ") == true, "\(radio.jsonText)")
    #expect(try Self.history(client).first?["cause"]?.stringValue == "drift")
    // Checks go on; the dependent's command is not run again.
    let runs = daemon.recordedRuns("hotspot.log").count
    let checked = daemon.radioChecks()
    #expect(pollUntil(seconds: 60) { daemon.radioChecks() >= checked + 5 })
    #expect(daemon.recordedRuns("hotspot.log").count == runs)
    // The system agrees again: valid again.
    try daemon.turnRadio("on")
    #expect(try pollUntil(seconds: 60) { try Self.isInvalid(client) == false })
  }

  /// A check that cannot read the system (it prints nonsense) leaves the
  /// value unknown: nothing is adopted from the reading before the apply
  /// (it was: two seconds after `set on`, "turned off outside switchd").
  @Test func aCheckThatCannotReadAdoptsNothing() throws {
    let daemon = try DaemonFixture.withAppliers(
      DaemonFixture.radioSwitch(
        readBack: [DaemonFixture.countingRadioCheck], extra: "CheckIntervalSec=0.1"),
      prepare: {
        try $0.writeFakeRadio(initially: "off")
        try $0.writeCountingCheck()
      })
    let client = try daemon.client()
    #expect(try pollUntil(seconds: 60) { try daemon.observed("radio", client) == .some(false) })
    try writeWholeFile(daemon.directory + "/radio.bad", "")
    #expect(
      try client.result("set", #"{"key":"radio","checked":true}"#)["changed"]?.boolValue == true)
    #expect(try pollUntil(seconds: 60) { try daemon.observed("radio", client) == .some(nil) })
    // 30 checks 0.1 s apart: past the 2 s a watch's silence is waited for.
    let checked = daemon.radioChecks()
    #expect(pollUntil(seconds: 60) { daemon.radioChecks() >= checked + 30 })
    #expect(try client.result("get", #"{"key":"radio"}"#)["checked"]?.boolValue == true)
    #expect(try Self.history(client).map { $0["cause"]?.stringValue } == ["set"])
  }

  /// An apply that succeeds and changes nothing is seen by the check run
  /// after it, with no periodic check at all: that check starts after the
  /// command ended, so it is the system's word, not a reading from before.
  @Test func theCheckAfterAnApplyThatDidNotTakeIsBelieved() throws {
    let daemon = try DaemonFixture.withAppliers(
      DaemonFixture.radioSwitch(readBack: [DaemonFixture.radioCheck]),
      prepare: { try $0.writeFakeRadio(initially: "off") })
    let client = try daemon.client()
    #expect(try pollUntil(seconds: 60) { try daemon.observed("radio", client) == .some(false) })
    try writeWholeFile(daemon.directory + "/radio.stuck", "")
    #expect(
      try client.result("set", #"{"key":"radio","checked":true}"#)["changed"]?.boolValue == true)
    #expect(
      try pollUntil(seconds: 60) {
        try Self.history(client).first?["cause"]?.stringValue == "external"
      })
    #expect(try client.result("get", #"{"key":"radio"}"#)["checked"]?.boolValue == false)
    #expect(try Self.history(client).map { $0["cause"]?.stringValue } == ["external", "set"])
  }

  @Test func aPeriodicCheckCatchesDrift() throws {
    let daemon = try DaemonFixture.withAppliers(
      DaemonFixture.radioSwitch(
        readBack: [DaemonFixture.radioCheck], extra: "CheckIntervalSec=0.1"),
      policies: Self.heldOff, prepare: { try $0.writeFakeRadio(initially: "off") })
    let client = try daemon.client()
    #expect(try pollUntil(seconds: 60) { try daemon.observed("radio", client) == .some(false) })
    try daemon.turnRadio("on")
    #expect(pollUntil(seconds: 60) { daemon.radioApplies().contains("off drift") })
    #expect(pollUntil(seconds: 60) { Self.radioFile(daemon) == "off" })
  }

  @Test func switchdsOwnAppliesAreNeverDriftEvenWithALateWatch() throws {
    // A watch that prints the state on every round, a fifth of a second
    // after reading it: around an apply it says the old value late.
    let (daemon, client) = try Self.started(
      DaemonFixture.radioSwitch(readBack: ["ExecWatch=@DIR@/late-watch @DIR@/radio"]),
      prepare: {
        try $0.writeApplier(
          "late-watch", #"while :; do read state < "$1"; sleep 0.2; echo "$state"; done"#)
      })
    let before = try Self.history(client).count
    for value in [true, false, true, false] {
      _ = try client.result("set", #"{"key":"radio","checked":\#(value)}"#)
      #expect(try pollUntil(seconds: 60) { try daemon.observed("radio", client) == .some(value) })
    }
    // One change per write, nothing adopted, nothing re-applied.
    let entries = try Self.history(client)
    #expect(entries.count == before + 4)
    #expect(entries.prefix(4).allSatisfy { $0["cause"]?.stringValue == "set" })
    #expect(daemon.radioApplies() == ["off reconcile", "on set", "off set", "on set", "off set"])
  }
}
