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
  /// What one switch lists and which switches list it. A switch that does
  /// neither (most) has no entry: one look-up says it is alone. A class:
  /// a look-up hands out one reference, where a struct's three arrays were
  /// copied and released on each write of a switch that lists another.
  /// The listed keys are hashed once here: settling Wi-Fi against airplane
  /// mode hashed "airplane-mode" on every toggle (with the copies, ~90 of
  /// the ~0.8k settling costs a toggle of `wifi`, callgrind, shipped
  /// `Config/`; the rest is the look-up of airplane mode's record).
  private final class Entry: Sendable {
    let requires: [HashedKey]
    let conflicts: [HashedKey]
    /// The switches that list this one.
    let dependents: [String]

    init(_ draft: Draft) {
      requires = draft.requires.map { HashedKey($0) }
      conflicts = draft.conflicts.map { HashedKey($0) }
      dependents = draft.dependents
    }
  }

  /// An `Entry` while `init` gathers it.
  private struct Draft {
    var requires: [String] = []
    var conflicts: [String] = []
    var dependents: [String] = []
  }

  /// What `init` computes, never changed after: behind one reference, so that a copy of
  /// the catalog's dependencies (one per write decided) is one retain, not five (callgrind).
  /// `KeyTable`s: a write of a switch with dependencies looked its key up
  /// here four to six times with String's SipHash, ~1.5k of a toggle (callgrind).
  private final class Tables: Sendable {
    let order: [String]
    let position: KeyTable<Int>
    let entries: KeyTable<Entry>
    let labels: KeyTable<String>

    init(
      order: [String], position: KeyTable<Int>, entries: KeyTable<Entry>,
      labels: KeyTable<String>
    ) {
      self.order = order
      self.position = position
      self.entries = entries
      self.labels = labels
    }
  }
  private let tables: Tables

  /// Declared keys, each after the switches it lists; otherwise sorted.
  public var order: [String] { tables.order }

  private func entry(_ key: String) -> Entry? { tables.entries[key] }

  /// Reads `Requires=`/`Conflicts=` of `switches`. Keys that are not declared
  /// are ignored (the builder refuses them); a cycle must not be given.
  public init(switches: [String: SwitchDefinition], sortedKeys: [String]) {
    var drafts: [String: Draft] = [:]
    for key in sortedKeys {
      guard let definition = switches[key] else { continue }
      // Each listed key as its own definition holds it (`KeyInterner`).
      let requires = definition.requires.compactMap { switches[$0]?.key }.filter { $0 != key }
      let conflicts = definition.conflicts.compactMap { switches[$0]?.key }.filter { $0 != key }
      if requires.isEmpty && conflicts.isEmpty { continue }
      drafts[key, default: Draft()].requires = requires
      drafts[key, default: Draft()].conflicts = conflicts
      for other in Set(requires + conflicts) {
        drafts[other, default: Draft()].dependents.append(key)
      }
    }
    var entries = KeyTable<Entry>()
    // Labels (for reasons) and places (for `downstream`) of the switches
    // that list or are listed, the only ones asked for: a table of every
    // switch cost 1.1 MB with 10,000 switches and no dependency (massif).
    var labels = KeyTable<String>()
    // Each key as the definitions hold it (the drafts' keys were copied
    // from `sortedKeys`, the same Strings).
    for (key, draft) in drafts {
      entries[key] = Entry(draft)
      labels[key] = switches[key]?.label ?? key
    }
    // Depth first, each switch placed after those it lists; a loop, not
    // recursion, so that a long chain cannot exhaust a thread's stack.
    var order: [String] = []
    var seen = Set<String>()
    for root in sortedKeys where switches[root] != nil && seen.insert(root).inserted {
      var stack: [(key: String, lists: [String], next: Int)] = []
      func enter(_ key: String) {
        stack.append((key, drafts[key].map { $0.requires + $0.conflicts } ?? [], 0))
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
    var position = KeyTable<Int>()
    for (index, key) in order.enumerated() where drafts[key] != nil { position[key] = index }
    tables = Tables(order: order, position: position, entries: entries, labels: labels)
  }

  /// Whether `key` lists no switch and no switch lists it: no dependency
  /// settles its State and it settles none.
  public func isAlone(_ key: String) -> Bool { entry(key) == nil }

  /// Whether any switch lists `key` in `Requires=` or `Conflicts=`.
  public func hasDependents(_ key: String) -> Bool { !(entry(key)?.dependents.isEmpty ?? true) }

  /// When a change of `key` to `next` changes no other switch (none lists
  /// `key`): `next` as `key`'s own dependencies leave it (`settled`), the
  /// whole plan of such a write. Nil when switches follow `key`: then
  /// `Rules.plannedChanges` settles them too. One look-up for a switch
  /// alone or one that only lists others (Wi-Fi beside airplane mode).
  public func settledAlone(
    _ next: SwitchState, of key: HashedKey, states: (HashedKey) -> SwitchState?
  ) -> SwitchState? {
    guard let entry = tables.entries[key] else {
      // Alone: as it is, unless a reload removed what disabled it.
      return next.disabledBy == .dependency ? settled(next, entry: nil, states: states) : next
    }
    if !entry.dependents.isEmpty { return nil }
    return settled(next, entry: entry, states: states)
  }

  /// The reason a dependency keeps `key` from applying, given every switch's
  /// State; nil when none does.
  public func blocker(of key: String, states: (String) -> SwitchState?) -> String? {
    blocker(entry(key), states: { states($0.string) })
  }

  private func blocker(_ entry: Entry?, states: (HashedKey) -> SwitchState?) -> String? {
    guard let entry else { return nil }
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
    settled(state, entry: entry(key), states: { states($0.string) })
  }

  /// `settled` with the switch's entry looked up already.
  private func settled(
    _ state: SwitchState, entry: Entry?, states: (HashedKey) -> SwitchState?
  ) -> SwitchState {
    if state.disabledBy == .admin || state.disabledBy == .policy { return state }
    var next = state
    if let reason = blocker(entry, states: states) {
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
    guard hasDependents(key) else { return [] }
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
    guard hasDependents(key) else { return [] }
    var reached = Set<String>()
    var frontier = [key]
    while let next = frontier.popLast() {
      for dependent in entry(next)?.dependents ?? [] where reached.insert(dependent).inserted {
        frontier.append(dependent)
      }
    }
    let position = tables.position
    return reached.sorted { (position[$0] ?? 0) < (position[$1] ?? 0) }
  }

  private func label(_ key: HashedKey) -> String { tables.labels[key] ?? key.string }
}
