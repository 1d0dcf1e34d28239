// What a scheduled policy section holds at a given time, for the daemon to
// apply and to set its next timer by.
extension PolicyRule {
  /// The rule as it stands at `milliseconds`: itself inside its schedule's
  /// windows (or always, without a schedule), and outside them a rule that
  /// holds nothing. `changesAt` is when that next flips, nil for never.
  ///
  /// The rule outside keeps its key and schedule, so that it still says
  /// what will hold, but not its reason or sources: those name a hold.
  public func inEffect(at milliseconds: Int64, in zone: ZoneOffsets) -> (
    rule: PolicyRule, changesAt: Int64?
  ) {
    guard let schedule else { return (self, nil) }
    let changesAt = schedule.nextTransition(after: milliseconds, in: zone)
    if schedule.isActive(at: milliseconds, in: zone) {
      var holding = self
      holding.endsAt = changesAt
      return (holding, changesAt)
    }
    return (PolicyRule(key: key, schedule: schedule), changesAt)
  }
}

extension Catalog {
  /// The catalog with every scheduled policy as it stands at `milliseconds`
  /// (`PolicyRule.inEffect`), and the next time one of them flips (nil:
  /// never). The running catalog is this; the one read from the files is
  /// kept to ask again at that time.
  public func inEffect(at milliseconds: Int64, in zone: ZoneOffsets) -> (
    catalog: Catalog, changesAt: Int64?
  ) {
    var effective = self
    var changesAt: Int64?
    for (key, rule) in policies where rule.schedule != nil {
      let now = rule.inEffect(at: milliseconds, in: zone)
      effective.policies[key] = now.rule
      if let at = now.changesAt { changesAt = min(changesAt ?? at, at) }
    }
    return (effective, changesAt)
  }
}
