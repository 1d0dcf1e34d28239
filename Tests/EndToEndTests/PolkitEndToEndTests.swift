import Glibc
import SwitchTestSupport
import Testing

/// `Authorization=polkit` against the real pieces: a system bus and
/// Debian's polkitd 122 of the test's own (`PolkitWorld`), rules files
/// written by the test, the real switchd and switchctl. Clients run as
/// `pkuser` (in the group `pkstaff`) through setpriv.
@Suite(
  .enabled(if: PolkitWorld.unavailable == nil, Comment(rawValue: PolkitWorld.unavailable ?? "")))
struct PolkitEndToEndTests {
  static let user = PolkitWorld.user

  /// A rule granting `action` for `key` (nil: any switch) to the group pkstaff.
  static func grant(_ action: String, key: String? = nil) -> String {
    let keyTest = key.map { " && action.lookup(\"key\") == \"\($0)\"" } ?? ""
    return """
      polkit.addRule(function(action, subject) {
        polkit.log("asked: " + action + " for " + subject);
        if (action.id == "\(action)"\(keyTest) && subject.isInGroup("\(PolkitWorld.groupName)")) {
          return polkit.Result.YES;
        }
      });
      """
  }

  /// A daemon under polkit on `world`'s bus.
  static func daemon(_ world: PolkitWorld) throws -> DaemonFixture {
    let daemon = try DaemonFixture(
      daemonConf: "[Daemon]\nAdminGroup=\nAuthorization=polkit\n", start: false)
    try daemon.launch(environment: world.environment)
    try daemon.waitUntilServing()
    return daemon
  }

  static func checked(_ daemon: DaemonFixture, _ key: String) -> String {
    daemon.ctl(["get", key]).stdout.trimmingSpaces
  }

  /// Whether the daemon's process has libsystemd mapped.
  static func mapsLibsystemd(_ daemon: DaemonFixture) throws -> Bool {
    try readWholeFile("/proc/\(daemon.pid)/maps").contains("libsystemd")
  }

  /// sd-bus is loaded by the first question to polkit, not at start: a
  /// switchd that serves reads and root's writes never maps libsystemd.
  @Test func libsystemdIsLoadedByTheFirstQuestionToPolkit() throws {
    let world = try PolkitWorld(rules: [
      "50-wifi.rules": Self.grant("io.switchd.write", key: "wifi")
    ])
    let daemon = try Self.daemon(world)
    #expect(daemon.ctl(["toggle", "bluetooth"]).status == 0)  // root: no question
    #expect(Self.checked(daemon, "wifi") == "on")
    #expect(try !Self.mapsLibsystemd(daemon))
    let toggled = daemon.ctl(["toggle", "wifi"], asUser: Self.user)
    #expect(toggled.status == 0, "\(toggled.stderr)\n\(world.logs)")
    #expect(try Self.mapsLibsystemd(daemon))
  }

  @Test func aRuleGrantingOneSwitchToAGroupLetsAMemberChangeThatSwitchOnly() throws {
    let world = try PolkitWorld(rules: [
      "50-wifi.rules": Self.grant("io.switchd.write", key: "wifi")
    ])
    let daemon = try Self.daemon(world)
    let toggled = daemon.ctl(["toggle", "wifi"], asUser: Self.user)
    #expect(toggled.status == 0, "\(toggled.stderr)\n\(world.logs)")
    #expect(Self.checked(daemon, "wifi") == "off")
    let other = daemon.ctl(["--no-ask-password", "toggle", "bluetooth"], asUser: Self.user)
    #expect(other.status == 6, "\(other.stderr)\n\(world.logs)")
    #expect(other.stderr.contains("polkit"))
    #expect(Self.checked(daemon, "bluetooth") == "off")
    // Not in the group: refused for wifi too.
    let outsider = daemon.ctl(
      ["--no-ask-password", "toggle", "wifi"], asUser: PolkitWorld.otherUser)
    #expect(outsider.status == 6, "\(outsider.stderr)\n\(world.logs)")
    #expect(Self.checked(daemon, "wifi") == "off")
    // Reads never ask: `writable` says what the holds allow.
    let seen = daemon.ctl(["--json", "get", "bluetooth"], asUser: Self.user)
    #expect(seen.stdout.contains("\"writable\":true"))
  }

