import Glibc
import SwitchCore
import SwitchTestSupport
import Testing

@testable import SwitchDaemon

/// A default path from a variable that is not UTF-8: switchd refuses to
/// start, naming it, instead of making a folder whose name has U+FFFD in
/// place of the bytes it could not read.
@Suite struct DaemonEnvironmentTests {
  @Test func aVariableCountsOnlyWhereItWouldGiveThePath() {
    let user: [String: String] = ["HOME": "/home/ada"]
    // A user's database comes from $XDG_STATE_HOME before $HOME.
    #expect(
      Daemon.unusableVariable(["XDG_STATE_HOME"], uid: 1000, env: user, DefaultPaths.database)
        == "XDG_STATE_HOME")
    // Root's comes from neither; systemd's $STATE_DIRECTORY decides for anyone.
    #expect(
      Daemon.unusableVariable(["XDG_STATE_HOME"], uid: 0, env: user, DefaultPaths.database)
        == nil)
    #expect(
      Daemon.unusableVariable(["STATE_DIRECTORY"], uid: 0, env: [:], DefaultPaths.database)
        == "STATE_DIRECTORY")
    // A valid $XDG_RUNTIME_DIR comes first: $HOME is not read for the socket.
    #expect(
      Daemon.unusableVariable(
        ["HOME"], uid: 1000, env: ["XDG_RUNTIME_DIR": "/run/user/1000"], DefaultPaths.socket)
        == nil)
  }

  /// The real binary, run as uid 65534 with its $XDG_STATE_HOME set to
  /// bytes that are not UTF-8. (As that user, a start that ignored the
  /// variable would fall back to $HOME, in the test's folder: as root it
  /// would be the machine's own database.)
  @Test(
    .needsRoot("switchd runs as another uid through setpriv"),
    .enabled(if: access("/usr/bin/setpriv", X_OK) == 0, "needs /usr/bin/setpriv"))
  func switchdRefusesADatabasePathFromAVariableThatIsNotUTF8() throws {
    try withTemporaryDirectory { directory in
      chmod(directory, 0o755)
      let config = directory + "/config"
      mkdir(config, 0o755)
      mkdir(config + "/switches.d", 0o755)
      try writeWholeFile(config + "/switchd.conf", "[Daemon]\nAdminGroup=\n")
      try writeWholeFile(config + "/switches.d/10-test.conf", "[wifi]\nLabel=Wi-Fi\n")
      for file in ["/switchd.conf", "/switches.d/10-test.conf"] { chmod(config + file, 0o644) }
      for folder in ["/home", "/run"] {
        mkdir(directory + folder, 0o700)
        chown(directory + folder, 65534, 65534)
      }
      let script =
        "XDG_STATE_HOME=$(printf '\(directory)/home/state\\377') HOME='\(directory)/home' "
        + "exec \"$0\" --config \"$1\" --socket \"$2\""
      let result = runProcess(
        [
          "/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
          "/bin/sh", "-c", script, Products.path("switchd"), config,
          directory + "/run/switchd.sock",
        ], timeout: 30)
      #expect(result.status == 1, "\(result.stderr)")
      #expect(result.stderr.contains("$XDG_STATE_HOME is not valid UTF-8"), "\(result.stderr)")
      #expect(try directoryEntries(directory + "/home").isEmpty, "a folder was made")
    }
  }
}
