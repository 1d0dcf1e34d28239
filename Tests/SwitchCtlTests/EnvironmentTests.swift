import SwitchCore
import Testing

@testable import SwitchCtl

/// Where switchctl looks for the daemon: `--socket`, then `$SWITCHD_SOCKET`,
/// then the default for the uid.
@Suite struct EnvironmentTests {
  let userSocket = "/run/user/1000/switchd/switchd.sock"

  @Test func flagWinsOverEverything() {
    let environment = Environment.fixed(
      ["SWITCHD_SOCKET": "/env.sock", "XDG_RUNTIME_DIR": "/run/user/1000"], files: [userSocket])
    #expect(environment.socketPath(flag: "/flag.sock") == "/flag.sock")
  }

  @Test func variableWinsOverTheDefault() {
    let environment = Environment.fixed(
      ["SWITCHD_SOCKET": "/env.sock", "XDG_RUNTIME_DIR": "/run/user/1000"], files: [userSocket])
    #expect(environment.socketPath(flag: nil) == "/env.sock")
    #expect(Environment.fixed(["SWITCHD_SOCKET": "/e"], uid: 0).socketPath(flag: nil) == "/e")
  }

  @Test func emptyValuesAreIgnored() {
    let environment = Environment.fixed(["SWITCHD_SOCKET": ""], uid: 0)
    #expect(environment.socketPath(flag: "") == DefaultPaths.systemSocket)
  }

  @Test func rootUsesTheSystemSocket() {
    let environment = Environment.fixed(
      ["XDG_RUNTIME_DIR": "/run/user/0"], uid: 0, files: ["/run/user/0/switchd/switchd.sock"])
    #expect(environment.socketPath(flag: nil) == "/run/switchd/switchd.sock")
  }

  @Test func aUserUsesTheirOwnDaemonWhenItsSocketExists() {
    let environment = Environment.fixed(["XDG_RUNTIME_DIR": "/run/user/1000"], files: [userSocket])
    #expect(environment.socketPath(flag: nil) == userSocket)
    let noRuntimeDir = Environment.fixed([:], uid: 1234, files: ["/tmp/switchd-1234/switchd.sock"])
    #expect(noRuntimeDir.socketPath(flag: nil) == "/tmp/switchd-1234/switchd.sock")
  }

  @Test func aUserFallsBackToTheSystemSocket() {
    let environment = Environment.fixed(["XDG_RUNTIME_DIR": "/run/user/1000"])
    #expect(environment.socketPath(flag: nil) == "/run/switchd/switchd.sock")
  }

  @Test func theSocketInUseIsTheOneNamedInTheError() {
    let run = runCtl(
      ["get", "wifi"], environment: Environment.fixed(["SWITCHD_SOCKET": "/nowhere/env.sock"]))
    #expect(run.code.rawValue == 7)
    #expect(run.err.first?.contains("/nowhere/env.sock") == true)
  }
}
