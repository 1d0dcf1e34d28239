import Glibc
import SwitchTestSupport
import Testing

/// A real varlink client, the PyPI `varlink` package (`.ci/run` installs
/// it): its interface parser reads the shipped definition, and its client
/// calls the daemon, watches with `more`, and gets named errors. Skipped,
/// with the reason, where the package is not installed.
@Suite struct VarlinkPythonClientTests {
  static let script = """
    import sys, varlink
    definition = open(sys.argv[2]).read()
    parsed = varlink.Interface(definition)
    assert parsed.name == "io.switchd.Switches", parsed.name
    for member in ("Get", "Toggle", "Confirm", "Revert", "Watch", "Switch", "Entry", "UnknownSwitch"):
        assert member in parsed.members, member
    with varlink.Client("unix:" + sys.argv[1]) as client:
        # The client asks the daemon for the definition and parses it.
        switches = client.open("io.switchd.Switches")
        assert switches.Get("wifi")["switch"]["checked"] is True
        assert switches.Toggle("wifi")["switch"]["checked"] is False
        try:
            switches.Get("nope")
            raise SystemExit("Get nope did not fail")
        except varlink.VarlinkError as error:
            assert error.error() == "io.switchd.Switches.UnknownSwitch", error.error()
            assert error.parameters()["key"] == "nope"
        with client.open("io.switchd.Switches") as watching:
            replies = watching.Watch(keys=["wifi"], _more=True)
            first = next(replies)
            assert first["revision"] == 1, first
            switches.Toggle("wifi")
            event = next(replies)["event"]
            assert event["revision"] == 2 and event["key"] == "wifi", event
        # A tried change, its confirm, and a timed hold, as the definition declares them.
        tried = switches.Set(
            key="bluetooth", checked=True, confirmWithin=600, revertOnDisconnect=False)
        assert tried["switch"]["pendingUntil"] is not None, tried
        assert switches.Confirm("bluetooth")["changed"] is True
        held = switches.Lock(key="bluetooth", **{"for": 60})
        assert held["switch"]["readOnlyUntil"] is not None, held
    print("ok")
    """

  @Test func thePyPIClientCallsTheDaemonAndParsesTheShippedDefinition() throws {
    let probe = runProcess(["/usr/bin/env", "python3", "-c", "import varlink"])
    guard probe.status == 0 else {
      print("skipped: the PyPI varlink package is not installed (pip install varlink)")
      return
    }
    let daemon = try DaemonFixture()
    let run = runProcess([
      "/usr/bin/env", "python3", "-c", Self.script, daemon.varlinkPath,
      VarlinkEndToEndTests.definitionPath,
    ])
    #expect(run.status == 0, "\(run.stdout)\(run.stderr)")
    #expect(run.stdout.hasSuffix("ok\n"))
  }
}
