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
            + "may administer switches",
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
}
