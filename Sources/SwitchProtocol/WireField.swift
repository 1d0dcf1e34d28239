/// Member names of the wire objects of PROTOCOL.md (params, results,
/// Switch, State, Actor, events, entries), so that clients read and build
/// them by these names instead of spelling them again. The encoders in
/// `WireEncoding` write the same names.
public enum WireField {
  public static let actor = "actor"
  public static let before = "before"
  public static let cause = "cause"
  public static let changed = "changed"
  public static let changedAt = "changedAt"
  public static let checked = "checked"
  public static let defaultChecked = "defaultChecked"
  public static let disabled = "disabled"
  public static let disabledBy = "disabledBy"
  public static let disabledReason = "disabledReason"
  public static let entries = "entries"
  public static let fields = "fields"
  public static let heldBy = "heldBy"
  public static let ifRevision = "ifRevision"
  public static let key = "key"
  public static let keys = "keys"
  public static let label = "label"
  public static let limit = "limit"
  public static let pid = "pid"
  public static let policySource = "policySource"
  public static let prefix = "prefix"
  public static let previous = "previous"
  public static let readOnly = "readOnly"
  public static let readOnlyReason = "readOnlyReason"
  public static let reason = "reason"
  public static let revision = "revision"
  public static let since = "since"
  public static let source = "source"
  public static let state = "state"
  public static let `switch` = "switch"
  public static let switches = "switches"
  public static let time = "time"
  public static let uid = "uid"

  /// The method of the change notification a watch receives.
  public static let changedNotification = "changed"
}
