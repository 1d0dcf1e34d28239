import Glibc
import SwitchProtocol
import SwitchTestSupport
import Testing

/// Issue 11 item 9 from the outside: error objects that name the param and
/// the policy file, a refused reload that lists every problem, a reload that
/// says what waits for a restart, and what `status` tells.
@Suite struct MessagesEndToEndTests {
  /// `bluetooth` is held at line 2, `email.marketing` disabled at line 7.
  static let corpPolicy = """
    # placed by the fleet's configuration management
    [bluetooth]
    ReadOnly=yes
    Checked=off
    Reason=Bluetooth is turned off by your organisation.

    [email.marketing]
    Disabled=yes
    Reason=Marketing email is not offered on managed devices.
    """

  @Test func invalidParamsNamesTheParamAndTheKey() throws {
    let daemon = try DaemonFixture()
    let client = try daemon.client()
    let cases: [(String, String, String, String?)] = [
      ("set", #"{"key":"wifi","checked":1}"#, "checked", "wifi"),
      ("set", #"{"key":"wifi"}"#, "checked", "wifi"),
      ("get", #"{"key":"wifi","extra":true}"#, "extra", "wifi"),
      ("get", #"{"key":"Not A Key"}"#, "key", nil),
      ("get", #"["wifi"]"#, "params", nil),
      ("toggle", #"{"key":"wifi","ifRevision":-1}"#, "ifRevision", "wifi"),
      ("history", #"{"limit":0}"#, "limit", nil),
      ("watch", #"{"keys":[]}"#, "keys", nil),
      ("watch", #"{"since":999}"#, "since", nil),
      ("unwatch", #"{"watch":"w99"}"#, "watch", nil),
      ("status", #"{"verbose":true}"#, "verbose", nil),
    ]
    for (method, params, param, key) in cases {
      let error = try client.error(method, params)
      expectErrorObject(error, -32602, "InvalidParams", key: key, "\(method) \(params)")
      #expect(error["data"]?["param"]?.stringValue == param, "\(method) \(params)")
      if key == nil { #expect(error["data"]?["key"] == nil, "\(method) \(params)") }
    }
  }

  @Test func aPolicyRefusalNamesTheFileAndLine() throws {
    let daemon = try DaemonFixture(policies: ["50-corp.conf": Self.corpPolicy])
    let client = try daemon.client()

    // Even an administrator cannot set a value a policy fixes, nor lift it.
    for (method, params) in [
      ("set", #"{"key":"bluetooth","checked":true}"#), ("unlock", keyParam("bluetooth")),
      ("lock", keyParam("bluetooth")),
    ] {
      let error = try client.error(method, params)
      expectErrorObject(error, -32002, "ReadOnly", key: "bluetooth", "\(method)")
      #expect(error["data"]?["heldBy"]?.stringValue == "policy")
      #expect(error["data"]?["policySource"]?.stringValue == "50-corp.conf:2", "\(method)")
    }
    for (method, params) in [
      ("set", #"{"key":"email.marketing","checked":false}"#),
      ("enable", keyParam("email.marketing")),
      ("disable", keyParam("email.marketing")),
    ] {
      let error = try client.error(method, params)
      expectErrorObject(error, -32003, "Disabled", key: "email.marketing", "\(method)")
      #expect(error["data"]?["disabledBy"]?.stringValue == "policy")
      #expect(error["data"]?["policySource"]?.stringValue == "50-corp.conf:7", "\(method)")
    }
    // An administrator's hold names no file.
    _ = try client.result("disable", keyParam("wifi"))
    let byAdmin = try client.error("toggle", keyParam("wifi"))
    expectErrorObject(byAdmin, -32003, "Disabled", key: "wifi")
    #expect(byAdmin["data"]?["policySource"] == .null)

    let ctl = daemon.ctl(["on", "bluetooth"])
    #expect(ctl.status == 3)
    #expect(
      ctl.stderr
        == "switchctl: bluetooth is read-only: Bluetooth is turned off by your organisation. "
        + "(held by policy 50-corp.conf:2; edit it and reload)\n")
    let json = daemon.ctl(["--json", "enable", "email.marketing"])
    #expect(json.status == 4)
    let object = try JSONParser.parse(Array(json.stdout.utf8.dropLast()), maxDepth: 16)
    #expect(object["data"]?["policySource"]?.stringValue == "50-corp.conf:7")
    #expect(
      json.stderr.hasSuffix("(disabled by policy 50-corp.conf:7; edit it and reload)\n"))
  }

  @Test func aRefusedReloadListsEveryError() throws {
    let daemon = try DaemonFixture()
    let client = try daemon.client()
    try daemon.writeFile("switches.d/20-bad.conf", "[Bad Key]\nLabel=Bad\n")
    try daemon.writeFile("policy.d/70-bad.conf", "[wifi]\nReadOnly=maybe\n")
    let error = try client.error("reload")
    expectErrorObject(error, -32010, "InvalidConfig")
    let errors = error["data"]?["errors"]?.arrayValue?.compactMap(\.stringValue) ?? []
    #expect(errors.count == 2, "\(errors)")
    #expect(errors.contains { $0.hasPrefix("switches.d/20-bad.conf:1: ") })
    #expect(errors.contains { $0.hasPrefix("policy.d/70-bad.conf:2: ") })
    let message = error["message"]?.stringValue ?? ""
    for problem in errors { #expect(message.contains(problem)) }
    #expect(!message.contains("more)"))

    let ctl = daemon.ctl(["reload"])
    #expect(ctl.status == 1)
    let lines = ctl.stderr.split(separator: "\n").map(String.init)
    #expect(
      lines.first == "switchctl: the configuration was refused (2 errors); the running one stays:")
    #expect(Array(lines.dropFirst()) == errors.map { "  " + $0 })

    let status = try client.result("status")
    #expect(status["lastReload"]?["result"]?.stringValue == "refused")
    #expect(status["lastReload"]?["errors"]?.arrayValue?.count == 2)
  }

  /// `--config cfg` is named whole: a client runs in another directory.
  @Test func aRelativeConfigurationDirectoryIsShownWhole() throws {
    let daemon = try DaemonFixture(start: false)
    _ = try daemon.launch(
      through: ["/usr/bin/env", "--chdir=" + daemon.directory],
      extraArguments: ["--config", "config"])
    try daemon.waitUntilServing()
    let status = try daemon.client().result("status")
    #expect(status["configDirectory"]?.stringValue == daemon.directory + "/config")
  }

  @Test func statusTellsTheConfigurationTheLastReloadAndTheCaller() throws {
    let daemon = try DaemonFixture(policies: ["50-corp.conf": Self.corpPolicy])
    let client = try daemon.client()
    var status = try client.result("status")
    #expect(status["configDirectory"]?.stringValue == daemon.configDirectory)
    #expect(status["policies"]?.int64Value == 2)
    #expect(status["lastReload"] == .null)
    let caller = status["caller"]
    #expect(caller?["uid"]?.int64Value == Int64(getuid()))
    #expect(caller?["gid"]?.int64Value == Int64(getgid()))
    // The client runs as the daemon's own uid: an administrator of it.
    #expect(caller?["administrator"]?.boolValue == true)
    #expect(caller?["writesSystemSwitches"]?.boolValue == true)

    daemon.removeFile("policy.d/50-corp.conf")
    _ = try client.result("reload")
    status = try client.result("status")
    #expect(status["policies"]?.int64Value == 0)
    #expect(status["lastReload"]?["result"]?.stringValue == "applied")
    #expect(status["lastReload"]?["errors"] == .array([]))
    #expect(status["lastReload"]?["time"]?.stringValue?.hasSuffix("Z") == true)

    let text = daemon.ctl(["status"])
    #expect(text.status == 0)
    #expect(text.stdout.contains("\nconfigDirectory: \(daemon.configDirectory)\n"))
    #expect(text.stdout.contains("\npolicies: 0\n"))
    #expect(text.stdout.contains(" applied\n"))
    #expect(text.stdout.contains("\ncaller: uid \(getuid()), gid \(getgid()), administrator: "))
  }

  @Test func aReloadSaysWhatTakesEffectOnlyAtRestart() throws {
    let daemon = try DaemonFixture()
    let client = try daemon.client()
    try daemon.writeFile(
      "switchd.conf",
      "[Daemon]\nAdminGroup=\nDatabase=\(daemon.directory)/elsewhere.db\nMaxConnections=100\n")
    let reload = try client.result("reload")
    #expect(reload["restartRequired"] == .array([.string("Database")]))
    #expect(
      pollUntil {
        daemon.log.contains("Database changed; that takes effect only when switchd restarts")
      })
    // Still pending at the next reload: the daemon keeps its database until it restarts.
    let ctl = daemon.ctl(["reload"])
    #expect(ctl.status == 0)
    #expect(
      ctl.stdout.contains(
        "restart required: Database changed; that takes effect only when switchd restarts"))
    // A setting a reload applies is not listed.
    try daemon.writeFile("switchd.conf", "[Daemon]\nAdminGroup=\nMaxConnections=50\n")
    #expect(try client.result("reload")["restartRequired"] == .array([]))
  }
}
