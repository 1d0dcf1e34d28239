/// What making a configuration the running one does to one switch (rules
/// 15 and 17): the writer asks this for every switch, in dependency order,
/// and carries out the answer.
public enum ConfigurationStep: Equatable, Sendable {
  /// Nothing changes.
  case unchanged
  /// A change to commit now: a policy's or a dependency's, or `invalid`
  /// cleared because the switch no longer has a command.
  case change(PlannedChange)
  /// Run the switch's command first, then commit `state` (with `invalid`
  /// if the command failed); `changesState`: whether `state` differs from
  /// the switch's now, or only `invalid` may change (a reconcile).
  case applyFirst(state: SwitchState, changesState: Bool, cause: Cause)
}

extension Actor {
  /// Who a change that no client made is by: a reconcile (an apply at
  /// start or reload that set or cleared `invalid`) is switchd's own, a
  /// value adopted or a drift the system's, anything else the policy's.
  public static func configuration(_ cause: Cause) -> Actor {
    switch cause {
    case .reconcile: return .reconcile
    case .external, .drift: return .system
    case .expiry: return .timer
    default: return .policy
    }
  }
}

extension Rules {
  /// The step for one switch in `current` state, given what the policies
  /// and dependencies plan for it (`plan`, nil: nothing), its definition in
  /// the new configuration and the old, whether every command is to run
  /// (the start's reconcile), and what a command already run for this
  /// change did (`ran`: the effective value it applied and its failure).
  public static func configurationStep(
    current: SwitchState, plan: PlannedChange?, key: String, definition: SwitchDefinition?,
    replacing previous: SwitchDefinition?, reconcilingEvery: Bool,
    ran: (effective: Bool, failure: String?)?
  ) -> ConfigurationStep {
    var target = plan?.state ?? current
    let cause = plan?.cause ?? .reconcile
    if definition?.apply != nil {
      if let ran, ran.effective == target.isOnAndInEffect {
        // Its command ran before this configuration change.
        target = target.applied(failure: ran.failure)
      } else if reconcilingEvery
        || needsApply(definition, replacing: previous, from: current, to: target)
      {
        return .applyFirst(state: target, changesState: target != current, cause: cause)
      }
    } else if target.invalid {
      // No command, nothing that can fail to apply (rule 15).
      target = target.applied(failure: nil)
    }
    if target == current { return .unchanged }
    return .change(PlannedChange(key: key, cause: cause, state: target, previous: current))
  }
}

extension Rules {
  /// The change a command run for a configuration makes once it has run
  /// (rule 15): `target` (the configuration's State; nil for a reconcile,
  /// which keeps the switch's own) with `invalid` set by the command's
  /// `failure` (nil: applied). Its cause is the configuration's when the
  /// State changes by more than `invalid`, else `reconcile`. Nil when the
  /// switch is already so.
  public static func appliedChange(
    key: String, current: SwitchState, target: SwitchState?, cause: Cause, failure: String?
  ) -> PlannedChange? {
    let next = (target ?? current).applied(failure: failure)
    if next == current { return nil }
    let byConfiguration = target != nil && target != current
    // A drift's `invalid` is the system's (cause `drift`), else switchd's reconcile.
    let own: Cause = cause == .drift ? .drift : .reconcile
    return PlannedChange(
      key: key, cause: byConfiguration ? cause : own, state: next, previous: current)
  }
}
