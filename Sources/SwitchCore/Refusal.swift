/// Why the rules refuse a call. Each case names the switch and, where one
/// exists, the reason text, so that a UI can "say near it why" (SWT-25).
public enum Refusal: Error, Equatable, Sendable {
  /// No switch has that key.
  case unknownSwitch(key: String)
  /// The caller may not call this method, or may not write switches.
  case permissionDenied(key: String?, action: String, requirement: String)
  /// The switch is disabled: nobody changes it (disabled wins). `source` is
  /// the policy section that disables it, when a policy does.
  case disabled(key: String, reason: String?, by: Holder?, source: SourceLocation? = nil)
  /// The switch is read-only for this caller. `source` is the policy section
  /// that holds it, when a policy does.
  case readOnly(key: String, reason: String?, heldBy: Holder?, source: SourceLocation? = nil)
  /// `ifRevision` is not the switch's revision.
  case conflict(key: String, expected: Int64, current: Int64)
  /// The switch is pending a tried change (rule 20): `Conflict` with `data.pending`.
  case pending(key: String)
  /// `apply` on a switch that has no apply command (`ExecApply=`).
  case noApplyCommand(key: String)

  /// One English sentence for a person, with the reason text when there is one.
  public var message: String {
    switch self {
    case .unknownSwitch(let key):
      return key.isEmpty ? "No switch has an empty key." : "No switch has the key \(key)."
    case .permissionDenied(let key, let action, let requirement):
      if let key { return "You may not \(action) \(key): \(requirement)." }
      return "You may not \(action): \(requirement)."
    case .disabled(let key, let reason, let by, _):
      return Refusal.sentence("\(key) is disabled", reason: reason, holder: by)
    case .readOnly(let key, let reason, let heldBy, _):
      return Refusal.sentence("\(key) is read-only", reason: reason, holder: heldBy)
    case .conflict(let key, let expected, let current):
      return "\(key) changed since revision \(expected); it is now at revision \(current)."
    case .pending(let key):
      // Said to anyone, its maker or not: who may settle it, and that it
      // ends by itself (an audit: "confirm or revert" told a user who may
      // do neither to do it).
      return "\(key) is being tried: unless confirmed it reverts at its deadline; its maker or"
        + " an administrator may confirm or revert it sooner."
    case .noApplyCommand(let key):
      return "\(key) has no apply command (ExecApply=) to run."
    }
  }

  private static func sentence(_ head: String, reason: String?, holder: Holder?) -> String {
    if let reason, !reason.isEmpty {
      let trimmed = reason.hasSuffix(".") ? String(reason.dropLast()) : reason
      return "\(head): \(trimmed)."
    }
    switch holder {
    case .policy: return "\(head) by a policy of your organisation."
    case .admin: return "\(head) by an administrator."
    // Requires= (one it needs is off) or Conflicts= (one it excludes is on).
    case .dependency: return "\(head) because of another switch."
    case nil: return "\(head)."
    }
  }
}
