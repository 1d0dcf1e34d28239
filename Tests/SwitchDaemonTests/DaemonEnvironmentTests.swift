import Glibc
import SwitchCore
import SwitchTestSupport
import Testing

@testable import SwitchDaemon

/// A default path from a variable that is not UTF-8: switchd refuses to
/// start, naming it, instead of making a folder whose name has U+FFFD in
/// place of the bytes it could not read.
@Suite struct DaemonEnvironmentTests {
  /// A configuration of one switch in `directory`, readable by any uid.
  static func configuration(in directory: String) throws -> String {
    let config = directory + "/config"
    mkdir(config, 0o755)
    mkdir(config + "/switches.d", 0o755)
    try writeWholeFile(config + "/switchd.conf", "[Daemon]\nAdminGroup=\n")
    try writeWholeFile(config + "/switches.d/10-test.conf", "[wifi]\nLabel=Wi-Fi\n")
    for file in ["/switchd.conf", "/switches.d/10-test.conf"] { chmod(config + file, 0o644) }
    return config
  }

  @Test func aVariableCountsOnlyWhereItsBytesWouldBeInThePath() {
    func database(uid: UInt32 = 1000, _ env: [String: String], _ notUTF8: [String: String]) -> (
      path: String, unreadable: String?
    ) {
      Daemon.defaultPath(uid: uid, env: env, notUTF8: notUTF8, DefaultPaths.database)
    }
    let home = ["HOME": "/home/ada"]
    // A user's database comes from $XDG_STATE_HOME before $HOME.
    #expect(database(home, ["XDG_STATE_HOME": "/st\u{FFFD}"]).unreadable == "XDG_STATE_HOME")
    // A relative one is not used: $HOME decides.
    let relative = database(home, ["XDG_STATE_HOME": "\u{FFFD}rel"])
    #expect(relative.unreadable == nil)
    #expect(relative.path == "/home/ada/.local/state/switchd/switches.db")
    // Root's comes from neither; systemd's $STATE_DIRECTORY decides for
    // anyone, its first part only.
    #expect(database(uid: 0, home, ["XDG_STATE_HOME": "/st\u{FFFD}"]).unreadable == nil)
    #expect(database(uid: 0, [:], ["STATE_DIRECTORY": "/\u{FFFD}"]).unreadable == "STATE_DIRECTORY")
    let firstPart = database(uid: 0, [:], ["STATE_DIRECTORY": "/ok:/\u{FFFD}"])
    #expect(firstPart.unreadable == nil)
    #expect(firstPart.path == "/ok/switches.db")
    // A valid $XDG_RUNTIME_DIR comes first: $HOME is not read for the socket.
    let socket = Daemon.defaultPath(
      uid: 1000, env: ["XDG_RUNTIME_DIR": "/run/user/1000"], notUTF8: ["HOME": "/\u{FFFD}"],
      DefaultPaths.socket)
    #expect(socket.unreadable == nil && socket.path == "/run/user/1000/switchd/switchd.sock")
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
      let config = try Self.configuration(in: directory)
      for folder in ["/home", "/run"] {
        mkdir(directory + folder, 0o700)
        chown(directory + folder, 65534, 65534)
      }
      let script =
        "unset STATE_DIRECTORY RUNTIME_DIRECTORY; "
        + "XDG_STATE_HOME=$(printf '\(directory)/home/state\\377') HOME='\(directory)/home' "
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

  /// A relative path given from a working directory whose name is not
  /// UTF-8 cannot be made absolute: refused, saying so (it was joined with
  /// a U+FFFD name, another folder).
  @Test func aRelativePathUnderAWorkingDirectoryNotUTF8IsRefused() throws {
    try withTemporaryDirectory { directory in
      let config = try Self.configuration(in: directory)
      let script =
        "cd '\(directory)' && mkdir \"$(printf 'w\\377')\" && cd \"$(printf 'w\\377')\" && "
        + "exec \"$0\" --config \"$1\" --socket \"$2\" --database state/switches.db"
      let result = runProcess(
        ["/bin/sh", "-c", script, Products.path("switchd"), config, directory + "/switchd.sock"],
        timeout: 30)
      #expect(result.status == 1, "\(result.stderr)")
      #expect(
        result.stderr.contains("the working directory's name is not UTF-8"), "\(result.stderr)")
      // A name that is not UTF-8 is not one `removeTree` can name.
      _ = runProcess(["/bin/sh", "-c", "rm -rf \"$0\"/w*", directory])
    }
  }
}
