import SwitchCore
import SwitchProtocol
import SwitchSystem

/// The deadlines of tried changes, timed values and holds (SEMANTICS.md
/// rules 20–22): kept in the State, so in the database with each change;
/// indexed here by key; the two timers (`DeadlineTimers`) armed for the
/// earliest. What ends when is SwitchCore's (`Rules.expired`,
/// `TriedChange.isDue`); this file finds what is due and makes each one a
/// write like any other (the apply command, dependents, one change each).
struct DeadlineIndex {
  /// The earliest wall-clock deadline of each switch that has one.
  var byKey: [String: Int64] = [:]
  /// The tried change of each switch pending one.
  var tried: [String: TriedChange] = [:]
  /// The connection that made each tried change, while it is open and
  /// switchd has not restarted since (after a restart only the deadline decides).
  var makers: [String: UInt64] = [:]
  /// Switches whose ending was handed to a group and not decided yet: not
  /// due again until it is (its apply command may take a while).
  var ending: Set<String> = []
  /// Set when the earliest deadline may have moved: the timers are armed again.
  var moved = false
  /// Each user's timed value of a user-scope switch, by switch and uid.
  var byUser: [UserKey: Int64] = [:]
  /// Each user's tried change of a user-scope switch, and the connection
  /// that made it (as `tried` and `makers`).
  var triedByUser: [UserKey: TriedChange] = [:]
  var userMakers: [UserKey: UInt64] = [:]
  /// Users' timers whose end was handed to a group and not decided yet.
  var endingUsers: Set<UserKey> = []
  /// Tried changes (`revertOnDisconnect`) whose maker's connection closed:
  /// due now (SEMANTICS.md rule 20), while the trial is still the one
  /// named here. A revert whose commit failed is then tried again after
  /// the pause, as one past its deadline is (it waited for the trial's
  /// deadline, the second review). In memory: after a restart only the
  /// deadline decides, as for `makers`.
  var makerGone: [String: TriedChange] = [:]
  var userMakerGone: [UserKey: TriedChange] = [:]

  /// `user`'s value of `key` as it now is (nil: none): its timer and its trial.
  mutating func note(_ key: String, user: UInt32, _ value: UserValue?) {
    let deadline = value?.expiresAt
    let pending = value?.pending
    if deadline == nil && pending == nil && byUser.isEmpty && triedByUser.isEmpty { return }
    let timer = UserKey(key: key, user: user)
    if byUser[timer] != deadline {
      byUser[timer] = deadline
      moved = true
    }
    if triedByUser[timer] != pending {
      triedByUser[timer] = pending
      if pending == nil { userMakers[timer] = nil }
      moved = true
    }
  }

  mutating func note(_ key: String, _ state: SwitchState) {
    // Most changes have no deadline and most machines none pending: no
    // look-ups then (every committed change comes through here), and none
    // of the State's time fields read (`hasDeadlines` covers a tried change).
    if byKey.isEmpty && tried.isEmpty && !state.hasDeadlines { return }
    let deadline = state.nextDeadline
    if byKey[key] != deadline {
      byKey[key] = deadline
      moved = true
    }
    if tried[key] != state.pending {
      tried[key] = state.pending
      if state.pending == nil { makers[key] = nil }
      moved = true
    }
  }

  var earliestWall: Int64? {
    let switches = byKey.lazy.filter { !ending.contains($0.key) }.map(\.value).min()
    let users = byUser.lazy.filter { !endingUsers.contains($0.key) }.map(\.value).min()
    return [switches, users].compactMap { $0 }.min()
  }

  /// Whether `key`'s trial is one whose maker left.
  func makerIsGone(_ key: String, _ tried: TriedChange) -> Bool { makerGone[key] == tried }

  func makerIsGone(_ timer: UserKey, _ tried: TriedChange) -> Bool {
    userMakerGone[timer] == tried
  }

  /// Forgets the trials whose maker left that are settled or replaced.
  mutating func forgetSettledMakersGone() {
    if !makerGone.isEmpty { makerGone = makerGone.filter { tried[$0.key] == $0.value } }
    if !userMakerGone.isEmpty {
      userMakerGone = userMakerGone.filter { triedByUser[$0.key] == $0.value }
    }
  }

  var earliestBoot: Int64? {
    // A trial whose maker left is due now (0: the boot clock's past).
    if makerGone.contains(where: { tried[$0.key] == $0.value && !ending.contains($0.key) })
      || userMakerGone.contains(where: {
        triedByUser[$0.key] == $0.value && !endingUsers.contains($0.key)
      })
    {
      return 0
    }
    let switches = tried.lazy.filter { !ending.contains($0.key) }.map(\.value.bootDeadline).min()
    let users = triedByUser.lazy.filter { !endingUsers.contains($0.key) }
      .map(\.value.bootDeadline).min()
    return [switches, users].compactMap { $0 }.min()
  }
}

