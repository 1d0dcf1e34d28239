import SwitchCore
import SwitchProtocol

/// The writer's copy of every user's own values of user-scope switches,
/// with what a failed commit must undo and what the next checkpoint writes.
struct WriterUserValues {
  private(set) var values: UserValues = [:]
  /// What each value set in the group being committed replaced (nil: never set), oldest first.
  private var undo: [(key: HashedKey, user: UInt32, value: UserValue?)] = []
  /// The values committed since the last checkpoint, repeats kept: made
  /// unique when the checkpoint reads them (or when they pile up), not per
  /// commit, where a Set's insert cost ~350 instructions a toggle of a
  /// user's value (callgrind).
  private var changedSinceCheckpoint: [UserKey] = []
  /// Past this many entries they are made unique at once (a checkpoint
  /// comes every 4,096 revisions, unless it keeps failing).
  static let changedBound = 16_384
  /// Every value that had a deadline (a timed value or a tried change) when
  /// it was loaded or set since the last `rebuildDeadlines`: a superset of
  /// those that have one now, so the rebuild reads these and not every value
  /// (with a million values the two rebuilds of a start read each, ~260M
  /// instructions, a tenth of the start-up's on the writer's thread,
  /// callgrind). Kept apart from `Deadlines`, which leaves out values of
  /// switches the schema does not declare now but may again after a reload.
  private(set) var mayHaveDeadlines: Set<UserKey> = []

  /// `user`'s own value of `key` (nil: never set), read in place.
  func value(_ key: String, user: UInt32) -> UserValue? { value(HashedKey(key), user: user) }

  func value(_ key: HashedKey, user: UInt32) -> UserValue? {
    guard let slot = values.index(forKey: key) else { return nil }
    return values[slot: slot][user]
  }

  /// The values loaded at start, and which of them have deadlines.
  mutating func load(_ loaded: UserValues, withDeadlines: [UserKey]) {
    values = loaded
    mayHaveDeadlines = Set(withDeadlines)
  }

  mutating func set(_ key: HashedKey, user: UInt32, _ value: UserValue) {
    if value.hasDeadlines { mayHaveDeadlines.insert(UserKey(hashedKey: key, user: user)) }
    // One look-up of the key for the read and the write (each hashes it).
    guard let slot = values.index(forKey: key) else {
      values[key] = [user: value]
      undo.append((key, user, nil))
      return
    }
    undo.append((key, user, values[slot: slot].updateValue(value, forKey: user)))
  }

  /// The group committed: its values stay, and go into the next checkpoint.
  mutating func committed() {
    // Each entry moved out as it is taken (the order does not matter: the
    // checkpoint makes them unique): iterating copied each one, value
    // included, and emptying the array destroyed them one by one after
    // (~250 instructions a toggle of a user's value, callgrind).
    while let entry = undo.popLast() {
      changedSinceCheckpoint.append(UserKey(hashedKey: entry.key, user: entry.user))
    }
    if changedSinceCheckpoint.count > Self.changedBound {
      changedSinceCheckpoint = Array(Set(changedSinceCheckpoint))
    }
  }

  /// The group's commit failed: every value it set goes back, newest
  /// first. Returns whose they were (their timers are looked up again).
  mutating func rollBack() -> [(key: String, user: UInt32)] {
    for entry in undo.reversed() {
      if entry.value?.hasDeadlines == true {
        mayHaveDeadlines.insert(UserKey(hashedKey: entry.key, user: entry.user))
      }
      values[entry.key, default: [:]][entry.user] = entry.value
      if values[entry.key]?.isEmpty == true { values[entry.key] = nil }
    }
    defer { undo.removeAll(keepingCapacity: true) }
    return undo.map { ($0.key.string, $0.user) }
  }

  /// The rows the next checkpoint writes.
  var rowsToCheckpoint: [(key: String, user: UInt32, value: UserValue)] {
    Set(changedSinceCheckpoint).compactMap { changed in
      values[changed.key]?[changed.user].map { (changed.key, changed.user, $0) }
    }
  }

  /// How many entries wait for the checkpoint, repeats included (tests).
  var changedCount: Int { changedSinceCheckpoint.count }

