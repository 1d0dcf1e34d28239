/// A change decided but not yet numbered: one switch's new State and what
/// made it. The writer gives it a revision, a time and an actor.
public struct PlannedChange: Equatable, Sendable {
  public var key: String
  public var cause: Cause
  public var state: SwitchState
  public var previous: SwitchState

  public init(key: String, cause: Cause, state: SwitchState, previous: SwitchState) {
    self.key = key
    self.cause = cause
    self.state = state
    self.previous = previous
  }
}

extension Rules {
  /// Every change one decided write makes, in the order to commit them: the
  /// switch itself (as its dependencies leave it: `enable` of a switch whose
  /// dependency still holds shows the dependency), then each switch whose
  /// State a dependency changes as a result (`cause: dependency`, rule 17).
  /// Empty when the write changes nothing after all. `previous` is `key`'s
  /// State in `records` (the writer has it in hand: a look-up hashes the key).
  ///
  /// The one place a write becomes a set of changes, so whatever must happen
  /// before they commit (apply commands, rule 14) sees the whole set.
  public static func plannedChanges(
    of key: String, from previous: SwitchState, to next: SwitchState, cause: Cause,
    catalog: Catalog, records: KeyTable<SwitchRecord>
  ) -> [PlannedChange] {
    let dependencies = catalog.dependencies
    // No switch follows it (most): its own change, settled, without the
    // closures copying States below (callgrind).
    let hashedKey = HashedKey(key)
    if let own = dependencies.settledAlone(
      next, of: hashedKey, states: { $0 == hashedKey ? next : records[$0]?.state })
    {
      guard own != previous else { return [] }
      return [PlannedChange(key: key, cause: cause, state: own, previous: previous)]
    }
    let own = dependencies.settled(next, of: hashedKey) {
      $0 == hashedKey ? next : records[$0]?.state
    }
    if own == previous { return [] }
    var planned = [PlannedChange(key: key, cause: cause, state: own, previous: previous)]
    let followers = dependencies.consequences(of: hashedKey) {
      $0 == hashedKey ? own : records[$0]?.state
    }
    for follower in followers {
      guard let before = records[follower.key]?.state else { continue }
      planned.append(
        PlannedChange(
          key: follower.key.string, cause: .dependency, state: follower.state, previous: before))
    }
    return planned
  }

  /// Every change making `next` the configuration makes, in the order to
  /// commit them: a switch's policy (`cause: policy`) and what its
  /// dependencies now say (`cause: dependency`) in one change per switch,
  /// each switch after the switches it lists, so one pass settles all.
  /// `records` holds a row for every switch `next` declares.
  public static func plannedChanges(
    applying next: Catalog, records: KeyTable<SwitchRecord>
  ) -> [PlannedChange] {
    let dependencies = next.dependencies
    var settled: [String: SwitchState] = [:]
    var planned: [PlannedChange] = []
    for key in dependencies.order {
      guard let current = records[key]?.state else { continue }
      guard let definition = next.switches[key] else { continue }
      let policied = Rules.applyPolicy(next.policies[key], to: current, definition: definition)
      let target = dependencies.settled(policied, of: key) { settled[$0] ?? records[$0]?.state }
      settled[key] = target
      if target == current { continue }
      planned.append(
        PlannedChange(
          key: key, cause: policied == current ? .dependency : .policy, state: target,
          previous: current))
    }
    return planned
  }
}
