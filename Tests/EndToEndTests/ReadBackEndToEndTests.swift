import Glibc
import SwitchProtocol
import SwitchTestSupport
import Testing

/// Issue 23 from the outside: `ExecCheck=` and `ExecWatch=` read a fake
/// radio back, and `observed` shows what they read.
@Suite struct ReadBackEndToEndTests {
  @Test func aWatchShowsTheSystemInObserved() throws {
    let daemon = try DaemonFixture.withAppliers(
      DaemonFixture.radioSwitch(), prepare: { try $0.writeFakeRadio(initially: "on") })
    let client = try daemon.client()
    // The start's reconcile turns it off, and the watch reports it.
    #expect(try pollUntil(seconds: 60) { try daemon.observed("radio", client) == .some(false) })
    #expect(daemon.radioApplies().first == "off reconcile")
    let set = try client.result("set", #"{"key":"radio","checked":true}"#)
    #expect(set["changed"]?.boolValue == true)
    #expect(try pollUntil(seconds: 60) { try daemon.observed("radio", client) == .some(true) })
  }

  @Test func aCheckRunsAfterEachApply() throws {
    let daemon = try DaemonFixture.withAppliers(
      DaemonFixture.radioSwitch(defaultOn: true, readBack: [DaemonFixture.radioCheck]),
      prepare: { try $0.writeFakeRadio(initially: "off") })
    let client = try daemon.client()
    #expect(try pollUntil(seconds: 60) { try daemon.observed("radio", client) == .some(true) })
    _ = try client.result("set", #"{"key":"radio","checked":false}"#)
    #expect(try pollUntil(seconds: 60) { try daemon.observed("radio", client) == .some(false) })
  }

  @Test func aWatchThatDiesIsUnknownUntilItIsStartedAgain() throws {
    let daemon = try DaemonFixture.withAppliers(
      DaemonFixture.radioSwitch(), prepare: { try $0.writeFakeRadio(initially: "off") })
    let client = try daemon.client()
    #expect(try pollUntil(seconds: 60) { try daemon.observed("radio", client) == .some(false) })
    try writeWholeFile(daemon.directory + "/radio.watch-exit", "")
    #expect(try pollUntil(seconds: 60) { try daemon.observed("radio", client) == .some(nil) })
    let problem = try client.result("status")["readBack"]?.arrayValue?.first?["watchProblem"]
    #expect(
      problem?.stringValue?.hasPrefix("the ExecWatch= program of radio ended (exit status 1)")
        == true)
    #expect(daemon.ctl(["why", "radio"]).stdout.contains("Its watch program is not running: "))
    // Restarted after its backoff, it reads the radio again.
    unlink(daemon.directory + "/radio.watch-exit")
    #expect(try pollUntil(seconds: 60) { try daemon.observed("radio", client) == .some(false) })
  }

  @Test func aSwitchThatReadsNothingBackIsNeverObserved() throws {
    let daemon = try DaemonFixture.withAppliers(
      DaemonFixture.radioSwitch(defaultOn: nil, readBack: []), prepare: { try $0.writeFakeRadio() })
    let client = try daemon.client()
    #expect(
      try pollUntil(seconds: 60) { try client.result("status")["reconciling"]?.int64Value == 0 })
    #expect(try daemon.observed("radio", client) == .some(nil))
  }

  @Test func aReloadStopsAndStartsWatches() throws {
    let watched = DaemonFixture.radioSwitch()
    let daemon = try DaemonFixture.withAppliers(
      watched, prepare: { try $0.writeFakeRadio(initially: "off") })
    let client = try daemon.client()
    #expect(try pollUntil(seconds: 60) { try daemon.observed("radio", client) == .some(false) })
    try daemon.writeFile(
      "switches.d/10-test.conf",
      "[radio]\nLabel=Radio\nDefault=off\nExecApply=\(daemon.directory)/radio-apply "
        + "\(daemon.directory)/radio\n")
    _ = try client.result("reload")
    #expect(try pollUntil(seconds: 60) { try daemon.observed("radio", client) == .some(nil) })
    #expect(try client.result("status")["readBack"]?.arrayValue?.isEmpty == true)
    try daemon.writeFile(
      "switches.d/10-test.conf", watched.replacingAll("@DIR@", with: daemon.directory))
    _ = try client.result("reload")
    #expect(try pollUntil(seconds: 60) { try daemon.observed("radio", client) == .some(false) })
    #expect(try client.result("status")["readBack"]?.arrayValue?.count == 1)
  }
}
