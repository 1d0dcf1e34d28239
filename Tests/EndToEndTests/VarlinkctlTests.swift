import Glibc
import SwitchProtocol
import SwitchTestSupport
import Testing

/// systemd's own varlink client, `varlinkctl` (systemd 255 and later),
/// against the real daemon: it validates the shipped interface definition,
/// reads the service's info and definition, calls methods, follows `Watch`
/// with `--more`, and exits non-zero naming an error. The binary is the one
/// `SWITCHD_VARLINKCTL` names (`.ci/varlinkctl.sh` prints one: Debian
/// trixie's, run through trixie's own ld.so); without it the suite is
/// skipped, with the reason.
@Suite(.enabled(if: Varlinkctl.path != nil, Comment(rawValue: Varlinkctl.unavailable ?? "")))
struct VarlinkctlTests {
  static let prefix = "io.switchd.Switches."

  @Test func validateIDLAcceptsTheShippedDefinitionAndRejectsABrokenOne() throws {
    let definition = VarlinkEndToEndTests.definitionPath
    let valid = Varlinkctl.run(["validate-idl", definition])
    #expect(valid.status == 0, "\(valid.stderr)")
    // It prints the definition back as it parsed it: every method is there.
    let methods = try Self.shippedMethods()
    #expect(methods.count == 16)
    #expect(methods.contains("Confirm") && methods.contains("Revert"))
    for method in methods {
      #expect(valid.stdout.contains("method \(method)("), "\(method)")
    }
    // A check that checks: a type that does not exist is refused.
    let text = try readWholeFile(definition)
    let directory = try makeTemporaryDirectory("switchd-varlinkctl")
    defer { removeTree(directory) }
    let broken = directory + "/broken.varlink"
    try writeWholeFile(
      broken, text.replacing("key: string,", with: "key: Nonexistent,", maxReplacements: 1))
    let refused = Varlinkctl.run(["validate-idl", broken])
    #expect(refused.status != 0, "validate-idl accepted a field of an undefined type")
  }

