import Glibc
import SwitchProtocol
import SwitchTestSupport
import Testing

/// Small applier programs (shell scripts) that a test writes into its
/// daemon's temp directory, and what they recorded.
extension DaemonFixture {
  /// A fixture whose schema is `switches` with `@DIR@` replaced by the
  /// fixture's directory (where the appliers are), started after `prepare`
  /// has written them.
  static func withAppliers(
    _ switches: String, policies: [String: String] = [:],
    prepare: (DaemonFixture) throws -> Void = { _ in }, start: Bool = true
  ) throws -> DaemonFixture {
    let daemon = try DaemonFixture(switches: "", policies: policies, start: false)
    try daemon.writeFile(
      "switches.d/10-test.conf", switches.replacingAll("@DIR@", with: daemon.directory))
    try prepare(daemon)
    if start { try daemon.start() }
    return daemon
  }

  /// Writes an executable `/bin/sh` script `name` into the fixture's directory.
  func writeApplier(_ name: String, _ body: String) throws {
    let path = directory + "/" + name
    try writeWholeFile(path, "#!/bin/sh\n" + body + "\n")
    chmod(path, 0o755)
  }

  /// An applier that records each run in the log its first argument names:
  /// a line `--- arguments`, then its environment as exec gave it, one
  /// variable a line. While the file `fail` beside the log exists, it fails
  /// with that file's text as its error output.
  func writeRecordingApplier(_ name: String = "record") throws {
    try writeApplier(
      name,
      """
      log="$1"; shift
      { printf -- '---'; for a in "$@"; do printf ' [%s]' "$a"; done; echo
        tr '\\0' '\\n' < /proc/$$/environ; } >> "$log"
      fail="$(dirname "$log")/fail"
      if [ -e "$fail" ]; then cat "$fail" >&2; exit 3; fi
      exit 0
      """)
  }

  /// The runs `writeRecordingApplier` recorded in `log`: each the argument
  /// line and the environment, sorted.
  func recordedRuns(_ log: String) -> [(arguments: String, environment: [String])] {
    guard let text = try? readWholeFile(directory + "/" + log) else { return [] }
    var runs: [(String, [String])] = []
    for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
      if line.hasPrefix("---") {
        runs.append((String(line.dropFirst(3)), []))
      } else if !line.isEmpty, !runs.isEmpty {
        runs[runs.count - 1].1.append(String(line))
      }
    }
    return runs.map { ($0.0, $0.1.sorted()) }
  }

  /// Makes the recording appliers fail with `reason` on standard error
  /// (nil: succeed again).
  func recordedAppliersFail(_ reason: String?) throws {
    let path = directory + "/fail"
    if let reason { try writeWholeFile(path, reason) } else { unlink(path) }
  }
}

/// The environment an apply command gets (CONFIG.md), sorted.
func applyEnvironment(
  key: String, effective: Bool, checked: Bool, disabled: Bool, cause: String
) -> [String] {
  [
    "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "SWITCH_CAUSE=\(cause)", "SWITCH_CHECKED=\(checked ? "on" : "off")",
    "SWITCH_DISABLED=\(disabled ? "yes" : "no")",
    "SWITCH_EFFECTIVE=\(effective ? "on" : "off")", "SWITCH_KEY=\(key)",
  ]
}

/// A FIFO an applier blocks on until the test lets it go. The applier
/// (`gatedApplier`) counts its runs in `PATH.runs` first, so that the test
/// can tell it is waiting without touching the FIFO.
struct Gate {
  let path: String

  /// The body of an applier that waits on the gate its first argument names.
  static let gatedApplier = "echo \"$SWITCH_CAUSE\" >> \"$1.runs\"; cat \"$1\" > /dev/null"

  init(_ path: String) throws {
    guard mkfifo(path, 0o600) == 0 else { throw FixtureError("mkfifo \(path) failed") }
    self.path = path
  }

  /// How many times the applier started (and waits or waited on the gate).
  var runs: Int {
    ((try? readWholeFile(path + ".runs")) ?? "").split(separator: "\n").count
  }

  /// Lets one waiting applier go: opens the writing end once a reader is
  /// there (with a generous deadline) and closes it, which the reader sees
  /// as the end of its input.
  func open() throws {
    let opened = pollUntil(seconds: 60) {
      let fd = Glibc.open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC)
      if fd >= 0 { close(fd) }
      return fd >= 0
    }
    guard opened else { throw FixtureError("nobody waited on \(path)") }
  }
}

/// Whether process `pid` is gone (or a zombie waiting for init).
func processIsGone(_ pid: Int32) -> Bool {
  guard let status = try? readWholeFile("/proc/\(pid)/stat"), !status.isEmpty else { return true }
  guard let close = status.lastIndex(of: ")") else { return true }
  return status[status.index(close, offsetBy: 2)] == "Z"
}

extension String {
  func replacingAll(_ target: String, with replacement: String) -> String {
    split(separator: target, omittingEmptySubsequences: false).joined(separator: replacement)
  }
}
