import Glibc
import SwitchProtocol
import SwitchTestSupport
import Testing

@testable import SwitchCtl

/// Every error code maps to the exit status docs/protocol.md gives it, and every
/// failure prints one `switchctl: ` sentence.
@Suite struct ExitCodeTests {
  static let statuses: [(RPCErrorCode, Int32)] = [
    (.readOnly, 3), (.disabled, 4), (.unknownSwitch, 5), (.permissionDenied, 6),
    (.conflict, 8), (.invalidParams, 2), (.parseError, 1), (.invalidRequest, 1),
    (.methodNotFound, 1), (.internalError, 1), (.applyFailed, 1), (.storageFailure, 1),
    (.overloaded, 1), (.historyCompacted, 1), (.invalidConfig, 1),
    (RPCErrorCode(rawValue: -32099), 1), (RPCErrorCode(rawValue: 7), 1),
  ]

  @Test(arguments: statuses)
  func remoteErrorsMapToExitCodes(code: RPCErrorCode, status: Int32) {
    #expect(ExitCode(code).rawValue == status)
    let failure = Failure.remote(
      RemoteError(
        code: code, message: "bluetooth is read-only: Bluetooth is turned off by your organisation."
      ))
    #expect(failure.exitCode.rawValue == status)
    #expect(
      failure.lines == [
        "switchctl: bluetooth is read-only: Bluetooth is turned off by your organisation."
      ])
  }

  @Test func transportFailures() {
    let unreachable = Failure.client(.unreachable(path: "/run/x.sock", errno: ECONNREFUSED))
    #expect(unreachable.exitCode == .unreachable)
    #expect(
      unreachable.lines == [
        "switchctl: cannot reach switchd at /run/x.sock: Connection refused (is it running?)"
      ])
    #expect(Failure.client(.pathTooLong(path: "/x")).exitCode.rawValue == 2)
    let ownSocket = "/run/user/1000/switchd/switchd.sock"
    let stale = Failure.client(
      .unreachable(path: ownSocket, errno: ECONNREFUSED, staleSocket: true))
    #expect(stale.exitCode == .unreachable)
    #expect(
      stale.lines == [
        "switchctl: switchd is not running: /run/user/1000/switchd/switchd.sock is a stale socket "
          + "left by a daemon that stopped; start it with: switchd --socket "
          + "/run/user/1000/switchd/switchd.sock & (or remove "
          + "/run/user/1000/switchd/switchd.sock)"
      ])
    // Reached but refused: the caller's access, not a stopped daemon.
    let denied = Failure.client(.unreachable(path: "/run/x.sock", errno: EACCES))
    #expect(denied.exitCode == .unreachable)
    #expect(
      denied.lines == [
        "switchctl: cannot reach switchd at /run/x.sock: Permission denied: you may not open "
          + "this socket (its mode, SocketMode= in switchd.conf, or a folder on its path)"
      ])
    let file = Failure.client(.notASocket(path: "/run/x.log", kind: "a regular file"))
    #expect(file.exitCode == .unreachable)
    #expect(
      file.lines == [
        "switchctl: cannot reach switchd at /run/x.log: it is a regular file, not a socket; give"
          + " --socket (or $SWITCHD_SOCKET) the socket switchd listens on"
      ])
    let staleSystem = Failure.client(
      .unreachable(path: "/run/switchd/switchd.sock", errno: ECONNREFUSED, staleSocket: true))
    #expect(
      staleSystem.lines.first?.hasSuffix("start it with: sudo systemctl start switchd") == true)
    #expect(Failure.client(.timedOut(path: "/x", seconds: 30)).exitCode.rawValue == 1)
    #expect(
      Failure.client(.timedOut(path: "/x", seconds: 30)).lines == [
        "switchctl: switchd at /x did not answer within 30 seconds; it may be stuck"
      ])
    #expect(Failure.client(.closed(path: "/x")).exitCode.rawValue == 1)
    #expect(Failure.client(.malformed(path: "/x")).exitCode.rawValue == 1)
  }

  @Test func unreachableDaemonExits7WithOneSentence() {
    let run = runCtl(["--socket", "/nonexistent/switchd.sock", "get", "wifi"])
    #expect(run.code.rawValue == 7)
    #expect(run.out.isEmpty)
    #expect(
      run.err == [
        "switchctl: cannot reach switchd at /nonexistent/switchd.sock: No such file or directory (is it running?)"
      ])
    #expect(runCtl(["--socket", "/nonexistent/s", "watch"]).code.rawValue == 7)
    #expect(runCtl(["--socket", "/nonexistent/s", "is-on", "wifi"]).code.rawValue == 7)
  }

  /// No daemon can listen on a path longer than a socket address holds, so
  /// it is the command line that is wrong (exit 2, as the README says of a
  /// bad command line), with a sentence that says what to do; the same from
  /// $SWITCHD_SOCKET, for watch, and in --json.
  @Test func aSocketPathTooLongIsAUsageError() {
    let long = "/" + String(repeating: "x", count: 200)
    let sentence =
      "switchctl: the socket path \(long) is 201 bytes long, and a Unix socket path holds at "
      + "most 107: give --socket (or $SWITCHD_SOCKET) a shorter one, such as a symbolic link to "
      + "the socket"
    let run = runCtl(["--socket", long, "status"])
    #expect(run.code == .usage)
    #expect(run.out.isEmpty)
    #expect(run.err == [sentence])
    let fromVariable = runCtl(
      ["get", "wifi"], environment: Environment.fixed(["SWITCHD_SOCKET": long]))
    #expect(fromVariable.code == .usage)
    #expect(fromVariable.err == [sentence])
    #expect(runCtl(["--socket", long, "watch"]).code == .usage)
    let json = runCtl(["--socket", long, "--json", "toggle", "wifi"])
    #expect(json.code == .usage)
    let object = SwitchCtlTests.json(json.out.first ?? "null")
    #expect(object["code"] == .null)
    #expect(object["data"]?["name"] == .string("Usage"))
    #expect(object["message"]?.stringValue == String(sentence.dropFirst("switchctl: ".count)))
  }

  @Test func malformedKeyIsAnUnknownSwitchWithoutAskingTheDaemon() {
    let run = runCtl(["--socket", "/nonexistent/s", "get", "Wi_Fi"])
    #expect(run.code.rawValue == 5)
    #expect(
      run.err == [
        "switchctl: No switch has the key Wi_Fi: a switch key starts with a lowercase letter a-z."
      ])
    // A key far past the limit is named by its start and length.
    let long = runCtl(["--socket", "/nonexistent/s", "get", String(repeating: "a", count: 100_000)])
    #expect(long.code.rawValue == 5)
    #expect(
      long.err == [
        "switchctl: No switch has the key \(String(repeating: "a", count: 64))… (100000 bytes): "
          + "a switch key is at most 128 bytes."
      ])
    // One just past the limit is shown whole: what is wrong may be its end.
    let past = String(repeating: "b", count: 129)
    #expect(
      runCtl(["--socket", "/nonexistent/s", "get", past]).err == [
        "switchctl: No switch has the key \(past): a switch key is at most 128 bytes."
      ])
    // Not "the key : …": an empty key is said as one.
    let empty = runCtl(["--socket", "/nonexistent/s", "get", ""])
    #expect(empty.code.rawValue == 5)
    #expect(
      empty.err == [
        "switchctl: No switch has an empty key: name one (`switchctl list` lists them)."
      ])
  }
}

