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
  /// The reasons are written here too, and the dependents are entries:
  /// a toggle of airplane mode built each reason and walked its dependents
  /// through Sets and tables of Strings, ~15k of its ~73k (callgrind).
  private final class Entry: Sendable {
    let key: HashedKey
    /// Its place in `order`: the dependents of a switch settle in this order.
    let position: Int
    let requires: [Listed]
    let conflicts: [Listed]
    /// The switches that list this one, in the order they settle.
    let dependents: [Entry]
    /// Whether one of them is listed in turn (a chain): then the switches
    /// downstream are more than these, and some read another's new State.
    let leadsToAChain: Bool

    init(
      key: String, position: Int, draft: Draft, dependents: [Entry], reasons: [String: Reasons]
    ) {
      self.key = HashedKey(key)
      self.position = position
      requires = draft.requires.map { listed in
        let reasons = reasons[listed] ?? Reasons(label: listed)
        return Listed(key: HashedKey(listed), reason: reasons.off, reasonDisabled: reasons.disabled)
      }
      conflicts = draft.conflicts.map { listed in
        let reasons = reasons[listed] ?? Reasons(label: listed)
        return Listed(key: HashedKey(listed), reason: reasons.on, reasonDisabled: reasons.on)
      }
      self.dependents = dependents.sorted { $0.position < $1.position }
      leadsToAChain = dependents.contains { !$0.dependents.isEmpty }
    }
  }

  /// A switch an entry lists, and the reasons it gives while it disables it.
  private struct Listed: Sendable {
    let key: HashedKey
    /// A conflict's: "Airplane mode is on"; a requirement's: "Wi-Fi is off".
    let reason: String
    /// A requirement's, while the switch is on but disabled: "Wi-Fi is disabled".
    let reasonDisabled: String
  }

  /// The reasons a listed switch gives, made once for every switch that
  /// lists it (10,000 radios beside airplane mode share one text).
  private struct Reasons {
    let on: String
    let off: String
    let disabled: String

    init(label: String) {
      on = label + " is on"
      off = label + " is off"
      disabled = label + " is disabled"
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
    let entries: KeyTable<Entry>

    init(order: [String], entries: KeyTable<Entry>) {
      self.order = order
      self.entries = entries
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
    // The reasons of the switches that are listed, the only ones asked
    // for: a table of every switch's label cost 1.1 MB with 10,000
    // switches and no dependency (massif).
    var reasons: [String: Reasons] = [:]
    for draft in drafts.values {
      for listed in draft.requires + draft.conflicts where reasons[listed] == nil {
        reasons[listed] = Reasons(label: switches[listed]?.label ?? listed)
      }
    }
    // Last to first: a switch's dependents come after it in `order`, so
    // their entries are made before its own.
    var entries = KeyTable<Entry>()
    for (position, key) in order.enumerated().reversed() {
      guard let draft = drafts[key] else { continue }
      let dependents = draft.dependents.compactMap { entries[$0] }
      entries[key] = Entry(
        key: key, position: position, draft: draft, dependents: dependents, reasons: reasons)
    }
    tables = Tables(order: order, entries: entries)
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
      guard let state = states(other.key), !state.isOnAndInEffect else { continue }
      return state.checked ? other.reasonDisabled : other.reason
    }
    for other in entry.conflicts {
      guard let state = states(other.key), state.isOnAndInEffect else { continue }
      return other.reason
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

  /// `settled` of a key hashed already.
  public func settled(
    _ state: SwitchState, of key: HashedKey, states: (HashedKey) -> SwitchState?
  ) -> SwitchState {
    settled(state, entry: tables.entries[key], states: states)
  }

  /// The switches whose State changes because `key` changed, with their new
  /// States, in the order to commit them (each after the switches it lists).
  /// `states` gives every switch's State with `key`'s change already made.
  public func consequences(
    of key: String, states: (String) -> SwitchState?
  ) -> [(key: String, state: SwitchState)] {
    consequences(of: HashedKey(key)) { states($0.string) }.map { ($0.key.string, $0.state) }
  }

  /// `consequences` of a key hashed already, read by hashed key.
  public func consequences(
    of key: HashedKey, states: (HashedKey) -> SwitchState?
  ) -> [(key: HashedKey, state: SwitchState)] {
    guard let entry = tables.entries[key], !entry.dependents.isEmpty else { return [] }
    // Every switch downstream of `key`, settled in order, so that a switch
    // sees its own dependencies' new States.
    let downstream = Self.downstream(of: entry)
    // Only a switch downstream that others downstream list (a chain) is
    // read again with its new State: without one (airplane mode and its
    // radios) no table of new States is made (its growth was ~1.1k of a
    // toggle of airplane mode, callgrind).
    let chained = entry.leadsToAChain
    var changed: [HashedKey: SwitchState] = [:]
    if chained { changed.reserveCapacity(downstream.count) }
    var result: [(key: HashedKey, state: SwitchState)] = []
    result.reserveCapacity(downstream.count)
    for dependent in downstream {
      guard let state = states(dependent.key) else { continue }
      let next =
        chained
        ? settled(state, entry: dependent) { changed[$0] ?? states($0) }
        : settled(state, entry: dependent, states: states)
      if next != state {
        if chained { changed[dependent.key] = next }
        result.append((dependent.key, next))
      }
    }
    return result
  }

  /// `key` and every switch whose State a change of `key` may change: what
  /// a write of `key` may touch.
  public func reach(of key: String) -> [String] {
    guard let entry = entry(key), !entry.dependents.isEmpty else { return [key] }
    return [key] + Self.downstream(of: entry).map(\.key.string)
  }

  /// The switches downstream of `entry` (its dependents, theirs, …), in the
  /// order to settle them, each once.
  private static func downstream(of entry: Entry) -> [Entry] {
    // Most often its dependents are the whole of it (airplane mode's
    // radios), in order already: no set of those placed.
    if !entry.leadsToAChain { return entry.dependents }
    var reached: [Entry] = []
    var placed = Set<Int>()
    var frontier = [entry]
    while let next = frontier.popLast() {
      for dependent in next.dependents where placed.insert(dependent.position).inserted {
        reached.append(dependent)
        frontier.append(dependent)
      }
    }
    reached.sort { $0.position < $1.position }
    return reached
  }
}
