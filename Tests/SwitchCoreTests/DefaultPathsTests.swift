import Testing

@testable import SwitchCore

@Suite struct DefaultPathsTests {
  @Test func rootUsesTheSystemPaths() {
    #expect(DefaultPaths.socket(uid: 0, environment: [:]) == "/run/switchd/switchd.sock")
    #expect(DefaultPaths.database(uid: 0, environment: [:]) == "/var/lib/switchd/switches.db")
  }

  @Test func aUserUsesItsXDGDirectories() {
    let env = ["XDG_RUNTIME_DIR": "/run/user/1000", "HOME": "/home/ann"]
    #expect(
      DefaultPaths.socket(uid: 1000, environment: env) == "/run/user/1000/switchd/switchd.sock")
    #expect(
      DefaultPaths.database(uid: 1000, environment: env)
        == "/home/ann/.local/state/switchd/switches.db")
    #expect(DefaultPaths.socket(uid: 1000, environment: [:]) == "/tmp/switchd-1000/switchd.sock")
  }

  /// The unit runs as user `switchd` with StateDirectory= and
  /// RuntimeDirectory=: systemd's directories win over the user's own.
  @Test func underSystemdTheServiceDirectoriesAreUsed() {
    let env = [
      "STATE_DIRECTORY": "/var/lib/switchd", "RUNTIME_DIRECTORY": "/run/switchd",
      "HOME": "/nonexistent",
    ]
    #expect(DefaultPaths.database(uid: 990, environment: env) == "/var/lib/switchd/switches.db")
    #expect(DefaultPaths.socket(uid: 990, environment: env) == "/run/switchd/switchd.sock")
    #expect(
      DefaultPaths.database(uid: 990, environment: ["STATE_DIRECTORY": "/a:/b"])
        == "/a/switches.db")
  }
}
