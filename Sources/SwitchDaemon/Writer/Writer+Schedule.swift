import Glibc
import SwitchCore
import SwitchSystem

/// Scheduled policy (SEMANTICS.md rule 22, CONFIG.md `Schedule=`): the
/// running catalog holds each scheduled policy as it stands now
/// (`Catalog.inEffect`); the catalog read from the files is kept, and at the
/// next start or end of a window it is applied again, as a reload of the
/// same files would be: each switch whose State changes is one change with
/// `cause: policy`. The wall-clock timer fires for it with the deadlines.
extension Writer {
  /// What a reload replaces: the configuration read from the files and when
  /// a scheduled policy in it next flips. Put back when the reload fails to
  /// commit, so that a schedule's next edge does not apply the configuration
  /// the reload could not (a review).
  typealias ConfiguredBefore = (
    configured: (catalog: Catalog, access: AccessRules)?, changesAt: Int64?
  )

  /// The machine's local time zone, with its daylight-saving rules.
  static let localZone = ZoneOffsets { localOffsetSeconds(at: $0) }

  /// `configured` as it stands now, remembering it and when it next flips.
  func inEffectNow(_ configured: Catalog, _ access: AccessRules) -> Catalog {
    let now = configured.inEffect(at: wallClockMilliseconds(), in: Self.localZone)
    self.configured = (configured, access)
    scheduleChangesAt = now.changesAt
    deadlines.moved = true
    return now.catalog
  }

  /// Whether a window of a scheduled policy has started or ended since the
  /// running catalog was made.
  var scheduleIsDue: Bool {
    guard let at = scheduleChangesAt else { return false }
    return at <= wallClockMilliseconds()
  }
}
