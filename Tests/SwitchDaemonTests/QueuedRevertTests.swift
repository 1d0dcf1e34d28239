import SwitchCore
import SwitchProtocol
import SwitchTestSupport
import Testing

@testable import SwitchDaemon

/// A revert switchd queues itself (at a tried change's deadline, or when
/// its maker's connection closes) is decided after the writes before it in
/// its group. When those settled the trial it was queued for and tried
/// another, the revert leaves the new one alone: its caller, the maker with
/// an administrator's right, could settle any trial, so the writer checks
/// that the trial pending then is still due or still without its maker.
@Suite struct QueuedRevertTests {
  static let maker = Caller(
    actor: .peer(uid: 1000, gid: 1000, pid: 7), isAdmin: false, mayWrite: true)
  static let trial = Lasting.confirmWithin(seconds: 600, revertOnDisconnect: true)

  static func write(
    _ key: String, _ operation: SwitchCore.Operation, connection: UInt64, lasting: Lasting? = nil
  ) -> GroupItem {
    .write(
      WriteRequest(
        ticket: Ticket(connection: connection, slot: 1, part: 0, id: .null), key: key,
        operation: operation, caller: maker, lasting: lasting))
  }

  /// `wifi` is a system switch, `email` a user-scope one (the maker's own value).
  @Test(arguments: ["wifi", "email"])
  func aQueuedRevertLeavesATrialTriedBeforeItInItsGroup(key: String) throws {
    let harness = try WriterHarness()
    let writer = harness.writer
    _ = writer.commitGroup([
      Self.write(key, .set(checked: false, ifRevision: nil), connection: 1, lasting: Self.trial)
    ])
    // Connection 1 closes: its revert is queued behind a confirm and a
    // new try of connection 2's, all in one group.
    let queued = writer.makerLeft(1)
    #expect(queued.count == 1)
    _ = writer.commitGroup(
      [
        Self.write(key, .confirm, connection: 2),
        Self.write(key, .set(checked: true, ifRevision: nil), connection: 2, lasting: Self.trial),
      ] + queued)
    let state =
      key == "email"
      ? writer.users.value(key, user: 1000).map { ($0.checked, $0.pending) }
      : writer.records[key].map { ($0.state.checked, $0.state.pending) }
    #expect(state?.0 == true, "the new trial was reverted")
    #expect(state?.1 != nil)
    // Its own maker leaving still reverts it.
    _ = writer.commitGroup(writer.makerLeft(2))
    let after =
      key == "email"
      ? writer.users.value(key, user: 1000)?.checked : writer.records[key]?.state.checked
    #expect(after == false)
  }
}
