import Glibc
import SwitchProtocol
import SwitchSystem
import SwitchTestSupport
import Testing

@testable import SwitchDaemon

/// Apply commands when they go wrong (the apply audit): an undo that fails
/// too, and slow commands beside a quick one.
@Suite struct ApplyFaultTests {
  /// Turning airplane mode on runs its command, then Bluetooth's (which
  /// conflicts with it). Bluetooth's fails, and so does the undo of
  /// airplane mode's: the write is refused ("nothing changed"), but the
  /// system may hold airplane mode on. Its command runs again for the
  /// stored value, and failing, marks it invalid (rule 15), where nothing
  /// had said the system disagrees.
  @Test func anUndoThatFailsIsAppliedAgainAndMarksTheSwitchInvalid() throws {
    var directory = ""
    let harness = try LoopHarness(daemonConf: "[Daemon]\nAdminGroup=\nLogLevel=error\n") {
      directory = $0
      let applier = $0 + "/apply"
      try writeWholeFile(
        applier,
        """
        #!/bin/sh
        echo "$SWITCH_KEY $SWITCH_EFFECTIVE $SWITCH_CAUSE" >> \($0)/apply.log
        if [ -e "\($0)/fail-$SWITCH_KEY-$SWITCH_EFFECTIVE" ]; then echo stuck >&2; exit 1; fi

        """)
      chmod(applier, 0o755)
      return "[airplane]\nLabel=Airplane mode\nDefault=off\nExecApply=\(applier)\n\n"
        + "[bt]\nLabel=Bluetooth\nDefault=on\nConflicts=airplane\nExecApply=\(applier)\n"
    }
    defer { harness.stop() }
    let peer = try TestClient(harness)
    defer { close(peer.fd) }
    func runs() -> [String] {
      ((try? readWholeFile(directory + "/apply.log")) ?? "").split(separator: "\n").map(
        String.init)
    }
    // The start's reconcile of both, in either order.
    peer.drive(input: []) { _ in runs().count >= 2 }
    #expect(Set(runs()) == ["airplane off reconcile", "bt on reconcile"])
    for failing in ["bt-off", "airplane-off"] {
      try writeWholeFile(directory + "/fail-" + failing, "")
    }
    let on = #"{"jsonrpc":"2.0","id":1,"method":"set","params":{"key":"airplane","checked":true}}"#
    peer.drive(input: Array((on + "\n").utf8)) { $0.lines.count >= 1 && runs().count >= 6 }
    let refused = try JSONParser.parse(peer.lines.first ?? "null", maxDepth: 64)
    #expect(refused["error"]?["data"]?["name"]?.stringValue == "ApplyFailed")
    #expect(
      runs().dropFirst(2) == [
        "airplane on set", "bt off set", "airplane off set", "airplane off reconcile",
      ])
    // Its failure made the switch invalid: one change, committed.
    let get = #"{"jsonrpc":"2.0","id":2,"method":"get","params":{"key":"airplane"}}"# + "\n"
    var invalid: Bool? = false
    let deadline = monotonicSeconds() + 30
    while invalid != true && monotonicSeconds() < deadline {
      let asked = peer.lines.count
      peer.drive(input: Array(get.utf8)) { $0.lines.count > asked }
      let answer = try? JSONParser.parse(peer.lines.last ?? "null", maxDepth: 64)
      invalid = answer?["result"]?["invalid"]?.boolValue
      #expect(answer?["result"]?["checked"]?.boolValue == false)
    }
    #expect(invalid == true, "the switch whose undo failed was not marked invalid")
  }

  /// Six commands at the start's reconcile, submitted in key order: five
  /// wait at a gate, then a quick one. The quick one ran while the five waited (with four threads it
  /// waited behind them: rule 16, applying never stalls the others).
  @Test func aQuickCommandDoesNotWaitBehindSlowOnes() throws {
    var gate = ""
    var done = ""
    let harness = try LoopHarness(daemonConf: "[Daemon]\nAdminGroup=\nLogLevel=error\n") {
      gate = $0 + "/gate"
      done = $0 + "/quick.done"
      guard mkfifo(gate, 0o600) == 0 else { throw FixtureError("mkfifo failed") }
      let quick = $0 + "/quick"
      try writeWholeFile(quick, "#!/bin/sh\necho > \(done)\n")
      chmod(quick, 0o755)
      let slow = (1...5).map {
        "[gated\($0)]\nLabel=Gated \($0)\nExecApply=/bin/cat \(gate)\nApplyTimeoutSec=3600\n"
      }
      return (slow + ["[quick]\nLabel=Quick\nExecApply=\(quick)\n"]).joined(separator: "\n")
    }
    let ran = pollUntil(seconds: 30) { fileExists(done) }
    #expect(ran, "the quick command waited behind the slow ones")
    // Let the slow ones end (a writer opened and closed is their end of
    // input), so that the stop does not wait for them.
    let ended = pollUntil(seconds: 60) {
      let fd = open(gate, O_WRONLY | O_NONBLOCK | O_CLOEXEC)
      if fd >= 0 { close(fd) }
      harness.server.turn(timeoutMilliseconds: 5)
      return harness.server.reconciling == 0
    }
    #expect(ended)
    harness.stop()
  }
}