/// A path that is not a socket (a log file, the folder it is in) is named
/// as what it is: connect(2) says only "Connection refused".
@Suite struct NotASocketTests {
  @Test func aRegularFileOrAFolderAtTheSocketPathIsNamed() throws {
    try withTemporaryDirectory { directory in
      let file = directory + "/switchd.log"
      let fd = open(file, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
      try #require(fd >= 0)
      close(fd)
      for (path, kind) in [(file, "a regular file"), (directory, "a directory")] {
        let run = runCtl(["--socket", path, "status"])
        #expect(run.code == .unreachable)
        #expect(
          run.err == [
            "switchctl: cannot reach switchd at \(path): it is \(kind), not a socket; give"
              + " --socket (or $SWITCHD_SOCKET) the socket switchd listens on"
          ])
      }
    }
  }

  /// What the command line gave is repeated escaped, as the daemon's
  /// sentences are: a terminal escape in an unknown command, a user or a
  /// path reached the terminal raw (an audit).
  @Test func whatTheCommandLineGaveIsRepeatedEscaped() {
    let usage = Failure.usage(
      UsageError(message: "unknown command 'fr\u{1B}[31mob'.", command: nil))
    #expect(
      usage.lines == ["switchctl: unknown command 'fr\\u001B[31mob'.", "Try 'switchctl --help'."])
    let local = Failure.local("cannot create /tmp/a\nb: Permission denied")
    #expect(local.lines == ["switchctl: cannot create /tmp/a\\nb: Permission denied"])
    let client = Failure.client(.closed(path: "/run/\u{1B}]0;x"))
    #expect(
      client.lines == [
        "switchctl: switchd at /run/\\u001B]0;x closed the connection before answering"
      ])
  }
}
