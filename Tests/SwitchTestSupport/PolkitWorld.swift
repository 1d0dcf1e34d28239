import Glibc

/// A system bus and Debian's real polkitd, the test's own: `dbus-daemon`
/// with a configuration of type `system` listening in a temp directory, and
/// `polkitd` in a mount namespace of its own (`unshare -m`) where the test's
/// folders are bind-mounted over the fixed paths it reads, so that the rules,
/// the actions (switchd's shipped `io.switchd.policy`) and the users and
/// groups it sees are the test's and nothing of the machine's is changed:
///
/// - `/etc/polkit-1/rules.d`: `rulesDirectory` (`writeRule`, `removeRule`;
///   polkitd reloads it on change, as on a real system);
/// - `/usr/share/polkit-1/rules.d`: empty (no distribution rules);
/// - `/usr/share/polkit-1/actions`: the shipped policy only;
/// - `/etc/passwd`, `/etc/group`: the machine's, plus the user `pkuser`
///   (`PolkitWorld.user`) in the group `pkstaff` (`PolkitWorld.group`).
///
/// Needs root (the namespace, the mounts, and polkitd dropping to its user).
/// Tests that change the machine's accounts wait while a world is up
/// (`SystemAccounts`).
public final class PolkitWorld {
  public static let user: UInt32 = 4301
  public static let group: UInt32 = 4300
  public static let userName = "pkuser"
  public static let groupName = "pkstaff"
  /// A second user, in no group of the test's.
  public static let otherUser: UInt32 = 4302

  public let directory: String
  public let busAddress: String
  public let rulesDirectory: String
  private var bus: Child?
  private var polkitd: Child?
  /// Whether this world counts in `SystemAccounts` (until `deinit`).
  private var sharesAccounts = false

  /// Why the world cannot be made on this machine, nil when it can.
  public static var unavailable: String? {
    if geteuid() != 0 { return "needs root (a mount namespace for polkitd)" }
    for path in ["/usr/lib/polkit-1/polkitd", "/usr/bin/dbus-daemon", "/usr/bin/unshare"]
    where access(path, X_OK) != 0 {
      return "needs \(path) (Debian's polkitd, dbus-daemon, util-linux)"
    }
    if getpwnam("polkitd") == nil { return "needs the polkitd user (Debian's polkitd package)" }
    return nil
  }

  /// The repository's `polkit/io.switchd.policy`, found from this file's path.
  public static let shippedPolicy: String = {
    var path = #filePath
    for _ in 0..<3 { path = String(path[..<path.lastIndex(of: "/")!]) }
    return path + "/polkit/io.switchd.policy"
  }()

  /// Starts the bus and polkitd, with these rules files already in place,
  /// and waits until polkitd owns its name.
  public init(rules: [String: String] = [:]) throws {
    directory = try makeTemporaryDirectory("switchd-pk")
    busAddress = "unix:path=\(directory)/bus"
    rulesDirectory = directory + "/rules"
    // From before the mounts until the namespaces are gone, no test
    // renames a new /etc/passwd or /etc/group over the ones mounted on.
    SystemAccounts.worldStarts()
    sharesAccounts = true
    // polkitd runs as its own user: it must read everything here.
    for sub in ["", "/rules", "/share-rules", "/actions"] {
      mkdir(directory + sub, 0o755)
      chmod(directory + sub, 0o755)
    }
    try writeReadable(directory + "/actions/io.switchd.policy", readWholeFile(Self.shippedPolicy))
    try writeReadable(
      directory + "/passwd",
      readWholeFile("/etc/passwd")
        + "\(Self.userName):x:\(Self.user):\(Self.user)::/nonexistent:/usr/sbin/nologin\n"
        + "pkother:x:\(Self.otherUser):\(Self.otherUser)::/nonexistent:/usr/sbin/nologin\n")
    try writeReadable(
      directory + "/group",
      readWholeFile("/etc/group") + "\(Self.groupName):x:\(Self.group):\(Self.userName)\n")
    try writeReadable(
      directory + "/bus.conf",
      """
      <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-BUS Bus Configuration 1.0//EN"
       "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
      <busconfig>
        <type>system</type>
        <listen>\(busAddress)</listen>
        <auth>EXTERNAL</auth>
        <policy context="default">
          <allow user="*"/>
          <allow own="*"/>
          <allow send_destination="*"/>
          <allow receive_sender="*"/>
          <allow send_type="method_return"/>
          <allow send_type="signal"/>
          <allow send_type="error"/>
        </policy>
      </busconfig>
      """)
    // In the namespace too: dbus-daemon refuses a connection whose uid has
    // no passwd entry (it looks up the groups), and pkuser has one only there.
    bus = try Child(
      namespaced("exec /usr/bin/dbus-daemon --nofork --config-file=\(directory)/bus.conf"),
      logPath: directory + "/bus.log")
    guard pollUntil(seconds: 30, { access(directory + "/bus", F_OK) == 0 }) else {
      throw FixtureError(
        "dbus-daemon did not listen: \((try? readWholeFile(directory + "/bus.log")) ?? "")")
    }
    for (name, text) in rules { try writeReadable(rulesDirectory + "/" + name, text) }
    try startPolkitd()
  }

