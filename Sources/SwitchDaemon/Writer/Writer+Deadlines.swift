import SwitchCore
import SwitchProtocol
import SwitchSystem

/// The deadlines of timed values and holds (SEMANTICS.md rules 21–22): kept
/// in the State, so in the database with each change; indexed here by key;
/// one wall-clock timer armed for the earliest. What ends when is
/// `Rules.expired`'s; this file only finds what is due and makes each one a
/// write like any other (the apply command, dependents, one change each).
struct DeadlineIndex {
  /// The earliest deadline of each switch that has one.
  var byKey: [String: Int64] = [:]
  /// Switches whose expiry was handed to a group and not decided yet: not
  /// due again until it is (its apply command may take a while).
  var expiring: Set<String> = []
  /// Set when the earliest deadline may have moved: the timer is armed again.
  var moved = false

  mutating func note(_ key: String, _ state: SwitchState) {
    let deadline = state.nextDeadline
    guard byKey[key] != deadline else { return }
    byKey[key] = deadline
    moved = true
  }

  /// The earliest deadline not already being carried out.
  var earliest: Int64? {
    byKey.lazy.filter { !expiring.contains($0.key) }.map(\.value).min()
  }
}

extension Writer {
  /// Who carries out a deadline: switchd's timer, with the rights the
  /// change's maker had (the rules judge the expiry by the State alone).
  static let timerCaller = Caller(actor: .timer, isAdmin: true, mayWrite: true)

  /// Indexes every switch's deadlines and starts the timer: a deadline that
  /// passed while switchd was stopped fires at once, so it is carried out
  /// once, at start, in deadline order.
  func startDeadlines(jobs: BlockingQueue<WriterJob>) {
    rebuildDeadlines()
    do {
      deadlineTimer = try WallClockTimer { jobs.push(.deadlinesDue) }
    } catch {
      log.error("timed values and holds will not end: \(error)")
    }
    rearmDeadlines()
  }

  func stopDeadlines() {
    deadlineTimer?.stop()
    deadlineTimer = nil
  }

  /// After a reload replaced the switches: every deadline is looked up again.
  func rebuildDeadlines() {
    deadlines.byKey.removeAll(keepingCapacity: true)
    for (key, record) in records { deadlines.note(key, record.state) }
    deadlines.moved = true
  }

  /// Arms the timer for the earliest deadline, when it may have moved.
  func rearmDeadlines() {
    guard deadlines.moved else { return }
    deadlines.moved = false
    deadlineTimer?.arm(at: deadlines.earliest)
  }

  /// The expiries due now, in deadline order (then by key): one write each,
  /// which carries out that switch's earliest passed deadline. A switch with
  /// two passed deadlines is due again once the first is committed.
  func dueExpiries() -> [GroupItem] {
    let now = wallClockMilliseconds()
    let due = deadlines.byKey
      .filter { $0.value <= now && !deadlines.expiring.contains($0.key) }
      .sorted { ($0.value, $0.key) < ($1.value, $1.key) }
    // The timer is one-shot: armed again for what is left (or, the clock
    // having been set back, for what is now later).
    deadlines.moved = true
    for (key, _) in due { deadlines.expiring.insert(key) }
    rearmDeadlines()
    // Connection 0 and slot 0: nobody is answered.
    let ticket = Ticket(connection: 0, slot: 0, part: 0, id: .null)
    return due.map { key, _ in
      .write(WriteRequest(ticket: ticket, key: key, operation: .expire, caller: Self.timerCaller))
    }
  }

  /// An expiry was decided (committed, or found to change nothing).
  func expiryDecided(_ key: String) {
    if deadlines.expiring.remove(key) != nil { deadlines.moved = true }
  }

  /// The change an expiry whose apply command failed makes: the timer ends
  /// and the value stays as it is, `invalid` with the command's reason
  /// (SEMANTICS.md, after rule 22: the undo is a write like any other, but
  /// a deadline cannot be refused and tried again for ever).
  static func failedExpiry(
    _ state: SwitchState, next: SwitchState, reason: String
  ) -> SwitchState {
    var kept = state
    kept.expiresAt = next.expiresAt
    kept.readOnlyUntil = next.readOnlyUntil
    kept.disabledUntil = next.disabledUntil
    return kept.applied(failure: reason)
  }
}
