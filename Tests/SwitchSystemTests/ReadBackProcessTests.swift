import Glibc
import SwitchTestSupport
import Testing

@testable import SwitchSystem

/// `ExecCheck=` and `ExecWatch=` programs, run as CONFIG.md says.
@Suite struct ReadBackProcessTests {
  static let environment = ["PATH=/usr/bin:/bin", "SWITCH_KEY=wifi"]

  static func check(_ script: String, timeout: Int = 60_000) -> Result<
    Bool, ReadBackProcess.CheckFailure
  > {
    ReadBackProcess.check(
      arguments: ["/bin/sh", "-c", script], environment: environment,
      timeoutMilliseconds: timeout)
  }

  @Test func aCheckPrintsOnOrOff() {
    #expect(Self.check("echo on") == .success(true))
    #expect(Self.check("printf ' off \\r\\n'; echo ignored") == .success(false))
  }

  @Test func aCheckThatFailsSaysWhy() {
    #expect(
      Self.check("echo on; echo 'NetworkManager is not running' >&2; exit 1")
        == .failure(.init(reason: "NetworkManager is not running")))
    #expect(Self.check("exit 4") == .failure(.init(reason: "exit status 4")))
    #expect(Self.check("echo maybe") == .failure(.init(reason: "printed \"maybe\", not on or off")))
    #expect(Self.check("true") == .failure(.init(reason: "printed \"\", not on or off")))
    let missing = ReadBackProcess.check(
      arguments: ["/nonexistent/check"], environment: [], timeoutMilliseconds: 1000)
    guard case .failure(let failure) = missing else {
      Issue.record("a missing program read a state")
      return
    }
    #expect(failure.reason.hasPrefix("could not be started: "))
  }

  /// A program that closes its output before it exits (coreutils' echo
  /// does, in an exit handler) is read when it has exited, not killed
  /// when its pipes close: it read as "killed by signal 9".
  @Test func aCheckThatClosesItsOutputBeforeItEndsIsRead() {
    #expect(Self.check("echo off; exec >&- 2>&-; sleep 0.2") == .success(false))
    #expect(
      Self.check("echo on; exec >&- 2>&-; sleep 0.2; exit 2")
        == .failure(.init(reason: "exit status 2")))
    // Still bounded by its time limit.
    #expect(
      Self.check("echo on; exec >&- 2>&-; exec sleep 1000", timeout: 200)
        == .failure(.init(reason: "timed out after 0.2s")))
  }

  @Test func aWatchThatClosesItsOutputBeforeItEndsEndsByItsOwnStatus() {
    let end = ReadBackProcess.follow(
      arguments: ["/bin/sh", "-c", "echo on; exec >&- 2>&-; sleep 0.2; exit 3"],
      environment: Self.environment, started: { _ in }, line: { _ in }, errorLine: { _ in },
      endGraceSeconds: 60)  // a program that exits ends the wait at once
    #expect(end == "exit status 3")
  }

  @Test func aCheckThatHangsIsKilledAtItsTimeout() {
    // The time limit is the program's, not the test's: it never ends by itself.
    #expect(
      Self.check("exec sleep 1000", timeout: 200) == .failure(.init(reason: "timed out after 0.2s"))
    )
  }

  @Test func aWatchReportsEachLineThenHowItEnded() {
    var states: [Bool?] = []
    var errors: [String] = []
    let end = ReadBackProcess.follow(
      arguments: [
        "/bin/sh", "-c", "echo on; echo off; echo '  ' >&2; echo broken >&2; echo junk; exit 3",
      ],
      environment: Self.environment, started: { _ in }, line: { states.append($0) },
      errorLine: { errors.append($0) })
    #expect(states == [true, false, nil])
    #expect(errors == ["broken"])
    #expect(end == "exit status 3")
  }

  @Test func aStoppedWatchEndsWithItsGroup() {
    let running = Box<RunningWatch?>(nil)
    var states: [Bool?] = []
    let end = ReadBackProcess.follow(
      arguments: ["/bin/sh", "-c", "echo on; sleep 1000 & wait"], environment: Self.environment,
      started: { running.value = $0 },
      line: { state in
        states.append(state)
        // Stopped from here, as the daemon stops it from another thread.
        running.value?.stop()
      }, errorLine: { _ in })
    #expect(states == [true])
    #expect(end == "stopped")
  }
}

private final class Box<T>: @unchecked Sendable {
  var value: T
  init(_ value: T) { self.value = value }
}
