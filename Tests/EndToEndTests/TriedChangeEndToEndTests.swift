import Glibc
import SwitchProtocol
import SwitchTestSupport
import Testing

/// Tried changes (SEMANTICS.md rule 20) against the real binaries: kept by
/// `confirm`, undone by `revert`, at the deadline, at once when the maker's
/// connection closes, and at start after a reboot; surviving a restart of
/// the daemon; each one change.
@Suite struct TriedChangeEndToEndTests {
  @Test func aConfirmedChangeStaysAndTheConfirmIsOneStateChange() throws {
    let daemon = try DaemonFixture()
    let watcher = try daemon.client()
    _ = try watcher.result("watch", #"{"keys":["wifi"]}"#)
    let maker = try daemon.client()
    let tried = try maker.result("set", #"{"key":"wifi","checked":false,"confirmWithin":600}"#)
    #expect(tried["switch"]?["pendingUntil"]?.isNull == false)
    let set = try watcher.nextEvent()
    #expect(set["fields"]?.arrayValue == [.string("checked"), .string("pendingUntil")])

    // While it is tried, nobody writes the value.
    let conflict = try daemon.client().error("toggle", #"{"key":"wifi"}"#)
    #expect(conflict["data"]?["name"]?.stringValue == "Conflict")
    #expect(conflict["data"]?["pending"]?.boolValue == true)
    #expect(conflict["data"]?["revision"]?.int64Value == 1)
    #expect(conflict["data"]?["switch"]?["checked"]?.boolValue == false)

    let kept = try daemon.client().result("confirm", #"{"key":"wifi"}"#)
    #expect(kept["changed"]?.boolValue == true)
    #expect(kept["switch"]?["pendingUntil"]?.isNull == true)
    let confirm = try watcher.nextEvent()
    #expect(confirm["cause"]?.stringValue == "confirm")
    #expect(confirm["fields"]?.arrayValue == [.string("pendingUntil")])
    #expect(confirm["state"]?["checked"]?.boolValue == false)
    let again = try maker.result("confirm", #"{"key":"wifi"}"#)
    #expect(again["changed"]?.boolValue == false)
    // Closing the maker's connection now changes nothing.
    maker.close()
    _ = try watcher.result("toggle", #"{"key":"wifi"}"#)
    let next = try watcher.nextEvent()
    #expect(next["revision"]?.int64Value == 3)
    #expect(next["cause"]?.stringValue == "toggle")
  }

  @Test func closingTheMakersConnectionRevertsAtOnceAsTheMaker() throws {
    let daemon = try DaemonFixture()
    let watcher = try daemon.client()
    _ = try watcher.result("watch", #"{"keys":["wifi"]}"#)
    let maker = try daemon.client()
    // An hour: only the closing can revert it within the test.
    _ = try maker.result("toggle", #"{"key":"wifi","confirmWithin":3600}"#)
    #expect(try watcher.nextEvent()["cause"]?.stringValue == "toggle")
    maker.close()
    let revert = try watcher.nextEvent()
    #expect(revert["revision"]?.int64Value == 2)
    #expect(revert["cause"]?.stringValue == "revert")
    #expect(revert["state"]?["checked"]?.boolValue == true)
    #expect(revert["state"]?["pendingUntil"]?.isNull == true)
    #expect(revert["actor"]?["uid"]?.int64Value == Int64(getuid()))
    #expect(revert["actor"]?["source"] == nil)
  }

  @Test func withoutRevertOnDisconnectTheDeadlineRevertsIt() throws {
    let daemon = try DaemonFixture()
    let watcher = try daemon.client()
    _ = try watcher.result("watch", #"{"keys":["wifi"]}"#)
    let maker = try daemon.client()
    _ = try maker.result(
      "set", #"{"key":"wifi","checked":false,"confirmWithin":1,"revertOnDisconnect":false}"#)
    maker.close()
    #expect(try watcher.nextEvent()["cause"]?.stringValue == "set")
    let revert = try watcher.nextEvent()
    #expect(revert["cause"]?.stringValue == "revert")
    #expect(revert["state"]?["checked"]?.boolValue == true)
    #expect(try watcher.result("status")["revision"]?.int64Value == 2)
  }

  @Test func anExplicitRevertUndoesItNow() throws {
    let daemon = try DaemonFixture()
    let client = try daemon.client()
    _ = try client.result("set", #"{"key":"wifi","checked":false,"confirmWithin":600}"#)
    let undone = try client.result("revert", #"{"key":"wifi"}"#)
    #expect(undone["changed"]?.boolValue == true)
    #expect(undone["switch"]?["checked"]?.boolValue == true)
    let history = try client.result("history", #"{"limit":1}"#)
    #expect(history["entries"]?.arrayValue?.first?["cause"]?.stringValue == "revert")
  }

  @Test func aTriedChangeSurvivesARestartOfTheDaemonAndIsRevertedAfterAReboot() throws {
    let daemon = try DaemonFixture()
    var client = try daemon.client()
    _ = try client.result(
      "set", #"{"key":"wifi","checked":false,"confirmWithin":3600,"revertOnDisconnect":false}"#)
    _ = try client.result(
      "set", #"{"key":"bluetooth","checked":true,"confirmWithin":3600,"revertOnDisconnect":false}"#)
    #expect(daemon.stop() == 0)
    try daemon.start()
    client = try daemon.client()
    // The daemon stopping is not the maker's disconnect: still tried.
    let wifi = try client.result("get", #"{"key":"wifi"}"#)
    #expect(wifi["pendingUntil"]?.isNull == false)
    #expect(wifi["checked"]?.boolValue == false)
    #expect(try client.result("status")["revision"]?.int64Value == 2)
    #expect(try client.result("confirm", #"{"key":"wifi"}"#)["changed"]?.boolValue == true)

    // The machine restarted inside the window: another boot id in the stored
    // tried change (as a reboot leaves it), and the next start reverts it.
    #expect(daemon.stop() == 0)
    let rewrite = Durability.Python.execute(
      daemon.databasePath,
      """
      UPDATE switch_details SET pending = rtrim(pending, '0123456789abcdef-') || 'another-boot'
        WHERE pending IS NOT NULL;
      """)
    #expect(rewrite.status == 0, "\(rewrite.stderr)")
    try daemon.start()
    client = try daemon.client()
    #expect(try pollUntil { try client.result("status")["revision"]?.int64Value == 4 })
    let history = try client.result("history", #"{"limit":1}"#)
    #expect(history["entries"]?.arrayValue?.first?["cause"]?.stringValue == "revert")
    #expect(history["entries"]?.arrayValue?.first?["key"]?.stringValue == "bluetooth")
    let bluetooth = try client.result("get", #"{"key":"bluetooth"}"#)
    #expect(bluetooth["checked"]?.boolValue == false)
    #expect(bluetooth["pendingUntil"]?.isNull == true)
  }

  @Test func badTrialParametersAreInvalidParams() throws {
    let daemon = try DaemonFixture()
    let client = try daemon.client()
    for (method, params) in [
      ("set", #"{"key":"wifi","checked":false,"confirmWithin":0}"#),
      ("set", #"{"key":"wifi","checked":false,"confirmWithin":3601}"#),
      ("set", #"{"key":"wifi","checked":false,"revertOnDisconnect":false}"#),
      ("set", #"{"key":"wifi","checked":false,"confirmWithin":5,"for":5}"#),
      ("reset", #"{"key":"wifi","confirmWithin":5}"#),
      ("lock", #"{"key":"wifi","confirmWithin":5}"#),
    ] {
      let error = try client.error(method, params)
      #expect(error["data"]?["name"]?.stringValue == "InvalidParams", "\(method) \(params)")
    }
    #expect(try client.result("status")["revision"]?.int64Value == 0)
  }
}

/// switchctl's question on a terminal (through `script`, which gives it a
/// pty), for what a person does at it: the exit status says whether the
/// change stays, and a "yes" given while switchd restarted still keeps it.
@Suite struct TriedChangeOnATerminalTests {
  /// `switchctl ARGS` on a pty, its input written by the test; its output
  /// (the pty's, through `script`) in a log.
  final class Terminal {
    let child: Child
    let input: Int32
    let logPath: String

    init(_ daemon: DaemonFixture, _ arguments: [String], name: String) throws {
      // Close-on-exec: no other child (a daemon a parallel test starts)
      // keeps this pipe open; dup2 onto the child's stdin clears it there.
      var fds: [Int32] = [0, 0]
      guard pipe(&fds) == 0 else { throw FixtureError("pipe failed") }
      for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
      defer { close(fds[0]) }
      logPath = daemon.directory + "/\(name).log"
      // script runs the command with $SHELL -c: a shell that reads it as sh does.
      let command = ([Products.path("switchctl"), "--socket", daemon.socketPath] + arguments)
        .map { "'" + $0 + "'" }.joined(separator: " ")
      do {
        let pid = try spawn(
          ["/usr/bin/script", "-qec", command, "/dev/null"], stdin: fds[0], stdoutPath: logPath,
          stderrPath: logPath, environment: ["SHELL": "/bin/sh"])
        child = try Child(adopting: pid)
      } catch {
        close(fds[1])
        throw error
      }
      input = fds[1]
    }

    deinit {
      close(input)
      // SIGTERM first: script hands it on to switchctl, which a SIGKILL of
      // script alone would leave to the pty's hangup.
      child.stop(seconds: 10)
    }

    var output: String { (try? readWholeFile(logPath)) ?? "" }

    func type(_ text: String) {
      var bytes = Array(text.utf8)
      _ = write(input, &bytes, bytes.count)
    }
  }

  static let hasScript = access("/usr/bin/script", X_OK) == 0

  @Test(.enabled(if: hasScript, "needs util-linux's script(1)"))
  func theExitStatusSaysWhetherTheChangeStays() throws {
    let daemon = try DaemonFixture()
    let asked = try Terminal(daemon, ["off", "wifi", "--confirm", "60s"], name: "no")
    #expect(pollUntil(seconds: 60) { asked.output.contains("Keep this change?") })
    asked.type("n\n")
    #expect(asked.child.wait(seconds: 60) == 1)
    #expect(asked.output.contains("reverted: wifi: on"))
    #expect(asked.output.contains("switchctl: wifi was not kept: the change was reverted"))
    let kept = try Terminal(daemon, ["off", "wifi", "--confirm", "60s"], name: "yes")
    #expect(pollUntil(seconds: 60) { kept.output.contains("Keep this change?") })
    kept.type("y\n")
    #expect(kept.child.wait(seconds: 60) == 0)
    #expect(kept.output.contains("kept: wifi: off"))
  }

  /// Rule 20: the change outlives a restart of switchd, and any connection
  /// of its maker's uid may confirm it. Before, the "y" went to the closed
  /// connection: switchctl failed, and the change reverted at its deadline.
  @Test(.enabled(if: hasScript, "needs util-linux's script(1)"))
  func aYesGivenWhileSwitchdRestartedKeepsTheChange() throws {
    let daemon = try DaemonFixture()
    let terminal = try Terminal(daemon, ["off", "wifi", "--confirm", "120s"], name: "restart")
    #expect(pollUntil(seconds: 60) { terminal.output.contains("Keep this change?") })
    #expect(daemon.stop() == 0)
    try daemon.start()
    terminal.type("y\n")
    #expect(terminal.child.wait(seconds: 60) == 0, "\(terminal.output)")
    #expect(terminal.output.contains("connecting again"))
    #expect(terminal.output.contains("kept: wifi: off"))
    let wifi = try daemon.client().result("get", #"{"key":"wifi"}"#)
    #expect(wifi.checked == false && wifi["pendingUntil"]?.isNull == true)
  }
}