  @Test func rulesReadTheDetailsKeyCheckedAndUser() throws {
    let rule = """
      polkit.addRule(function(action, subject) {
        if (action.id == "io.switchd.write" && action.lookup("key") == "wifi" &&
            action.lookup("checked") == "false" && action.lookup("user") == "\(Self.user)") {
          return polkit.Result.YES;
        }
        if (action.id == "io.switchd.write") return polkit.Result.NO;
      });
      """
    let world = try PolkitWorld(rules: ["50-off-only.rules": rule])
    let daemon = try Self.daemon(world)
    #expect(daemon.ctl(["off", "wifi"], asUser: Self.user).status == 0)
    let on = daemon.ctl(["on", "wifi"], asUser: Self.user)
    #expect(on.status == 6, "\(on.stderr)\n\(world.logs)")
    #expect(on.stderr.contains("polkit did not authorize io.switchd.write"))
    // toggle asks with the value it would set: off → on is refused too.
    #expect(daemon.ctl(["toggle", "wifi"], asUser: Self.user).status == 6)
    #expect(Self.checked(daemon, "wifi") == "off")
  }

  /// A call on no switch carries the sentence an agent shows
  /// (`polkit.message`), which polkit takes from switchd (a trusted
  /// caller): the action's own message read "administer switches ()".
  @Test func aReloadAsksWithItsOwnPromptForTheAgent() throws {
    let rule = """
      polkit.addRule(function(action, subject) {
        if (action.id == "io.switchd.administer" && action.lookup("method") == "reload" &&
            action.lookup("polkit.message") ==
              "Authentication is required to reload switchd's configuration.") {
          return polkit.Result.YES;
        }
        if (action.id == "io.switchd.administer") return polkit.Result.NO;
      });
      """
    let world = try PolkitWorld(rules: ["50-reload.rules": rule])
    let daemon = try Self.daemon(world)
    let reload = daemon.ctl(["reload"], asUser: Self.user)
    #expect(reload.status == 0, "\(reload.stderr)\n\(world.logs)")
    // The rule grants only by that sentence: a lock (which names its
    // switch, and keeps the action's message) is not granted by it.
    #expect(daemon.ctl(["lock", "wifi"], asUser: Self.user).status == 6)
  }