  /// The values that have deadlines now, the others forgotten.
  mutating func withDeadlines() -> [(key: String, user: UInt32, value: UserValue)] {
    var found: [(key: String, user: UInt32, value: UserValue)] = []
    var kept: Set<UserKey> = []
    for candidate in mayHaveDeadlines {
      guard let value = value(candidate.hashedKey, user: candidate.user), value.hasDeadlines
      else { continue }
      found.append((candidate.key, candidate.user, value))
      kept.insert(candidate)
    }
    mayHaveDeadlines = kept
    return found
  }

  mutating func checkpointed() { changedSinceCheckpoint.removeAll(keepingCapacity: true) }
}

/// A switch's key and one of its users: the writer's tables of what a
/// checkpoint owes and of users' timers, hashed with `KeyHash`.
struct UserKey: Hashable {
  var hashedKey: HashedKey
  var user: UInt32

  var key: String { hashedKey.string }

  func _rawHashValue(seed: Int) -> Int { hashedKey.hash(user: user, seed: seed) }
}

// In an extension, so that the memberwise `init(hashedKey:user:)` stays.
extension UserKey {
  init(key: String, user: UInt32) { self.init(hashedKey: HashedKey(key), user: user) }
}

extension Writer {
  /// Decides a `set`, `toggle` or `reset` of a user's own value of a
  /// user-scope switch (the caller's, or the one it acts as) and, when it
  /// changes something, takes the next revision for it.
  /// `definition` is the switch's (looked up once for the whole decision).
  /// - Returns: the change to commit; nil when refused or a no-op (answered here).
  func writeUserValue(
    _ write: borrowing WriteRequest, _ definition: SwitchDefinition?, time: Int64,
    _ answers: inout [(Ticket, WriterOutput.Answer)]
  ) -> Change? {
    // Read from `write` where used, not copied out (a Caller's and a
    // Ticket's copies cost ~250 instructions a write, callgrind).
    let user = write.caller.subject
    // Looked up once, lent to the rules, the change and the answer.
    let record = records[write.hashedKey]
    let own = users.value(write.hashedKey, user: user)
    let policy = catalog.policies[write.hashedKey]
    let decided: UserDecision
    do throws(Refusal) {
      // Thrown, not a `Result`: the Result was copied out and destroyed
      // on every write (callgrind).
      decided = try Rules.nextUserValue(
        write.operation, key: write.key, definition: definition, record: record, own: own,
        policy: policy, caller: write.caller, lasting: write.lasting, at: time,
        boot: write.lasting.map { _ in bootMoment })
    } catch {
      answers.append((write.ticket, .refused(error)))
      return nil
    }
    guard let definition, let record else {
      // The rules refused it already (`UnknownSwitch`): not reached.
      answers.append((write.ticket, .refused(.unknownSwitch(key: write.key))))
      return nil
    }
    guard
      let change = decided.change(
        revision: revision + 1, time: time, cause: write.operation.cause,
        actor: write.caller.actor, record: record, own: own,
        defaultChecked: definition.defaultChecked)
    else {
      answers.append(
        (
          write.ticket,
          .write(
            .success(
              WriteOutcome(
                user: user, record, definition, policy, changed: false, after: own)))
        ))
      return nil
    }
    revision += 1
    let value = change.userValue
    users.set(write.hashedKey, user: user, value)
    deadlines.note(write.key, user: user, value)
    if case .confirmWithin = write.lasting {
      deadlines.userMakers[UserKey(hashedKey: write.hashedKey, user: user)] =
        write.ticket.connection
    }
    answers.append(
      (
        write.ticket,
        .write(
          .success(
            WriteOutcome(user: user, record, definition, policy, changed: true, after: value)))
      ))
    return change
  }
}

extension WriteOutcome {
  /// A write of one user's value: the switch as that user reads it after
  /// it (`after`: their value then; nil: never set).
  init(
    user: UInt32, _ record: borrowing SwitchRecord, _ definition: SwitchDefinition,
    _ policy: PolicyRule?, changed: Bool, after: UserValue?
  ) {
    self.changed = changed
    self.record = Visibility.record(record, own: after, definition: definition)
    self.definition = definition
    policySource = Rules.policySource(state: record.state, rule: policy)
    self.user = user
  }
}
