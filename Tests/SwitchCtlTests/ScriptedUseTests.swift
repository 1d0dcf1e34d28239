import Glibc
import SwitchTestSupport
import Testing

@testable import SwitchCtl

/// switchctl and switchd as shell scripts start them: through pipes, with a
/// standard descriptor closed, with bytes that are not UTF-8 (an audit of
/// switchctl in scripts). Each runs the built binaries through bash, with
/// `pipefail`; one that would wait for ever is ended by `timeout` (status
/// 124, a failure), so nothing is left running when a test fails.
@Suite(.serialized) struct ScriptedUseTests {
  /// `'…'` for the shell.
  static func quoted(_ text: String) -> String {
    "'" + text.replacing("'", with: "'\\''") + "'"
  }

  static func shell(_ script: String) -> ProcessResult {
    runProcess(["/bin/bash", "-c", "set -o pipefail; " + script])
  }

  /// switchctl on `daemon`'s socket, ended after 30 s if it is still running.
  static func ctl(_ daemon: DaemonFixture) -> String {
    "timeout 30 " + quoted(Products.path("switchctl")) + " --socket " + quoted(daemon.socketPath)
  }

  @Test func aWatchEndsWhenItsReaderLeaves() throws {
    let daemon = try DaemonFixture.shipped()
    #expect(daemon.ctl(["toggle", "wifi"]).status == 0)
    // The replay gives one line at once, and no change comes after it: the
    // watch must see `head` leave, not wait for a second change to fail on.
    let piped = Self.shell(Self.ctl(daemon) + " watch wifi --since 0 --json | head -1")
    #expect(piped.status == 0, "\(piped.stderr)")
    #expect(piped.stdout.contains(#""key":"wifi""#))
    #expect(piped.stderr.isEmpty)
  }

  @Test func aWatchWithoutStandardOutputFailsAndSaysSo() throws {
    let daemon = try DaemonFixture.shipped()
    #expect(daemon.ctl(["toggle", "wifi"]).status == 0)
    // Its connection took descriptor 1 and the events went into it.
    let closed = Self.shell("exec " + Self.ctl(daemon) + " watch wifi --since 0 >&-")
    #expect(closed.status == 1)
    #expect(closed.stderr.contains("cannot write to standard output: Bad file descriptor"))
    #expect(!daemon.log.contains("invalid request"))
  }

  @Test func aPatternThatMatchesNoSwitchIsSaidAndWatched() throws {
    let daemon = try DaemonFixture.shipped()
    let said = Self.shell(Self.ctl(daemon) + " watch wfi 2>&1 | head -1")
    #expect(said.status == 0)
    #expect(said.stdout == "switchctl: no switch matches wfi; watching for one a reload declares\n")
  }

  @Test func argumentsAndTheSocketVariableMustBeUTF8() throws {
    let daemon = try DaemonFixture.shipped()
    // printf writes the byte 0xFF, which Swift's strings repair into U+FFFD:
    // `backup` wrote a file of that other name and said it had written this.
    let target = daemon.directory + "/\\377.db"
    let backup = Self.shell(Self.ctl(daemon) + " backup \"$(printf '\(target)')\"")
    #expect(backup.status == 2)
    #expect(backup.stderr.hasPrefix("switchctl: argument 4 is not valid UTF-8"))
    #expect(try !directoryEntries(daemon.directory).contains { $0.hasSuffix(".db") })
    // Also when the rest of the line fails to parse: --json still gets its object.
    for rest in ["", " extra"] {
      let json = Self.shell(Self.ctl(daemon) + " --json get \"$(printf 'wifi\\377')\"" + rest)
      #expect(json.status == 2)
      #expect(json.stdout.contains(#""name":"Usage""#))
    }
    let variable = Self.shell(
      "SWITCHD_SOCKET=\"$(printf '/tmp/\\377')\" " + Self.quoted(Products.path("switchctl"))
        + " get wifi")
    #expect(variable.status == 2)
    #expect(variable.stderr.hasPrefix("switchctl: $SWITCHD_SOCKET is not valid UTF-8"))
    // Not read when --socket is given: then it is not in the way.
    let unread = Self.shell(
      "SWITCHD_SOCKET=\"$(printf '/tmp/\\377')\" " + Self.ctl(daemon) + " get wifi")
    #expect(unread.status == 0 && unread.stdout == "on\n")
    let daemonArgument = Self.shell(
      "timeout 30 " + Self.quoted(Products.path("switchd")) + " --socket "
        + Self.quoted(daemon.directory + "/other.sock") + " --database "
        + Self.quoted(daemon.directory + "/other.db")
        + " --config \"$(printf '\(daemon.directory)/\\377')\"")
    #expect(daemonArgument.status == 2)
    #expect(daemonArgument.stderr.hasPrefix("switchd: argument 6 is not valid UTF-8"))
  }

  @Test func aDaemonStartedWithoutStandardDescriptorsHasDevNullThere() throws {
    let daemon = try DaemonFixture(start: false)
    // As a careless init script might: the database, its lock file, a
    // socket or an eventfd took 0, 1 and 2, and the log went into them.
    try daemon.launch(through: ["/bin/sh", "-c", "exec \"$@\" 0<&- 1>&- 2>&-", "sh"])
    try daemon.waitUntilServing()
    for descriptor in 0...2 {
      var target = [CChar](repeating: 0, count: 256)
      let count = readlink("/proc/\(daemon.pid)/fd/\(descriptor)", &target, target.count - 1)
      let name =
        count > 0
        ? String(decoding: target[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self) : ""
      #expect(name == "/dev/null", "descriptor \(descriptor) is \(name)")
    }
    #expect(daemon.ctl(["toggle", "wifi"]).status == 0)
  }

  @Test func aWatchEndsWhenItsReaderLeavesWhileSwitchdIsAway() throws {
    let daemon = try DaemonFixture.shipped()
    let fifo = daemon.directory + "/go"
    try #require(mkfifo(fifo, 0o600) == 0)
    // The reader leaves when the test writes the fifo: no time in it.
    let script =
      Self.ctl(daemon) + " watch wifi 2>/dev/null | (read _ < " + Self.quoted(fifo) + ")"
    let watch = try Child(
      ["/bin/bash", "-c", "set -o pipefail; " + script], logPath: daemon.directory + "/watch.log")
    _ = pollUntil(seconds: 30) {
      ((try? daemon.call(.status, []))?["watches"]?.int64Value ?? 0) > 0
    }
    #expect(daemon.stop() == 0)
    // switchctl now waits between attempts to reconnect; its reader leaves.
    let writer = open(fifo, O_WRONLY)
    #expect(writer >= 0)
    #expect(write(writer, "\n", 1) == 1)
    close(writer)
    #expect(watch.wait(seconds: 60) == 0)
  }
}

/// Which watch patterns switchctl says match no switch.
@Suite struct WatchPatternTests {
  @Test func aPatternMatchingNoKeyIsNamed() {
    let keys = ["wifi", "notifications.chat"]
    #expect(Watcher.unmatched(["wifi", "notifications.*"], among: keys).isEmpty)
    #expect(Watcher.unmatched(["wfi", "wifi", "email.*"], among: keys) == ["wfi", "email.*"])
  }
}