  @Test func authAdminIsPermissionDeniedWithAuthenticationRequired() throws {
    let rule = """
      polkit.addRule(function(action, subject) {
        if (action.id == "io.switchd.write") return polkit.Result.AUTH_ADMIN;
      });
      """
    let world = try PolkitWorld(rules: ["50-auth.rules": rule])
    let daemon = try Self.daemon(world)
    let refused = daemon.ctl(
      ["--json", "--no-ask-password", "toggle", "bluetooth"], asUser: Self.user)
    #expect(refused.status == 6, "\(refused.stderr)\n\(world.logs)")
    #expect(refused.stdout.contains("\"authenticationRequired\":true"), "\(refused.stdout)")
    #expect(refused.stdout.contains("\"name\":\"PermissionDenied\""))
    #expect(refused.stderr.contains("authentication is required"))
    // The same refusal on the varlink socket, by name, with its parameters.
    guard access("/usr/bin/python3", X_OK) == 0 else { return }
    let varlinkSocket = daemon.directory + "/io.switchd.Switches"
    let script = """
      import socket
      s = socket.socket(socket.AF_UNIX)
      s.connect("\(varlinkSocket)")
      s.sendall(b'{"method":"io.switchd.Switches.Toggle","parameters":{"key":"bluetooth"}}\\0')
      data = b""
      while not data.endswith(b"\\0"):
          chunk = s.recv(65536)
          if not chunk: break
          data += chunk
      print(data[:-1].decode())
      """
    let run = runProcess([
      "/usr/bin/setpriv", "--reuid=\(Self.user)", "--regid=\(Self.user)", "--clear-groups",
      "/usr/bin/python3", "-c", script,
    ])
    #expect(
      run.stdout.contains("\"error\":\"io.switchd.Switches.PermissionDenied\""),
      "\(run.stdout) \(run.stderr)")
    #expect(run.stdout.contains("\"authenticationRequired\":true"))
  }

  @Test func removingTheRuleTakesEffectWithoutRestartingSwitchd() throws {
    let world = try PolkitWorld(rules: ["50-wifi.rules": Self.grant("io.switchd.write")])
    let daemon = try Self.daemon(world)
    let pid = daemon.pid
    #expect(daemon.ctl(["toggle", "wifi"], asUser: Self.user).status == 0)
    world.removeRule("50-wifi.rules")
    // polkitd reloads its rules on its own; nothing is cached in switchd.
    let refused = pollUntil(seconds: 60) {
      daemon.ctl(["--no-ask-password", "toggle", "wifi"], asUser: Self.user).status == 6
    }
    #expect(refused)
    #expect(daemon.pid == pid)
    try world.writeRule("50-wifi.rules", Self.grant("io.switchd.write"))
    #expect(
      pollUntil(seconds: 60) { daemon.ctl(["toggle", "wifi"], asUser: Self.user).status == 0 })
  }

  @Test func polkitUnreachableRefusesAndRootStillGetsIn() throws {
    let world = try PolkitWorld(rules: ["50-all.rules": Self.grant("io.switchd.administer")])
    let daemon = try Self.daemon(world)
    #expect(daemon.ctl(["toggle", "wifi"], asUser: Self.user).status == 0)
    world.stopPolkitd()
    let refused = daemon.ctl(["--no-ask-password", "toggle", "wifi"], asUser: Self.user)
    #expect(refused.status == 6, "\(refused.stderr)\n\(world.logs)")
    #expect(refused.stderr.contains("polkit is not reachable"), "\(refused.stderr)")
    // root is never asked: it writes and administers as ever.
    #expect(daemon.ctl(["toggle", "wifi"]).status == 0)
    #expect(daemon.ctl(["lock", "wifi"]).status == 0)
    // polkitd back: the next call asks it again (a new bus connection if needed).
    try world.startPolkitd()
    #expect(daemon.ctl(["unlock", "wifi"], asUser: Self.user).status == 0)
  }

  @Test func administerGrantsTheAdministratorsMethodsAndImpliesWrite() throws {
    let world = try PolkitWorld(rules: ["50-admin.rules": Self.grant("io.switchd.administer")])
    let daemon = try Self.daemon(world)
    let locked = daemon.ctl(["lock", "wifi", "--reason", "maintenance"], asUser: Self.user)
    #expect(locked.status == 0, "\(locked.stderr)\n\(world.logs)")
    // An administrator writes under a hold that does not fix the value.
    #expect(daemon.ctl(["toggle", "wifi"], asUser: Self.user).status == 0)
    // administer implies write (io.switchd.policy says so to polkit).
    #expect(daemon.ctl(["toggle", "bluetooth"], asUser: Self.user).status == 0)
    #expect(daemon.ctl(["reload"], asUser: Self.user).status == 0)
  }

  @Test func writeAloneDoesNotAdministerNorWriteWhatIsHeld() throws {
    let world = try PolkitWorld(rules: ["50-write.rules": Self.grant("io.switchd.write")])
    let daemon = try Self.daemon(world)
    #expect(daemon.ctl(["--no-ask-password", "lock", "wifi"], asUser: Self.user).status == 6)
    #expect(daemon.ctl(["lock", "wifi"]).status == 0)
    // Granted write, then the rules: read-only by an administrator.
    let held = daemon.ctl(["--no-ask-password", "toggle", "wifi"], asUser: Self.user)
    #expect(held.status == 3, "\(held.stderr)\n\(world.logs)")
  }

  /// Rule 20: the maker keeps or undoes its own tried change without
  /// asking polkit (it was asked `io.switchd.administer`, which a user who
  /// may only write does not have).
  @Test func theMakerSettlesItsTriedChangeWithoutAdministering() throws {
    let world = try PolkitWorld(rules: ["50-write.rules": Self.grant("io.switchd.write")])
    let daemon = try Self.daemon(world)
    for settle in ["confirm", "revert"] {
      let tried = daemon.ctl(
        ["--no-ask-password", "toggle", "wifi", "--confirm", "10m", "--no-ask"], asUser: Self.user)
      #expect(tried.status == 0, "\(tried.stderr)\n\(world.logs)")
      let settled = daemon.ctl(["--no-ask-password", settle, "wifi"], asUser: Self.user)
      #expect(settled.status == 0, "\(settle): \(settled.stderr)\n\(world.logs)")
      #expect(!settled.stdout.contains("unchanged"), "\(settle): \(settled.stdout)")
    }
  }

  /// Settling a tried change as another user is administering: polkit is
  /// asked (not the rules' refusal for a non-administrator), also when the
  /// caller made the trial, and a grant lets it through.
  @Test func settlingAsAnotherUserAsksPolkitToAdminister() throws {
    let world = try PolkitWorld(rules: [
      "50-write.rules": Self.grant("io.switchd.write"),
      "50-admin.rules": Self.grant("io.switchd.administer"),
    ])
    let daemon = try Self.daemon(world)
    let tried = daemon.ctl(
      ["--no-ask-password", "toggle", "wifi", "--confirm", "10m", "--no-ask"], asUser: Self.user)
    #expect(tried.status == 0, "\(tried.stderr)\n\(world.logs)")
    let settled = daemon.ctl(
      ["--no-ask-password", "--user", "0", "confirm", "wifi"], asUser: Self.user)
    #expect(settled.status == 0, "\(settled.stderr)\n\(world.logs)")
    #expect(!settled.stdout.contains("unchanged"), "\(settled.stdout)")
  }

  @Test func aWouldNeedAuthenticationAnswerIsNotLostToALaterNo() throws {
    // write: NO; administer: the shipped default (auth_admin without a session).
    let rule = """
      polkit.addRule(function(action, subject) {
        if (action.id == "io.switchd.write") return polkit.Result.NO;
      });
      """
    let world = try PolkitWorld(rules: ["50-no-write.rules": rule])
    let daemon = try Self.daemon(world)
    #expect(daemon.ctl(["lock", "wifi"]).status == 0)
    // A held switch asks administer (a challenge), then write (no).
    let refused = daemon.ctl(["--json", "--no-ask-password", "toggle", "wifi"], asUser: Self.user)
    #expect(refused.status == 6, "\(refused.stderr)\n\(world.logs)")
    #expect(refused.stdout.contains("\"authenticationRequired\":true"), "\(refused.stdout)")
    #expect(refused.stderr.contains("io.switchd.administer only after authentication"))
  }

  @Test func aCallerThatAllowedAskingIsNotToldToAllowIt() throws {
    // The shipped default for a process outside any session: auth_admin,
    // and no agent is registered for the relay's process.
    let world = try PolkitWorld()
    let daemon = try Self.daemon(world)
    let relay = try UserRelay(daemon, uid: Self.user)
    let client = try relay.client()
    let asking = try client.error(
      "toggle", #"{"key":"wifi","allowInteractiveAuthentication":true}"#)
    expectErrorObject(asking, -32004, "PermissionDenied", key: "wifi")
    #expect(asking["data"]?["authenticationRequired"]?.boolValue == true)
    let said = asking["message"]?.stringValue ?? ""
    #expect(said.contains("no authentication agent"), "\(said)\n\(world.logs)")
    #expect(!said.contains("ask again allowing"), "\(said)")
    // Without it, the advice is to allow asking.
    let silent = try client.error("toggle", keyParam("wifi"))
    #expect(silent["message"]?.stringValue?.contains("ask again allowing") == true, "\(silent)")
    #expect(Self.checked(daemon, "wifi") == "on")
  }

  /// Reading another user's values (get, list, history, watch naming a
  /// uid or `*`) is acting as another user: asked of polkit as
  /// administering, as writing them is. A polkit-granted administrator
  /// could set another user's value and not read it back.
  @Test func readingAsAnotherUserAsksPolkitToAdminister() throws {
    let world = try PolkitWorld(rules: ["50-admin.rules": Self.grant("io.switchd.administer")])
    let daemon = try DaemonFixture(
      switches: DaemonFixture.standardSwitches + "\n[notes]\nLabel=Notes\nDefault=on\nScope=user\n",
      daemonConf: "[Daemon]\nAdminGroup=\nAuthorization=polkit\n", start: false)
    try daemon.launch(environment: world.environment)
    try daemon.waitUntilServing()
    let other = PolkitWorld.otherUser
    _ = try daemon.client().result("set", "{\"key\":\"notes\",\"checked\":false,\"user\":\(other)}")
    let read = daemon.ctl(["--json", "get", "notes", "--user", "\(other)"], asUser: Self.user)
    #expect(read.status == 0, "\(read.stderr)\n\(world.logs)")
    #expect(read.stdout.contains("\"checked\":false"), "\(read.stdout)")
    let everyone = daemon.ctl(["--json", "history", "--user", "*"], asUser: Self.user)
    #expect(everyone.status == 0, "\(everyone.stderr)\n\(world.logs)")
    #expect(everyone.stdout.contains("\"user\":\(other)"), "\(everyone.stdout)")
    // A watch of every user's values, granted: it shows them as they change.
    let relay = try UserRelay(daemon, uid: Self.user)
    let watcher = try relay.client()
    _ = try watcher.result("watch", #"{"user":"*","keys":["notes"]}"#)
    _ = try daemon.client().result("set", "{\"key\":\"notes\",\"checked\":true,\"user\":\(other)}")
    let event = try watcher.nextEvent()
    #expect(event["user"]?.int64Value == Int64(other), "\(event.jsonText)")
    #expect(event["state"]?["checked"]?.boolValue == true)
    // Not in the group: refused, and polkit was asked (no rule grants it).
    let refused = daemon.ctl(
      ["--no-ask-password", "get", "notes", "--user", "\(Self.user)"], asUser: other)
    #expect(refused.status == 6, "\(refused.stderr)\n\(world.logs)")
    #expect(refused.stderr.contains("io.switchd.administer"), "\(refused.stderr)")
    // One's own values never ask.
    #expect(daemon.ctl(["get", "notes"], asUser: other).stdout == "on\n")
    // The grant stands while polkit is the authority: a reload to builtin
    // rules ends the watch (the member is no administrator there), and
    // nothing more of another user's values reaches it.
    try daemon.writeFile("switchd.conf", "[Daemon]\nAdminGroup=\n")
    _ = try daemon.client().result("reload")
    _ = try daemon.client().result("set", "{\"key\":\"notes\",\"checked\":false,\"user\":\(other)}")
    var after: [String] = []
    while let line = watcher.readLine() { after.append(line) }
    #expect(!after.contains { $0.contains("\"changed\"") }, "\(after)")
  }

  @Test func aGrantIsForTheValueAskedAboutNotTheOneAToggleGivesLater() throws {
    // The rule lets pkuser turn wifi on, never off, and waits (through a
    // program it spawns) until the test says go: meanwhile root changes wifi.
    let world = try PolkitWorld()
    let gate = world.directory + "/gate"
    mkdir(gate, 0o777)
    chmod(gate, 0o777)
    let rule = """
      polkit.addRule(function(action, subject) {
        if (action.id != "io.switchd.write" || action.lookup("key") != "wifi") return polkit.Result.NOT_HANDLED;
        polkit.spawn(["/bin/sh", "-c", "touch \(gate)/asked; i=0; while [ ! -e \(gate)/go ] && [ $i -lt 300 ]; do sleep 0.05; i=$((i+1)); done"]);
        return action.lookup("checked") == "true" ? polkit.Result.YES : polkit.Result.NO;
      });
      """
    try world.writeRule("50-gated.rules", rule)
    let daemon = try Self.daemon(world)
    // polkitd reads the new rules file by itself: wait until it answers by
    // it (turning wifi on is granted; the default would ask for a password).
    #expect(daemon.ctl(["off", "wifi"]).status == 0)
    writeMarker(gate + "/go")
    #expect(
      pollUntil(seconds: 60) {
        daemon.ctl(["--no-ask-password", "on", "wifi"], asUser: Self.user).status == 0
      })
    unlink(gate + "/go")
    unlink(gate + "/asked")
    #expect(daemon.ctl(["off", "wifi"]).status == 0)
    // pkuser toggles wifi (off → on: asked with checked "true", which the rule grants).
    let log = daemon.directory + "/toggle.log"
    let toggle = try Child(
      [
        "/usr/bin/setpriv", "--reuid=\(Self.user)", "--regid=\(Self.user)", "--clear-groups",
        Products.path("switchctl"), "--socket", daemon.socketPath, "--no-ask-password", "toggle",
        "wifi",
      ], logPath: log)
    #expect(pollUntil(seconds: 60) { access(gate + "/asked", F_OK) == 0 })
    // While polkit is asked, root turns wifi on: the toggle would now turn it off.
    #expect(daemon.ctl(["on", "wifi"]).status == 0)
    writeMarker(gate + "/go")
    #expect(toggle.wait(seconds: 60) == 6, "\((try? readWholeFile(log)) ?? "")")
    #expect(((try? readWholeFile(log)) ?? "").contains("changed while polkit was asked"))
    #expect(Self.checked(daemon, "wifi") == "on")
  }

  @Test(.enabled(if: access("/usr/bin/python3", X_OK) == 0, "needs /usr/bin/python3"))
  func aCallWaitingForPolkitKeepsTheConnectionsOrder() throws {
    let world = try PolkitWorld(rules: ["50-wifi.rules": Self.grant("io.switchd.write")])
    let daemon = try Self.daemon(world)
    // Two requests in one write: the get must see the toggle it follows.
    let script = """
      import socket
      s = socket.socket(socket.AF_UNIX)
      s.connect("\(daemon.socketPath)")
      s.sendall(b'{"jsonrpc":"2.0","id":1,"method":"toggle","params":{"key":"wifi"}}\\n'
                b'{"jsonrpc":"2.0","id":2,"method":"get","params":{"key":"wifi"}}\\n')
      data = b""
      while data.count(b"\\n") < 2:
          chunk = s.recv(65536)
          if not chunk: break
          data += chunk
      print(data.decode())
      """
    let run = runProcess([
      "/usr/bin/setpriv", "--reuid=\(Self.user)", "--regid=\(Self.user)", "--clear-groups",
      "/usr/bin/python3", "-c", script,
    ])
    let lines = run.stdout.split(separator: "\n").map(String.init)
    #expect(lines.count == 2, "\(run.stdout) \(run.stderr)")
    guard lines.count == 2 else { return }
    #expect(lines[0].contains("\"id\":1") && lines[0].contains("\"changed\":true"))
    #expect(lines[1].contains("\"id\":2") && lines[1].contains("\"checked\":false"))
  }

  /// A world whose one rule answers AUTH_ADMIN for `action`, and its
  /// daemon; nil (and why, printed) without Debian's text agent.
  static func askingWorld(_ action: String) throws -> (PolkitWorld, DaemonFixture)? {
    guard access("/usr/bin/pkttyagent", X_OK) == 0 else {
      print("skipped: needs /usr/bin/pkttyagent (Debian's polkitd)")
      return nil
    }
    let rule = """
      polkit.addRule(function(action, subject) {
        if (action.id == "\(action)") return polkit.Result.AUTH_ADMIN;
      });
      """
    let world = try PolkitWorld(rules: ["50-auth.rules": rule])
    return (world, try Self.daemon(world))
  }

  /// `switchctl ARGUMENTS` as pkuser on `world`'s bus, run on a terminal
  /// (script(1) gives it one), its output in `log`.
  static func onTerminal(
    _ world: PolkitWorld, _ daemon: DaemonFixture, _ arguments: [String], log: String
  ) throws -> Child {
    let command =
      [
        "/usr/bin/setpriv", "--reuid=\(Self.user)", "--regid=\(Self.user)", "--clear-groups",
        "/usr/bin/env", "DBUS_SYSTEM_BUS_ADDRESS=\(world.busAddress)",
        Products.path("switchctl"), "--socket", daemon.socketPath,
      ] + arguments
    return try Child(
      ["/usr/bin/script", "-qfc", command.joined(separator: " "), "/dev/null"], logPath: log)
  }

  @Test(.enabled(if: access("/usr/bin/script", X_OK) == 0, "needs script (bsdutils)"))
  func switchctlOnATerminalBringsPolkitsTextAgent() throws {
    guard let (world, daemon) = try Self.askingWorld("io.switchd.write") else { return }
    // On a terminal switchctl starts pkttyagent for itself and lets polkit
    // ask: the agent's prompt appears.
    let log = daemon.directory + "/terminal.log"
    let terminal = try Self.onTerminal(world, daemon, ["toggle", "bluetooth"], log: log)
    let prompted = pollUntil(seconds: 60) {
      ((try? readWholeFile(log)) ?? "").contains("AUTHENTICATING FOR io.switchd.write")
    }
    #expect(prompted, "\((try? readWholeFile(log)) ?? "")")
    terminal.signal(SIGKILL)
    terminal.wait(seconds: 30)
    // --no-ask-password on a terminal: no agent, and the refusal says why.
    let quietLog = daemon.directory + "/quiet.log"
    let quiet = try Self.onTerminal(
      world, daemon, ["--no-ask-password", "toggle", "bluetooth"], log: quietLog)
    quiet.wait(seconds: 60)
    let said = (try? readWholeFile(quietLog)) ?? ""
    #expect(!said.contains("AUTHENTICATING"))
    #expect(said.contains("authentication is required"), "\(said)")
    #expect(Self.checked(daemon, "bluetooth") == "off")
  }
}

