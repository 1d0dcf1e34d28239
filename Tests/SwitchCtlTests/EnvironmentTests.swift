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
    #expect(environment.socket(flag: "/flag.sock").path == "/flag.sock")
  }

  @Test func variableWinsOverTheDefault() {
    let environment = Environment.fixed(
      ["SWITCHD_SOCKET": "/env.sock", "XDG_RUNTIME_DIR": "/run/user/1000"], files: [userSocket])
    #expect(environment.socket(flag: nil).path == "/env.sock")
    #expect(Environment.fixed(["SWITCHD_SOCKET": "/e"], uid: 0).socket(flag: nil).path == "/e")
  }

  @Test func emptyValuesAreIgnored() {
    let environment = Environment.fixed(["SWITCHD_SOCKET": ""], uid: 0)
    #expect(environment.socket(flag: "").path == DefaultPaths.systemSocket)
  }

  @Test func rootUsesTheSystemSocket() {
    let environment = Environment.fixed(
      ["XDG_RUNTIME_DIR": "/run/user/0"], uid: 0, files: ["/run/user/0/switchd/switchd.sock"])
    #expect(environment.socket(flag: nil).path == "/run/switchd/switchd.sock")
  }

  @Test func aUserUsesTheirOwnDaemonWhenItsSocketExists() {
    let environment = Environment.fixed(["XDG_RUNTIME_DIR": "/run/user/1000"], files: [userSocket])
    #expect(environment.socket(flag: nil).path == userSocket)
    let noRuntimeDir = Environment.fixed([:], uid: 1234, files: ["/tmp/switchd-1234/switchd.sock"])
    #expect(noRuntimeDir.socket(flag: nil).path == "/tmp/switchd-1234/switchd.sock")
  }

  @Test func aUserFallsBackToTheSystemSocket() {
    let environment = Environment.fixed(["XDG_RUNTIME_DIR": "/run/user/1000"])
    #expect(environment.socket(flag: nil).path == "/run/switchd/switchd.sock")
  }

  @Test func theSocketInUseIsTheOneNamedInTheError() {
    let run = runCtl(
      ["get", "wifi"], environment: Environment.fixed(["SWITCHD_SOCKET": "/nowhere/env.sock"]))
    #expect(run.code.rawValue == 7)
    #expect(run.err.first?.contains("/nowhere/env.sock") == true)
  }

  /// Anyone may make `/tmp/switchd-UID` first and listen in it: the user's
  /// own socket there is used only when the folder is theirs alone.
  @Test func anOwnSocketInAFolderThatIsNotTheUsersAloneIsPassedOver() {
    let own = "/tmp/switchd-1234/switchd.sock"
    var environment = Environment.fixed([:], uid: 1234, files: [own])
    var asked: [String] = []
    environment.privateDirectoryProblem = { path in
      asked.append(path)
      return "refusing to use \(path): it is owned by uid 65534, not 1234"
    }
    let socket = environment.socket(flag: nil)
    #expect(asked == ["/tmp/switchd-1234"])
    #expect(socket.path == DefaultPaths.systemSocket)
    #expect(socket.passedOver?.contains("not using \(own)") == true, "\(socket)")
    #expect(socket.passedOver?.contains("owned by uid 65534") == true, "\(socket)")

    // Said on stderr first, whatever the system socket answers.
    let run = runCtl(["get", "wifi"], environment: environment)
    #expect(run.err.first == "switchctl: " + (socket.passedOver ?? ""), "\(run.err)")
  }

  @Test func anOwnSocketUnderTheRuntimeDirectoryIsNotAskedAbout() {
    var environment = Environment.fixed(
      ["XDG_RUNTIME_DIR": "/run/user/1000"], files: [userSocket])
    environment.privateDirectoryProblem = { _ in "never asked" }
    #expect(environment.socket(flag: nil).path == userSocket)
    #expect(environment.socket(flag: nil).passedOver == nil)
  }

  /// A variable that is not UTF-8 is refused only by a command that would
  /// find the socket from it (it came repaired, naming another path).
  @Test func aVariableThatIsNotUTF8IsRefusedOnlyWhenRead() {
    // The refusal's sentence, or nil when the command went on (to a daemon
    // that is not there, or to print its text).
    func refusal(_ arguments: [String], _ environment: Environment) -> String? {
      let result = runCtl(arguments, environment: environment)
      guard result.code == .usage, let line = result.err.first else { return nil }
      return String(line.dropFirst("switchctl: ".count))
    }
    var user = Environment.fixed([:])
    user.notUTF8 = ["XDG_RUNTIME_DIR"]
    #expect(
      refusal(["get", "wifi"], user)
        == "$XDG_RUNTIME_DIR is not valid UTF-8: a path must be UTF-8")
    #expect(refusal(["get", "wifi", "--socket", "/run/s.sock"], user) == nil)
    #expect(refusal(["--version"], user) == nil)
    #expect(refusal(["help", "get"], user) == nil)
    var withSocket = Environment.fixed(["SWITCHD_SOCKET": "/run/s.sock"])
    withSocket.notUTF8 = ["XDG_RUNTIME_DIR"]
    #expect(refusal(["get", "wifi"], withSocket) == nil)
    var root = Environment.fixed([:], uid: 0)
    root.notUTF8 = ["XDG_RUNTIME_DIR"]
    #expect(refusal(["get", "wifi"], root) == nil)
    root.notUTF8 = ["SWITCHD_SOCKET"]
    #expect(
      refusal(["get", "wifi"], root)
        == "$SWITCHD_SOCKET is not valid UTF-8: a path must be UTF-8")
  }
}