extension Writer {
  /// Who carries out a timed value's or hold's end: switchd's timer. The
  /// rules judge it by the State, the policy and who made the value
  /// (`Rules.holdWinsOverUndo`), not by this caller's rights.
  static let timerCaller = Caller(actor: .timer, isAdmin: true, mayWrite: true)

  /// Who reverts a tried change nobody confirmed: its maker (the change's
  /// actor, PROTOCOL.md), with the right to.
  static func revertCaller(_ tried: TriedChange) -> Caller {
    Caller(actor: tried.maker, isAdmin: true, mayWrite: true)
  }

  /// Where the boot clock is now.
  var bootMoment: BootMoment { BootMoment(milliseconds: bootClockMilliseconds(), id: boot.id) }

  /// Indexes every switch's deadlines and starts the timers. What passed
  /// while switchd was stopped (and a tried change of another boot) is due
  /// at once: `run` carries it out before any write, once, in deadline order.
  func startDeadlines(jobs: BlockingQueue<WriterJob>) {
    rebuildDeadlines()
    do {
      deadlineTimers = try DeadlineTimers { jobs.push(.deadlinesDue) }
    } catch {
      log.error("tried changes, timed values and holds will not end: \(error)")
    }
    rearmDeadlines()
  }

  func stopDeadlines() {
    deadlineTimers?.stop()
    deadlineTimers = nil
  }

  /// After a reload replaced the switches: every deadline is looked up
  /// again. A switch the schema no longer declares keeps its row but no
  /// timer (its ending would be refused, and the timer fire again at once);
  /// declared again, its deadlines count again.
  func rebuildDeadlines() {
    deadlines.byKey.removeAll(keepingCapacity: true)
    deadlines.tried.removeAll(keepingCapacity: true)
    deadlines.byUser.removeAll(keepingCapacity: true)
    deadlines.triedByUser.removeAll(keepingCapacity: true)
    for (key, record) in records where catalog.switches[key] != nil {
      deadlines.note(key, record.state)
    }
    for (key, user, value) in users.withDeadlines()
    where catalog.switches[key]?.scope == .user {
      deadlines.note(key, user: user, value)
    }
    deadlines.moved = true
  }

  /// Arms the timers for the earliest deadlines, when they may have moved.
  func rearmDeadlines() {
    guard deadlines.moved else { return }
    deadlines.moved = false
    var wall = [deadlines.earliestWall, scheduleChangesAt].compactMap { $0 }.min()
    var boot = deadlines.earliestBoot
    // While commits fail (a full disk) a passed deadline is tried again
    // after a pause, not at once: each try may run the switch's command,
    // which was spawned again every millisecond (the review).
    if failedCommits > 0 {
      let pause = Self.retryPause(afterFailures: failedCommits)
      wall = wall.map { max($0, wallClockMilliseconds() + pause) }
      boot = boot.map { max($0, bootClockMilliseconds() + pause) }
    }
    deadlineTimers?.arm(wall: wall)
    deadlineTimers?.arm(boot: boot)
  }

  /// How long a deadline waits after `failures` failed commits in a row:
  /// 1 s, doubling to 30 s.
  static func retryPause(afterFailures failures: Int) -> Int64 {
    min(30_000, 1000 << Int64(min(max(failures, 1) - 1, 5)))
  }

  /// What is due now, in deadline order (then by key): one write each. A
  /// tried change that is due is reverted; otherwise the switch's earliest
  /// passed deadline is carried out. A switch with two passed deadlines is
  /// due again once the first is committed.
  func dueExpiries() -> [GroupItem] {
    let now = wallClockMilliseconds()
    let boot = bootMoment
    var due: [(order: Int64, key: String, item: WriteRequest)] = []
    // Connection 0 and slot 0: nobody is answered.
    let nobody = Ticket(connection: 0, slot: 0, part: 0, id: .null)
    deadlines.forgetSettledMakersGone()
    for (key, tried) in deadlines.tried where !deadlines.ending.contains(key) {
      guard tried.isDue(at: boot) || deadlines.makerIsGone(key, tried) else { continue }
      // A tried change of another boot goes first: its deadline means nothing now.
      let order = tried.bootID == boot.id ? now - (boot.milliseconds - tried.bootDeadline) : 0
      due.append((order, key, Self.queuedRevert(key, tried, user: nil)))
    }
    for (key, deadline) in deadlines.byKey
    where deadline <= now && !deadlines.ending.contains(key)
      && !due.contains(where: { $0.key == key })
    {
      due.append(
        (
          deadline, key,
          WriteRequest(ticket: nobody, key: key, operation: .expire, caller: Self.timerCaller)
        ))
    }
    for (timer, tried) in deadlines.triedByUser where !deadlines.endingUsers.contains(timer) {
      guard tried.isDue(at: boot) || deadlines.makerIsGone(timer, tried) else { continue }
      let order = tried.bootID == boot.id ? now - (boot.milliseconds - tried.bootDeadline) : 0
      // Its maker, acting as the user: the revert of their own value.
      due.append((order, timer.key, Self.queuedRevert(timer.key, tried, user: timer.user)))
    }
    for (timer, deadline) in deadlines.byUser
    where deadline <= now && !deadlines.endingUsers.contains(timer)
      && deadlines.triedByUser[timer] == nil
    {
      // The timer acting as the user: the end of their own value (`writesUserValue`).
      due.append(
        (
          deadline, timer.key,
          WriteRequest(
            ticket: nobody, key: timer.key, operation: .expire,
            caller: Self.timerCaller.acting(as: timer.user))
        ))
    }
    // Deadline order; the switch's own ending before its users' on a tie.
    due.sort {
      ($0.order, $0.key, $0.item.caller.actingAs ?? 0) < (
        $1.order, $1.key, $1.item.caller.actingAs ?? 0
      )
    }
    // The timers are one-shot: armed again for what is left (or, the clock
    // having been set back, for what is now later).
    deadlines.moved = true
    for entry in due {
      if let user = entry.item.caller.actingAs {
        deadlines.endingUsers.insert(UserKey(key: entry.key, user: user))
      } else {
        deadlines.ending.insert(entry.key)
      }
    }
    rearmDeadlines()
    return due.map { .write($0.item) }
  }

