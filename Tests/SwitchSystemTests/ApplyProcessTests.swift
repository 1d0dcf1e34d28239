import Glibc
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

  @Test func aProgramThatCannotStartSaysWhy() {
    let result = ApplyProcess.run(
      arguments: ["/nonexistent/apply"], environment: [], timeoutMilliseconds: 1000)
    #expect(result.outcome == .couldNotStart(errno: ENOENT))
  }

  @Test func theEnvironmentIsExactlyWhatIsGivenAndStandardInputIsEmpty() throws {
    withTemporaryDirectory { directory in
      // /proc/self/environ is what exec gave the shell (the shell adds PWD
      // only for what it runs).
      let result = Self.shell(
        "tr '\\0' '\\n' < /proc/$$/environ > \"$0\"/env; cat > \"$0\"/stdin; pwd > \"$0\"/cwd",
        directory)
      #expect(result.succeeded)
      #expect(readText(directory + "/env") == Self.environment.joined(separator: "\n") + "\n")
      #expect(readText(directory + "/stdin") == "")
      #expect(readText(directory + "/cwd") == "/\n")
    }
  }

  @Test func aTimeoutKillsTheWholeProcessGroup() throws {
    withTemporaryDirectory { directory in
      let result = ApplyProcess.run(
        arguments: ["/bin/sh", "-c", "sleep 1000 & echo $! > \"$0\"/child; wait", directory],
        // Long enough for the shell to write the child's pid on a loaded machine.
        environment: [], timeoutMilliseconds: 3000)
      #expect(result.outcome == .timedOut)
      let child = Int32(readText(directory + "/child").split(separator: "\n").first ?? "") ?? 0
      #expect(child > 0)
      expectGone(child)
    }
  }

  @Test func whatAProgramLeavesInItsGroupIsKilledWhenItExits() throws {
    withTemporaryDirectory { directory in
      // The child holds no descriptor of ours, so only the group kill ends it.
      let result = Self.shell(
        "sleep 1000 </dev/null >/dev/null 2>&1 & echo $! > \"$0\"/child", directory)
      #expect(result.succeeded)
      let child = Int32(readText(directory + "/child").split(separator: "\n").first ?? "") ?? 0
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

private func readText(_ path: String) -> String {
  guard let file = fopen(path, "r") else { return "" }
  defer { fclose(file) }
  var bytes: [UInt8] = []
  while true {
    let c = fgetc(file)
    if c == EOF { break }
    bytes.append(UInt8(c))
  }
  return String(decoding: bytes, as: UTF8.self)
}

/// A killed process that is not our child is reaped by init: wait (with a
/// generous deadline) until it is no longer there or is a zombie.
private func expectGone(_ pid: Int32) {
  let deadline = time(nil) + 30
  while time(nil) < deadline {
    let status = readText("/proc/\(pid)/stat")
    if status.isEmpty { return }
    // The state follows the command name in parentheses: Z is a zombie, dead.
    if let close = status.lastIndex(of: ")"),
      status[status.index(close, offsetBy: 2)] == "Z"
    {
      return
    }
    usleep(10_000)
  }
  Issue.record("process \(pid) is still running")
}