extension PolkitEndToEndTests {
  /// `switchctl watch --user '*'` on a terminal: naming users asks polkit
  /// to administer, and the person is asked through the text agent.
  @Test(.enabled(if: access("/usr/bin/script", X_OK) == 0, "needs script (bsdutils)"))
  func aWatchNamingUsersLetsPolkitAskOnATerminal() throws {
    guard let (world, daemon) = try Self.askingWorld("io.switchd.administer") else { return }
    let log = daemon.directory + "/watch-terminal.log"
    let terminal = try Self.onTerminal(world, daemon, ["watch", "--user", "'*'"], log: log)
    let prompted = pollUntil(seconds: 60) {
      ((try? readWholeFile(log)) ?? "").contains("AUTHENTICATING FOR io.switchd.administer")
    }
    #expect(prompted, "\((try? readWholeFile(log)) ?? "")\n\(world.logs)")
    terminal.signal(SIGKILL)
    terminal.wait(seconds: 30)
  }

  /// Under Authorization=builtin nothing asks polkit, so switchctl on a
  /// terminal starts no agent: pkttyagent, finding no polkit, printed
  /// "Authorization not available…" before every write of a user.
  @Test(.enabled(if: access("/usr/bin/script", X_OK) == 0, "needs script (bsdutils)"))
  func switchctlOnATerminalStartsNoAgentWhenNothingAsksPolkit() throws {
    guard access("/usr/bin/pkttyagent", X_OK) == 0 else {
      print("skipped: needs /usr/bin/pkttyagent (Debian's polkitd)")
      return
    }
    let daemon = try DaemonFixture()
    let command = [
      "/usr/bin/setpriv", "--reuid=\(humanUID)", "--regid=\(humanUID)", "--clear-groups",
      "/usr/bin/env", "DBUS_SYSTEM_BUS_ADDRESS=unix:path=\(daemon.directory)/no-bus",
      Products.path("switchctl"), "--socket", daemon.socketPath, "toggle", "bluetooth",
    ].joined(separator: " ")
    let log = daemon.directory + "/terminal.log"
    let terminal = try Child(["/usr/bin/script", "-qfc", command, "/dev/null"], logPath: log)
    terminal.wait(seconds: 60)
    let said = (try? readWholeFile(log)) ?? ""
    #expect(said.contains("bluetooth: on"), "\(said)")
    #expect(!said.contains("Authorization") && !said.contains("polkit"), "\(said)")
  }
}

/// An empty file at `path`, made by the test (a gate a rule waits for).
private func writeMarker(_ path: String) {
  let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
  if fd >= 0 { close(fd) }
}

extension String {
  fileprivate var trimmingSpaces: String {
    var text = Substring(self)
    while text.last?.isWhitespace == true { text = text.dropLast() }
    return String(text)
  }
}
