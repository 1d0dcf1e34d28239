import SwitchCore
import SwitchProtocol
import Testing

@testable import SwitchDaemon

/// The writer's book of apply commands under way: who holds a key, who
/// waits for it and in which order.
@Suite struct ApplyBookTests {
  static let caller = Caller(
    actor: .peer(uid: 1000, gid: 1000, pid: 1), isAdmin: false, mayWrite: true)

  static func write(_ slot: UInt64, _ key: String) -> WriteRequest {
    WriteRequest(
      ticket: Ticket(connection: 1, slot: slot, part: 0, id: .null), key: key,
      operation: .toggle(ifRevision: nil), caller: caller)
  }

  @Test func writesOfABusyKeyWaitInOrderAndOthersDoNot() {
    var book = ApplyBook()
    let first = Self.write(1, "wifi")
    let id = book.newID()
    book.park(id, .write(first, effective: ["wifi": false]), keys: ["wifi"])
    #expect(!book.mayDecide(Self.write(2, "wifi"), touching: ["wifi"]))
    #expect(book.mayDecide(Self.write(3, "bluetooth"), touching: ["bluetooth"]))
    book.wait(Self.write(2, "wifi"), touching: ["wifi"])
    book.wait(Self.write(4, "wifi"), touching: ["wifi"])
    // Nothing goes past a waiting write of the same switch.
    #expect(!book.mayDecide(Self.write(5, "wifi"), touching: ["wifi"]))
    #expect(book.nextReady() == nil)

    // The result comes back as the parked write, which may be decided.
    guard case .write(let resumed)? = book.resume(ApplyResult(id: id, failure: "jammed")) else {
      Issue.record("the parked write did not come back")
      return
    }
    #expect(resumed.ticket.slot == 1)
    #expect(resumed.applied?.failure == "jammed")
    #expect(resumed.applied?.effective == ["wifi": false])
    book.release(id)
    #expect(book.busy.isEmpty)
    // One at a time: the second waits until the first has been decided.
    #expect(book.nextReady()?.ticket.slot == 2)
    #expect(book.nextReady()?.ticket.slot == 4)
    #expect(book.nextReady() == nil)
    #expect(book.mayDecide(Self.write(5, "wifi"), touching: ["wifi"]))
  }

  @Test func aWriteThatChangesSeveralSwitchesKeepsEachSwitchsOrder() {
    var book = ApplyBook()
    let id = book.newID()
    book.park(id, .write(Self.write(1, "wifi"), effective: ["wifi": false]), keys: ["wifi"])
    // Airplane mode would change wifi: it waits, and so does a later
    // airplane-mode write, although airplane mode itself is not busy.
    #expect(!book.mayDecide(Self.write(2, "airplane-mode"), touching: ["airplane-mode", "wifi"]))
    book.wait(Self.write(2, "airplane-mode"), touching: ["airplane-mode", "wifi"])
    #expect(!book.mayDecide(Self.write(3, "airplane-mode"), touching: ["airplane-mode", "wifi"]))
    book.wait(Self.write(3, "airplane-mode"), touching: ["airplane-mode", "wifi"])
    #expect(book.mayDecide(Self.write(4, "bluetooth"), touching: ["bluetooth"]))
    book.release(id)
    #expect(book.nextReady()?.ticket.slot == 2)
    let next = book.newID()
    book.park(
      next, .write(Self.write(2, "airplane-mode"), effective: ["wifi": false]),
      keys: ["airplane-mode", "wifi"])
    #expect(book.nextReady() == nil)
    book.release(next)
    #expect(book.nextReady()?.ticket.slot == 3)
  }

  @Test func reconcilesAreCountedAndAReloadAnswerWaitsForItsOwn() {
    var book = ApplyBook()
    let a = book.newID()
    let b = book.newID()
    book.park(
      a, .system(SystemApply(id: a, key: "a", target: nil, cause: .reconcile, counted: true)),
      keys: ["a"])
    book.park(
      b, .system(SystemApply(id: b, key: "b", target: nil, cause: .reconcile, counted: false)),
      keys: ["b"])
    #expect(book.reconciling == [a])
    book.reloadAnswer = (
      Ticket(connection: 1, slot: 1, part: 0, id: .null),
      .reload(.success(ReloadSummary(switches: 2, policies: 0))), [a, b]
    )
    book.release(a)
    #expect(book.reconciling.isEmpty)
    #expect(book.reloadAnswer?.remaining == [b])
    book.release(b)
    #expect(book.reloadAnswer?.remaining.isEmpty == true)
  }

  @Test func heldBackJobsComeBackOnlyWhenNothingIsBusy() {
    var book = ApplyBook()
    let id = book.newID()
    book.park(id, .write(Self.write(1, "wifi"), effective: ["wifi": true]), keys: ["wifi"])
    book.heldBack = [.reload(nil, .refused(errors: [])), .stop]
    #expect(book.isHoldingBack)
    #expect(book.takeHeldBack() == nil)
    book.release(id)
    #expect(book.takeHeldBack()?.count == 2)
    #expect(!book.isHoldingBack)
  }
}
