import Glibc
import SwitchProtocol
import SwitchTestSupport
import Testing

/// An answer to a write goes out only after an fdatasync of the WAL that began after the
/// write's frames were written. SIGKILL cannot show a missing sync (the page cache survives
/// it), so this test watches the system calls themselves with strace.
@Suite(.serialized) struct DurabilitySyncOrderTests {
  static let strace = "/usr/bin/strace"
  /// strace is installed and may trace here (a container may forbid ptrace).
  static let canTrace: Bool =
    access(strace, X_OK) == 0
    && runProcess([strace, "-qq", "-e", "trace=none", "/bin/true"]).status == 0

  @Test(.enabled(if: canTrace, "needs strace, and ptrace allowed"))
  func everyWriteIsSyncedBeforeItIsAnswered() throws {
    let daemon = try DaemonFixture()
    let tracePath = daemon.directory + "/trace.txt"
    let tracer = try spawn(
      [
        Self.strace, "-f", "-qq", "-y", "-s", "2000", "-o", tracePath,
        "-e", "trace=pwrite64,fdatasync,fsync,write,writev,sendto,sendmsg",
        "-p", String(daemon.pid),
      ], stdoutPath: "/dev/null", stderrPath: daemon.directory + "/strace.err")
    defer {
      kill(tracer, SIGTERM)
      _ = waitForExit(tracer, seconds: 10)
    }
    let client = try daemon.client()
    // Attached once the answers to reads show up in the trace.
    let attached = try pollUntil(seconds: 20) {
      if ((try? readWholeFile(tracePath)) ?? "").contains("revision") { return true }
      _ = try client.result("get", #"{"key":"wifi"}"#)
      return false
    }
    guard attached else {
      let why = (try? readWholeFile(daemon.directory + "/strace.err")) ?? ""
      Issue.record("strace did not attach: \(why)")
      return
    }

    var answered: [Int64] = []
    for key in ["wifi", "bluetooth", "wifi"] {
      let result = try client.result("toggle", "{\"key\":\"\(key)\"}")
      answered.append(result["switch"]?["revision"]?.int64Value ?? -1)
    }
    // strace detaches (and flushes the trace) before switchd stops: under
    // ASan, LeakSanitizer's check at exit needs ptrace for itself.
    kill(tracer, SIGTERM)
    _ = waitForExit(tracer, seconds: 10)
    #expect(daemon.stop() == 0)

    let lines = try readWholeFile(tracePath).split(separator: "\n").map(String.init)
    for revision in answered {
      // The answer: the socket write that carries the switch at this revision.
      guard
        let answer = lines.firstIndex(where: {
          $0.contains("\\\"changed\\\":true") && $0.contains("\\\"revision\\\":\(revision),")
        })
      else {
        Issue.record("no answer for revision \(revision) in the trace")
        continue
      }
      let before = lines[..<answer]
      guard let lastFrame = before.lastIndex(where: { $0.contains("pwrite64(") && walCall($0) })
      else {
        Issue.record("no WAL write before the answer for revision \(revision)")
        continue
      }
      // A sync of the WAL that began after the last frame and finished before the answer.
      #expect(
        syncFinished(lines[(lastFrame + 1)..<answer]),
        "revision \(revision) was answered without a sync after its last frame")
    }
  }

  /// Whether `lines` hold a whole successful sync of the WAL: one line, or a call that
  /// strace split into `<unfinished ...>` and `<... fdatasync resumed>` (same thread).
  private func syncFinished(_ lines: ArraySlice<String>) -> Bool {
    var pending: Set<Substring> = []
    for line in lines {
      let thread = line.prefix { $0 != " " }
      let isSync = line.contains("fdatasync(") || line.contains("fsync(")
      if isSync && walCall(line) && line.hasSuffix(") = 0") { return true }
      if isSync && walCall(line) && line.hasSuffix("<unfinished ...>") { pending.insert(thread) }
      if line.contains("sync resumed>") && line.hasSuffix(") = 0") && pending.contains(thread) {
        return true
      }
    }
    return false
  }

  /// A call on the WAL file (`-y` prints each descriptor's path).
  private func walCall(_ line: String) -> Bool { line.contains("-wal>") }
}