  @Test func infoNamesTheServiceAndBothInterfaces() throws {
    let daemon = try DaemonFixture()
    let run = Varlinkctl.run(["--json=short", "info", daemon.varlinkPath])
    #expect(run.status == 0, "\(run.stderr)")
    let info = try JSONParser.parse(run.stdout, maxDepth: 64)
    let status = try daemon.varlink().result("Status")
    #expect(info["vendor"]?.stringValue == "switchd")
    #expect(info["product"]?.stringValue == "switchd")
    #expect(info["version"] == status["version"])
    #expect(info["url"]?.stringValue?.isEmpty == false)
    #expect(
      info["interfaces"]?.arrayValue?.compactMap(\.stringValue).sorted()
        == ["io.switchd.Switches", "org.varlink.service"])
    let human = Varlinkctl.run(["info", daemon.varlinkPath])
    #expect(human.status == 0 && human.stdout.contains("io.switchd.Switches"), "\(human.stderr)")
    print("checked with \(Varlinkctl.version)")
  }

  @Test func introspectServesTheShippedDefinition() throws {
    let daemon = try DaemonFixture()
    let introspected = Varlinkctl.run(["introspect", daemon.varlinkPath, "io.switchd.Switches"])
    #expect(introspected.status == 0, "\(introspected.stderr)")
    // varlinkctl prints a definition in its own layout: the one it serves
    // is the shipped file as varlinkctl prints it, comments and all.
    let shipped = Varlinkctl.run(["validate-idl", VarlinkEndToEndTests.definitionPath])
    #expect(!introspected.stdout.isEmpty && introspected.stdout == shipped.stdout)
    // And byte for byte, as the service interface returns it.
    let described = Varlinkctl.run([
      "--json=short", "call", daemon.varlinkPath, "org.varlink.service.GetInterfaceDescription",
      #"{"interface":"io.switchd.Switches"}"#,
    ])
    #expect(described.status == 0, "\(described.stderr)")
    #expect(
      try JSONParser.parse(described.stdout, maxDepth: 8)["description"]?.stringValue
        == readWholeFile(VarlinkEndToEndTests.definitionPath))
    let methods = Varlinkctl.run(["list-methods", daemon.varlinkPath, "io.switchd.Switches"])
    #expect(methods.status == 0, "\(methods.stderr)")
    #expect(methods.outLines == (try Self.shippedMethods()).sorted().map { Self.prefix + $0 })
  }

  @Test func callGetSetAndToggleAnswerTheSwitchWithItsRevision() throws {
    let daemon = try DaemonFixture()
    let address = daemon.varlinkPath
    let got = try Varlinkctl.call(address, "Get", #"{"key":"wifi"}"#)["switch"]
    #expect(got?["key"]?.stringValue == "wifi" && got?["label"]?.stringValue == "Wi-Fi")
    #expect(got?["checked"]?.boolValue == true && got?["revision"]?.int64Value == 0)
    let set = try Varlinkctl.call(address, "Set", #"{"key":"wifi","checked":false}"#)
    #expect(set["changed"]?.boolValue == true)
    #expect(set["switch"]?["checked"]?.boolValue == false)
    #expect(set["switch"]?["revision"]?.int64Value == 1)
    let again = try Varlinkctl.call(address, "Set", #"{"key":"wifi","checked":false}"#)
    #expect(again["changed"]?.boolValue == false && again["switch"]?["revision"]?.int64Value == 1)
    let toggled = try Varlinkctl.call(address, "Toggle", #"{"key":"wifi","ifRevision":1}"#)
    #expect(toggled["changed"]?.boolValue == true)
    #expect(toggled["switch"]?["checked"]?.boolValue == true)
    #expect(toggled["switch"]?["revision"]?.int64Value == 2)
    let other = try Varlinkctl.call(address, "Toggle", #"{"key":"bluetooth"}"#)
    #expect(other["switch"]?["checked"]?.boolValue == true)
    #expect(other["switch"]?["revision"]?.int64Value == 3)
    // The same switch on the JSON-RPC socket.
    #expect(try daemon.client().result("get", #"{"key":"wifi"}"#) == toggled["switch"])
    // --oneway: sent, not answered, carried out (the daemon sees the hang-up
    // right after the call: issue 25's oneway fix).
    let oneway = Varlinkctl.run([
      "call", "--oneway", address, Self.prefix + "Toggle", #"{"key":"wifi"}"#,
    ])
    #expect(oneway.status == 0 && oneway.stdout.isEmpty, "\(oneway.stderr)")
    let observer = try daemon.varlink()
    #expect(
      try pollUntil(seconds: 30) { try observer.result("Status")["revision"]?.int64Value == 4 })
    let wifi = try observer.result("Get", #"{"key":"wifi"}"#)["switch"]
    #expect(wifi?["checked"]?.boolValue == false)
  }

  @Test func callMoreOnWatchPrintsTheSnapshotThenAnEventPerChange() throws {
    let daemon = try DaemonFixture()
    let output = daemon.directory + "/watch.out"
    let errors = daemon.directory + "/watch.err"
    let watch = try Child(
      Varlinkctl.argv([
        "--json=short", "call", "--more", "--timeout=infinity", daemon.varlinkPath,
        Self.prefix + "Watch", #"{"keys":["wifi"]}"#,
      ]), logPath: output, errorLogPath: errors)
    defer { watch.stop() }
    func replies() -> [JSONValue] { Varlinkctl.replies(in: (try? readWholeFile(output)) ?? "") }
    func printed() -> String {
      "stdout: \((try? readWholeFile(output)) ?? "") stderr: \((try? readWholeFile(errors)) ?? "")"
    }
    #expect(pollUntil(seconds: 60) { !replies().isEmpty || watch.hasExited }, "\(printed())")
    let snapshot = try #require(replies().first, "\(printed())")
    #expect(snapshot["revision"]?.int64Value == 0)
    #expect(snapshot["switches"]?.arrayValue?.compactMap { $0["key"]?.stringValue } == ["wifi"])
    // The snapshot is sent once the watch is in place: a change made now,
    // from another client on the other socket, is its next reply.
    _ = try daemon.client().result("toggle", #"{"key":"bluetooth"}"#)
    _ = try daemon.client().result("set", #"{"key":"wifi","checked":false}"#)
    #expect(pollUntil(seconds: 60) { replies().count >= 2 || watch.hasExited }, "\(printed())")
    let all = replies()
    #expect(all.count == 2, "\(printed())")
    let event = all.dropFirst().first?["event"]
    #expect(event?["revision"]?.int64Value == 2 && event?["key"]?.stringValue == "wifi")
    #expect(event?["cause"]?.stringValue == "set")
    #expect(event?["state"]?["checked"]?.boolValue == false)
    #expect(event?["previous"]?["checked"]?.boolValue == true)
    #expect(!watch.hasExited, "varlinkctl ended the watch: \(printed())")
  }

  @Test func anErrorExitsNonZeroNamingItWithItsParameters() throws {
    // A policy's hold refuses root too (an administrator's lock would not).
    let daemon = try DaemonFixture(policies: [
      "50-held.conf": "[wifi]\nReadOnly=yes\nChecked=on\nReason=Held.\n"
    ])
    let address = daemon.varlinkPath
    let unknown = Varlinkctl.run([
      "--json=short", "call", address, Self.prefix + "Get", #"{"key":"nope"}"#,
    ])
    #expect(unknown.status == 1, "\(unknown.status): \(unknown.stderr)")
    #expect(unknown.stderr.contains(Self.prefix + "UnknownSwitch"), "\(unknown.stderr)")
    #expect(try JSONParser.parse(unknown.stdout, maxDepth: 8)["key"]?.stringValue == "nope")
    // --graceful= takes a named error for success.
    let graceful = Varlinkctl.run([
      "call", "--graceful=\(Self.prefix)UnknownSwitch", address, Self.prefix + "Get",
      #"{"key":"nope"}"#,
    ])
    #expect(graceful.status == 0, "\(graceful.stderr)")
    let errors: [(String, String, String)] = [
      ("Toggle", #"{"key":"wifi"}"#, Self.prefix + "ReadOnly"),
      ("Toggle", #"{"key":"bluetooth","ifRevision":7}"#, Self.prefix + "Conflict"),
      ("Set", #"{"key":"bluetooth","checked":1}"#, "org.varlink.service.InvalidParameter"),
      ("Nope", "{}", "org.varlink.service.MethodNotFound"),
      ("Watch", "{}", "org.varlink.service.ExpectedMore"),
    ]
    for (method, parameters, name) in errors {
      let run = Varlinkctl.run(["call", address, Self.prefix + method, parameters])
      #expect(run.status == 1 && run.stderr.contains(name), "\(method): \(run.stderr)")
    }
    // The error's parameters, as the daemon sent them.
    let readOnly = Varlinkctl.run([
      "--json=short", "call", address, Self.prefix + "Toggle", #"{"key":"wifi"}"#,
    ])
    let held = try JSONParser.parse(readOnly.stdout, maxDepth: 8)
    #expect(held["reason"]?.stringValue == "Held." && held["key"]?.stringValue == "wifi")
    #expect(held["heldBy"]?.stringValue == "policy")
  }

  /// The method names of the shipped definition, in its order.
  static func shippedMethods() throws -> [String] {
    try readWholeFile(VarlinkEndToEndTests.definitionPath).split(separator: "\n")
      .filter { $0.hasPrefix("method ") }
      .map { String($0.dropFirst("method ".count).prefix { $0 != "(" }) }
  }
}

/// The varlinkctl that `SWITCHD_VARLINKCTL` names, and how to run it.
enum Varlinkctl {
  static let variable = "SWITCHD_VARLINKCTL"

  /// The executable, or nil (then `unavailable` says why).
  static let path: String? = {
    guard let value = getenv(variable).map({ String(cString: $0) }), !value.isEmpty,
      access(value, X_OK) == 0
    else { return nil }
    return value
  }()

  static var unavailable: String? {
    guard path == nil else { return nil }
    guard let value = getenv(variable).map({ String(cString: $0) }), !value.isEmpty else {
      return "\(variable) is not set (.ci/varlinkctl.sh prints a varlinkctl of systemd 255+)"
    }
    return "\(variable)=\(value) is not an executable file"
  }

  static func argv(_ arguments: [String]) -> [String] { [path ?? "varlinkctl"] + arguments }

  /// Runs varlinkctl to its end (no pager: its output is a file).
  static func run(_ arguments: [String]) -> ProcessResult {
    runProcess(argv(["--no-pager"] + arguments), timeout: 120)
  }

  static var version: String { run(["--version"]).outLines.first ?? "varlinkctl (no version)" }

  /// Calls `io.switchd.Switches.METHOD`; the reply's parameters.
  static func call(_ address: String, _ method: String, _ parameters: String) throws -> JSONValue {
    let run = run(["--json=short", "call", address, VarlinkctlTests.prefix + method, parameters])
    guard run.status == 0 else {
      throw FixtureError("varlinkctl call \(method) exited \(run.status): \(run.stderr)")
    }
    return try JSONParser.parse(run.stdout, maxDepth: 512)
  }

  /// The replies `call --more --json=short` printed, whole lines only: JSON
  /// text sequences (RFC 7464), each reply after an RS and ended by a newline.
  static func replies(in output: String) -> [JSONValue] {
    guard let end = output.lastIndex(of: "\n") else { return [] }
    return output[..<end].split(separator: "\n").compactMap { line in
      try? JSONParser.parse(String(line.drop { $0 == "\u{1E}" }), maxDepth: 512)
    }
  }
}