  deinit {
    _ = polkitd?.stop()
    _ = bus?.stop()
    removeTree(directory)
    if sharesAccounts { SystemAccounts.worldEnds() }
  }

  /// (Re)starts polkitd; waits until it owns org.freedesktop.PolicyKit1.
  public func startPolkitd() throws {
    let log = directory + "/polkitd.log"
    unlink(log)
    polkitd = try Child(
      namespaced("exec /usr/lib/polkit-1/polkitd"), environment: environment, logPath: log)
    let ready = pollUntil(seconds: 30) {
      ((try? readWholeFile(log)) ?? "").contains("Acquired the name")
        || polkitd?.hasExited == true
    }
    guard ready, polkitd?.hasExited == false else {
      throw FixtureError("polkitd did not start: \((try? readWholeFile(log)) ?? "")")
    }
  }

  /// `command` run by sh in a mount namespace of its own with the test's
  /// folders and files over the paths polkitd (and dbus-daemon) read.
  private func namespaced(_ command: String) -> [String] {
    let mounts = [
      ("/actions", "/usr/share/polkit-1/actions"), ("/share-rules", "/usr/share/polkit-1/rules.d"),
      ("/rules", "/etc/polkit-1/rules.d"), ("/passwd", "/etc/passwd"), ("/group", "/etc/group"),
    ]
    let script =
      mounts.map { "mount --bind \(directory)\($0.0) \($0.1)" }.joined(separator: " && ")
      + " && " + command
    return ["/usr/bin/unshare", "-m", "--propagation", "private", "/bin/sh", "-c", script]
  }

  /// Stops polkitd (the bus stays): polkit is then not reachable.
  public func stopPolkitd() {
    _ = polkitd?.stop()
    polkitd = nil
  }

  /// Writes a rules file as an administrator would: whole, then renamed in,
  /// so that polkitd never reads half of it.
  public func writeRule(_ name: String, _ javascript: String) throws {
    let temporary = rulesDirectory + "/." + name + ".tmp"
    try writeReadable(temporary, javascript)
    guard rename(temporary, rulesDirectory + "/" + name) == 0 else {
      throw FixtureError("cannot rename \(temporary): errno \(errno)")
    }
  }

  public func removeRule(_ name: String) {
    unlink(rulesDirectory + "/" + name)
  }

  /// What polkitd and the bus have logged: for a failing expectation's
  /// message, so that a rule that did not apply says why (the rules the
  /// tests write log each action and subject they are asked about).
  public var logs: String {
    let polkitd = (try? readWholeFile(directory + "/polkitd.log")) ?? "(none)"
    let bus = (try? readWholeFile(directory + "/bus.log")) ?? "(none)"
    return "polkitd.log:\n\(polkitd)\nbus.log:\n\(bus)"
  }

  /// The daemon's environment: this bus as its system bus.
  public var environment: [String: String] { ["DBUS_SYSTEM_BUS_ADDRESS": busAddress] }

  private func writeReadable(_ path: String, _ text: String) throws {
    try writeWholeFile(path, text)
    chmod(path, 0o644)
  }
}
