/// `Requires=` and `Conflicts=` (SEMANTICS.md rule 17) as a pure function of
/// the switches' States: which switches a dependency disables, and why.
///
/// A switch with `Requires=` applies only while each listed switch is in
/// effect (`checked` and not `disabled`); one with `Conflicts=` does not apply
/// while any listed switch is in effect. When the condition holds the switch
/// is disabled with `disabledBy: dependency` and a reason naming the first
/// switch that causes it, `Requires=` in order, then `Conflicts=` in order:
/// "Airplane mode is on" (a conflict), "Wi-Fi is off" or "Wi-Fi is disabled"
/// (a requirement). Its `checked` is kept, so the stored value comes back when
/// the condition ends.
///
/// An administrator's or a policy's disable wins: the switch keeps that
/// disable and its reason, and shows the dependency once it is lifted.
/// Chains propagate because a switch disabled by a dependency is not in
/// effect for its own dependents; the builder refuses cycles, so settling in
/// `order` (each switch after those it lists) reaches a fixed point in one pass.
public struct Dependencies: Sendable {
  private struct Listed: Sendable {
    var requires: [String]
    var conflicts: [String]
  }

  /// What `init` computes, never changed after: behind one reference, so that a copy of
  /// the catalog's dependencies (one per write decided) is one retain, not five (callgrind).
  private final class Tables: Sendable {
    let order: [String]
    let position: [String: Int]
    let listed: [String: Listed]
    let dependents: [String: [String]]
    let labels: [String: String]

    init(
      order: [String], position: [String: Int], listed: [String: Listed],
      dependents: [String: [String]], labels: [String: String]
    ) {
      self.order = order
      self.position = position
      self.listed = listed
      self.dependents = dependents
      self.labels = labels
    }
  }
  private let tables: Tables

  /// Declared keys, each after the switches it lists; otherwise sorted.
  public var order: [String] { tables.order }
  private var position: [String: Int] { tables.position }
  private var listed: [String: Listed] { tables.listed }
  /// For each key, the switches that list it.
  private var dependents: [String: [String]] { tables.dependents }
  private var labels: [String: String] { tables.labels }

  /// Reads `Requires=`/`Conflicts=` of `switches`. Keys that are not declared
  /// are ignored (the builder refuses them); a cycle must not be given.
  public init(switches: [String: SwitchDefinition], sortedKeys: [String]) {
    var listed: [String: Listed] = [:]
    var dependents: [String: [String]] = [:]
    var labels: [String: String] = [:]
    for key in sortedKeys {
      guard let definition = switches[key] else { continue }
      labels[key] = definition.label ?? key
      let requires = definition.requires.filter { switches[$0] != nil && $0 != key }
      let conflicts = definition.conflicts.filter { switches[$0] != nil && $0 != key }
      if requires.isEmpty && conflicts.isEmpty { continue }
      listed[key] = Listed(requires: requires, conflicts: conflicts)
      for other in Set(requires + conflicts) { dependents[other, default: []].append(key) }
    }
    // Depth first, each switch placed after those it lists; a loop, not
    // recursion, so that a long chain cannot exhaust a thread's stack.
    var order: [String] = []
    var seen = Set<String>()
    for root in sortedKeys where switches[root] != nil && seen.insert(root).inserted {
      var stack: [(key: String, lists: [String], next: Int)] = []
      func enter(_ key: String) {
        stack.append((key, listed[key].map { $0.requires + $0.conflicts } ?? [], 0))
      }
      enter(root)
      while let top = stack.last {
        if top.next < top.lists.count {
          stack[stack.count - 1].next += 1
          let other = top.lists[top.next]
          if seen.insert(other).inserted { enter(other) }
        } else {
          stack.removeLast()
          order.append(top.key)
        }
      }
    }
    var position: [String: Int] = [:]
    for (index, key) in order.enumerated() { position[key] = index }
    tables = Tables(
      order: order, position: position, listed: listed, dependents: dependents, labels: labels)
  }

  /// Whether `key` lists no switch and no switch lists it: no dependency
  /// settles its State and it settles none.
  public func isAlone(_ key: String) -> Bool { listed[key] == nil && dependents[key] == nil }

  /// Whether `key` going to `next` changes that switch alone, as `next`
  /// is: it is alone, and not still disabled by a dependency a reload
  /// removed (which settling would lift). `Rules.plannedChanges` and the
  /// writer's fast path both ask this.
  public func changesAlone(_ key: String, to next: SwitchState) -> Bool {
    isAlone(key) && next.disabledBy != .dependency
  }

  /// Whether any switch lists `key` in `Requires=` or `Conflicts=`.
  public func hasDependents(_ key: String) -> Bool { dependents[key] != nil }

  /// The reason a dependency keeps `key` from applying, given every switch's
  /// State; nil when none does.
  public func blocker(of key: String, states: (String) -> SwitchState?) -> String? {
    guard let entry = listed[key] else { return nil }
    for other in entry.requires {
      guard let state = states(other), !state.isOnAndInEffect else { continue }
      return label(other) + (state.checked ? " is disabled" : " is off")
    }
    for other in entry.conflicts {
      guard let state = states(other), state.isOnAndInEffect else { continue }
      return label(other) + " is on"
    }
    return nil
  }

  /// `state` of `key` as its dependencies leave it: an administrator's or a
  /// policy's disable stays; otherwise the switch is disabled by dependency
  /// while one holds, with the reason, and not disabled when none does.
  public func settled(
    _ state: SwitchState, of key: String, states: (String) -> SwitchState?
  ) -> SwitchState {
    if state.disabledBy == .admin || state.disabledBy == .policy { return state }
    var next = state
    if let reason = blocker(of: key, states: states) {
      next.disabled = true
      next.disabledBy = .dependency
      next.disabledReason = reason
    } else if state.disabledBy == .dependency {
      next.disabled = false
      next.disabledBy = nil
      next.disabledReason = nil
    }
    return next
  }

  /// The switches whose State changes because `key` changed, with their new
  /// States, in the order to commit them (each after the switches it lists).
  /// `states` gives every switch's State with `key`'s change already made.
  public func consequences(
    of key: String, states: (String) -> SwitchState?
  ) -> [(key: String, state: SwitchState)] {
    guard dependents[key] != nil else { return [] }
    // Every switch downstream of `key`, settled in order, so that a switch
    // sees its own dependencies' new States.
    let downstream = self.downstream(of: key)
    var changed: [String: SwitchState] = [:]
    var result: [(key: String, state: SwitchState)] = []
    func current(_ other: String) -> SwitchState? { changed[other] ?? states(other) }
    for dependent in downstream {
      guard let state = states(dependent) else { continue }
      let next = settled(state, of: dependent, states: current)
      if next != state {
        changed[dependent] = next
        result.append((dependent, next))
      }
    }
    return result
  }

  /// `key` and every switch whose State a change of `key` may change: what
  /// a write of `key` may touch.
  public func reach(of key: String) -> [String] { [key] + downstream(of: key) }

  /// The switches downstream of `key` (its dependents, theirs, …), in the
  /// order to settle them.
  private func downstream(of key: String) -> [String] {
    guard dependents[key] != nil else { return [] }
    var reached = Set<String>()
    var frontier = [key]
    while let next = frontier.popLast() {
      for dependent in dependents[next] ?? [] where reached.insert(dependent).inserted {
        frontier.append(dependent)
      }
    }
    return reached.sorted { (position[$0] ?? 0) < (position[$1] ?? 0) }
  }

  private func label(_ key: String) -> String { labels[key] ?? key }
}
