/// How switchd reads a system switch's state back (`ExecCheck=`,
/// `ExecWatch=`, CONFIG.md) and what it does when the system drifts
/// (`OnDrift=`, `DriftLimit=`, SEMANTICS.md rules 18–19). Only a switch
/// with an apply command has one: switchd reads back what it applies.
public struct ReadBack: Equatable, Hashable, Sendable {
  /// What a writable switch does when the system drifts.
  public enum OnDrift: String, CaseIterable, Equatable, Hashable, Sendable {
    /// The observed value becomes the switch's value (cause `external`).
    case adopt
    /// The apply command runs again, as for a held switch.
    case reassert
  }

  /// `ExecCheck=`: prints `on` or `off` once and exits; nil when absent.
  public var check: [String]?
  /// `ExecWatch=`: runs for the daemon's life, a line per state; nil when absent.
  public var watch: [String]?
  /// `CheckIntervalSec=` in milliseconds; 0 runs the check only after
  /// applies and after the start's reconcile.
  public var checkIntervalMilliseconds: Int
  public var onDrift: OnDrift
  /// `DriftLimit=`: re-applications within `Drift.window` before a drift
  /// makes the switch `invalid`.
  public var driftLimit: Int

  public static let defaultDriftLimit = 5
  /// The most `DriftLimit=` accepts: beyond it the limit means nothing.
  public static let maximumDriftLimit = 1000

  public init(
    check: [String]? = nil, watch: [String]? = nil, checkIntervalMilliseconds: Int = 0,
    onDrift: OnDrift = .adopt, driftLimit: Int = defaultDriftLimit
  ) {
    self.check = check
    self.watch = watch
    self.checkIntervalMilliseconds = checkIntervalMilliseconds
    self.onDrift = onDrift
    self.driftLimit = driftLimit
  }

  /// Parses `CheckIntervalSec=`: 0, or a positive number of seconds like
  /// `ApplyTimeoutSec=` (up to three decimals, at most a day).
  public static func parseInterval(_ text: String) -> Int? {
    if text.utf8.allSatisfy({ $0 == UInt8(ascii: "0") || $0 == UInt8(ascii: ".") }),
      text.first == "0", text.utf8.filter({ $0 == UInt8(ascii: ".") }).count <= 1,
      text.last != "."
    {
      return 0
    }
    return ApplyCommand.parseTimeout(text)
  }
}