  /// Whether a revert switchd queued itself (at a deadline, or when the
  /// maker's connection closed) still stands when it is decided: the writes
  /// before it in its group may have settled the trial it was queued for
  /// and tried another, which is neither due nor its maker's gone. (The
  /// revert's caller may settle any trial, so the rules cannot tell.)
  /// `ownValue`: the revert is of the user's own value (`writesUserValue`).
  func queuedRevertStands(_ write: borrowing WriteRequest, ownValue: Bool) -> Bool {
    let pending: TriedChange?
    let maker: UInt64?
    if ownValue {
      let timer = UserKey(hashedKey: write.hashedKey, user: write.caller.subject)
      pending = users.value(write.hashedKey, user: timer.user)?.pending
      maker = deadlines.userMakers[timer]
    } else {
      pending = records[write.hashedKey]?.state.pending
      maker = deadlines.makers[write.key]
    }
    // Nothing pending: the rules make it a no-op.
    guard let pending else { return true }
    return pending.isDue(at: bootMoment) || (pending.revertOnDisconnect && maker == nil)
  }

  /// An ending was decided (committed, or found to change nothing).
  func endingDecided(_ key: String) {
    if deadlines.ending.remove(key) != nil { deadlines.moved = true }
  }

  /// The end of `user`'s timed value of `key` was decided.
  func userEndingDecided(_ key: String, _ user: UInt32) {
    let timer = UserKey(key: key, user: user)
    if deadlines.endingUsers.remove(timer) != nil { deadlines.moved = true }
  }

  /// A connection closed: the tried changes it made with
  /// `revertOnDisconnect` are reverted at once, by their maker.
  func makerLeft(_ connection: UInt64) -> [GroupItem] {
    var items: [GroupItem] = []
    let usersMade = deadlines.userMakers.filter { $0.value == connection }.keys
    for timer in usersMade.sorted(by: { ($0.key, $0.user) < ($1.key, $1.user) }) {
      deadlines.userMakers[timer] = nil
      if let tried = Self.revertsOnLeaving(
        timer, deadlines.triedByUser[timer], ending: &deadlines.endingUsers)
      {
        deadlines.userMakerGone[timer] = tried
        items.append(.write(Self.queuedRevert(timer.key, tried, user: timer.user)))
      }
    }
    for (key, maker) in deadlines.makers.sorted(by: { $0.key < $1.key }) where maker == connection {
      deadlines.makers[key] = nil
      if let tried = Self.revertsOnLeaving(key, deadlines.tried[key], ending: &deadlines.ending) {
        deadlines.makerGone[key] = tried
        items.append(.write(Self.queuedRevert(key, tried, user: nil)))
      }
    }
    return items
  }

  /// `tried` when its maker's leaving reverts it (`revertOnDisconnect`),
  /// and its ending is not under way already (then marked so).
  private static func revertsOnLeaving<Key: Hashable>(
    _ key: Key, _ tried: TriedChange?, ending: inout Set<Key>
  ) -> TriedChange? {
    guard let tried, tried.revertOnDisconnect, ending.insert(key).inserted else { return nil }
    return tried
  }

  /// The revert switchd queues of `tried` (the switch's, or `user`'s own
  /// value): by its maker, answered to nobody.
  static func queuedRevert(_ key: String, _ tried: TriedChange, user: UInt32?) -> WriteRequest {
    let maker = revertCaller(tried)
    return WriteRequest(
      ticket: Ticket(connection: 0, slot: 0, part: 0, id: .null), key: key, operation: .revert,
      caller: user.map { maker.acting(as: $0) } ?? maker)
  }
}
