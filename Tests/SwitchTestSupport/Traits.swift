import Glibc
import Testing

extension Trait where Self == ConditionTrait {
  /// Runs the test only as root, and says why it needs to: as a normal user it
  /// is skipped with that reason, not failed.
  public static func needsRoot(_ why: String) -> Self {
    .enabled(if: geteuid() == 0, Comment(rawValue: "needs root: " + why))
  }
}
