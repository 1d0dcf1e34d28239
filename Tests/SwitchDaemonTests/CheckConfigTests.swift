import Glibc
import SwitchTestSupport
import Testing

@testable import SwitchDaemon

/// `switchd --check-config`: every line on one stream, counts in words.
@Suite struct CheckConfigTests {
  /// A configuration directory with `files` (relative path → text).
  private func withConfig(_ files: [String: String], _ body: (String) throws -> Void) throws {
    try withTemporaryDirectory { directory in
      mkdir(directory + "/switches.d", 0o755)
      mkdir(directory + "/policy.d", 0o755)
      for (name, text) in files { try writeWholeFile(directory + "/" + name, text) }
      try body(directory)
    }
  }

  @Test func aMissingAdminGroupIsOneWarningCountedInTheSummary() throws {
    try withConfig([
      "switchd.conf": "[Daemon]\nAdminGroup=no-such-group-switchd-test\n",
      "switches.d/10.conf": "[wifi]\nDefault=on\n",
    ]) { directory in
      let (lines, status) = Daemon.checkConfigReport(directory)
      #expect(status == 0)
      #expect(
        lines == [
          "switches.d/10.conf:1: warning: switch wifi has no Label: always pair a switch with a "
            + "label",
          "switchd.conf: warning: AdminGroup no-such-group-switchd-test does not exist: only root "
            + "and switchd's own user may administer switches",
          "\(directory): ok, 1 switch, 0 policies, 2 warnings",
        ])
    }
  }

  @Test func errorsAreCountedWithTheRightPlural() throws {
    try withConfig([
      "switchd.conf": "[Daemon]\nAdminGroup=\n",
      "switches.d/10.conf": "[wifi]\nLabel=Wi-Fi\nDefault=maybe\n",
    ]) { directory in
      let (lines, status) = Daemon.checkConfigReport(directory)
      #expect(status == 1)
      #expect(lines.last == "\(directory): 1 error")
    }
    try withConfig([
      "switches.d/10.conf": "[wifi]\nLabel=Wi-Fi\nLabel=WLAN\nDefault=maybe\n"
    ]) { directory in
      let (lines, status) = Daemon.checkConfigReport(directory)
      #expect(status == 1)
      #expect(lines.last == "\(directory): 2 errors")
      #expect(lines.count == 3)
    }
  }

  /// The loader hands the parser bytes: a byte that is not UTF-8 is an
  /// error on its line, a U+FFFD written by the author is not.
  @Test func bytesThatAreNotUTF8AreAnErrorButAReplacementCharacterIsNot() throws {
    try withConfig([
      "switches.d/10.conf": "[wifi]\nLabel=Wi-Fi\nDescription=\u{FFFD}\n",
      "switches.d/20.conf": "",
    ]) { directory in
      let bad = Array("[bt]\nLabel=Blue".utf8) + [0xFF] + Array("tooth\n".utf8)
      try writeWholeFile(directory + "/switches.d/20.conf", bad)
      let (lines, status) = Daemon.checkConfigReport(directory)
      #expect(status == 1)
      #expect(
        lines == [
          "switches.d/20.conf:1: warning: switch bt has no Label: always pair a switch with a "
            + "label",
          "switches.d/20.conf:2: error: line is not valid UTF-8 text",
          "\(directory): 1 error",
        ])
    }
  }

  /// `Schedule=` in policy.d: a good one counts as a policy, a bad one is
  /// an error at its line.
  @Test func aPolicyScheduleIsChecked() throws {
    let schema = "[wifi]\nLabel=Wi-Fi\n"
    // No admin group: its warning would depend on this machine's groups.
    try withConfig([
      "switchd.conf": "[Daemon]\nAdminGroup=\n", "switches.d/10.conf": schema,
      "policy.d/50.conf": "[wifi]\nReadOnly=yes\nSchedule=Mon..Fri 08:00-16:00; Sat 10:00-12:00\n",
    ]) { directory in
      let (lines, status) = Daemon.checkConfigReport(directory)
      #expect(status == 0)
      #expect(lines == ["\(directory): ok, 1 switch, 1 policy, 0 warnings"])
    }
    try withConfig([
      "switches.d/10.conf": schema,
      "policy.d/50.conf": "[wifi]\nReadOnly=yes\nSchedule=Mon..Fri 08:00-08:00\n",
    ]) { directory in
      let (lines, status) = Daemon.checkConfigReport(directory)
      #expect(status == 1)
      #expect(
        lines == [
          "policy.d/50.conf:3: error: invalid Schedule=: window \"Mon..Fri 08:00-08:00\" starts "
            + "and ends at the same time",
          "\(directory): 1 error",
        ])
    }
  }
}

/// One run names every problem: a file refused for its mode or its name
/// does not hide the errors of the files that were read.
@Suite struct CheckConfigEveryProblemTests {
  @Test func aRefusedFileDoesNotHideTheOthersErrors() throws {
    try withTemporaryDirectory { directory in
      mkdir(directory + "/switches.d", 0o755)
      mkdir(directory + "/policy.d", 0o755)
      try writeWholeFile(directory + "/switchd.conf", "[Daemon]\nAdminGroup=\n")
      try writeWholeFile(
        directory + "/switches.d/10.conf", "[wifi]\nLabel=Wi-Fi\nDefault=maybe\n")
      try writeWholeFile(directory + "/policy.d/50.conf", "[wifi]\nReadOnly=yes\n")
      chmod(directory + "/policy.d/50.conf", 0o666)
      // A name that is not UTF-8 (0xFF): refused by name, not "missing".
      let badName = directory + "/policy.d/a\u{FFFD}.conf"
      let raw = Array((directory + "/policy.d/a").utf8) + [0xFF] + Array(".conf".utf8) + [0]
      let fd = raw.withUnsafeBufferPointer {
        $0.withMemoryRebound(to: CChar.self) { open($0.baseAddress!, O_WRONLY | O_CREAT, 0o644) }
      }
      try #require(fd >= 0)
      close(fd)
      // An editor's lock beside it, also not UTF-8: skipped as hidden, no error.
      let lock = Array((directory + "/policy.d/.#a").utf8) + [0xFF] + Array(".conf".utf8) + [0]
      let lockFD = lock.withUnsafeBufferPointer {
        $0.withMemoryRebound(to: CChar.self) { open($0.baseAddress!, O_WRONLY | O_CREAT, 0o644) }
      }
      try #require(lockFD >= 0)
      close(lockFD)
      let (lines, status) = Daemon.checkConfigReport(directory)
      #expect(status == 1)
      #expect(lines.count == 4, "\(lines)")
      #expect(lines.first?.contains("policy.d/50.conf") == true, "\(lines)")
      #expect(lines.contains { $0.hasPrefix("switches.d/10.conf:3: error:") }, "\(lines)")
      #expect(
        lines.contains { $0.hasPrefix(badName + ": its name is not UTF-8") }, "\(lines)")
      #expect(lines.last == "\(directory): 3 errors")
      // Names that are not UTF-8 are not ones `removeTree` can name: each
      // run left its folder behind in /tmp.
      for name in [raw, lock] {
        _ = name.withUnsafeBufferPointer {
          $0.withMemoryRebound(to: CChar.self) { unlink($0.baseAddress!) }
        }
      }
    }
  }
}
