import Glibc
import SwitchTestSupport
import Testing

@testable import SwitchSystem

@Suite struct ApplyProcessTests {
  static let environment = ["PATH=/usr/bin:/bin", "SWITCH_KEY=wifi"]

  static func shell(_ script: String, _ extra: String...) -> ApplyProcess.Result {
    ApplyProcess.run(
      arguments: ["/bin/sh", "-c", script] + extra, environment: environment,
      timeoutMilliseconds: 60_000)
  }

  @Test func exitStatusAndTheFirstNonEmptyLineOfStandardError() {
    #expect(Self.shell("exit 0") == .init(outcome: .exited(status: 0), firstErrorLine: nil))
    #expect(Self.shell("exit 3") == .init(outcome: .exited(status: 3), firstErrorLine: nil))
    let failed = Self.shell("echo out; printf '\\n  \\n  no radio here \\nsecond\\n' >&2; exit 1")
    #expect(failed == .init(outcome: .exited(status: 1), firstErrorLine: "no radio here"))
    #expect(Self.shell("kill -9 $$").outcome == .killed(signal: SIGKILL))
  }

  /// A NUL in what a program prints is kept as U+FFFD: the line becomes a
  /// stored reason, and systemd's varlink clients cannot hold a U+0000.
  @Test func aNulByteInTheErrorLineIsReplaced() {
    let result = Self.shell("printf 'a\\000b\\n' >&2; exit 1")
    #expect(result.firstErrorLine == "a\u{FFFD}b")
  }

  @Test func aProgramThatCannotStartSaysWhy() {
    let result = ApplyProcess.run(
      arguments: ["/nonexistent/apply"], environment: [], timeoutMilliseconds: 1000)
    #expect(result.outcome == .couldNotStart(errno: ENOENT))
  }

  @Test func theEnvironmentIsExactlyWhatIsGivenAndStandardInputIsEmpty() throws {
    try withTemporaryDirectory { (directory: String) throws in
      // /proc/self/environ is what exec gave the shell (the shell adds PWD
      // only for what it runs).
      let result = Self.shell(
        "tr '\\0' '\\n' < /proc/$$/environ > \"$0\"/env; cat > \"$0\"/stdin; pwd > \"$0\"/cwd",
        directory)
      #expect(result.succeeded)
      #expect(
        try readWholeFile(directory + "/env") == Self.environment.joined(separator: "\n") + "\n")
      #expect(try readWholeFile(directory + "/stdin") == "")
      #expect(try readWholeFile(directory + "/cwd") == "/\n")
    }
  }

  @Test func aTimeoutKillsTheWholeProcessGroup() throws {
    try withTemporaryDirectory { directory in
      let result = ApplyProcess.run(
        arguments: ["/bin/sh", "-c", "sleep 1000 & echo $! > \"$0\"/child; wait", directory],
        // Long enough for the shell to write the child's pid on a loaded machine.
        environment: [], timeoutMilliseconds: 3000)
      #expect(result.outcome == .timedOut)
      let child =
        Int32(try readWholeFile(directory + "/child").split(separator: "\n").first ?? "") ?? 0
      #expect(child > 0)
      expectGone(child)
    }
  }

  @Test func whatAProgramLeavesInItsGroupIsKilledWhenItExits() throws {
    try withTemporaryDirectory { directory in
      // The child holds no descriptor of ours, so only the group kill ends it.
      let result = Self.shell(
        "sleep 1000 </dev/null >/dev/null 2>&1 & echo $! > \"$0\"/child", directory)
      #expect(result.succeeded)
      let child =
        Int32(try readWholeFile(directory + "/child").split(separator: "\n").first ?? "") ?? 0
      #expect(child > 0)
      expectGone(child)
    }
  }

  @Test func aFloodOfOutputIsReadAndDroppedBeyondTheBound() {
    // 8 MiB to standard error and to standard output: the run ends, keeps the first line.
    let result = Self.shell(
      "echo first >&2; head -c 8388608 /dev/zero | tr '\\0' x >&2; "
        + "head -c 8388608 /dev/zero; exit 2")
    #expect(result == .init(outcome: .exited(status: 2), firstErrorLine: "first"))
    let long = Self.shell("head -c 100000 /dev/zero | tr '\\0' y >&2; exit 1")
    #expect(long.firstErrorLine?.utf8.count == ApplyProcess.maxReasonBytes)
  }
}

/// A killed process that is not our child is reaped by init: wait (with a
/// generous deadline) until it is no longer there or is a zombie.
private func expectGone(_ pid: Int32) {
  let gone = pollUntil(seconds: 30) {
    guard let status = try? readWholeFile("/proc/\(pid)/stat") else { return true }
    // The state follows the command name in parentheses: Z is a zombie, dead.
    guard let close = status.lastIndex(of: ")") else { return false }
    return status[status.index(close, offsetBy: 2)] == "Z"
  }
  if !gone { Issue.record("process \(pid) is still running") }
}
