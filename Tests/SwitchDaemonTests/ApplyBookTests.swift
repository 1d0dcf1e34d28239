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
    book.park(id, .write(first, effective: false), keys: ["wifi"])
    #expect(!book.mayDecide(Self.write(2, "wifi")))
    #expect(book.mayDecide(Self.write(3, "bluetooth")))
    book.wait(Self.write(2, "wifi"))
    book.wait(Self.write(4, "wifi"))

    // The result comes back as the parked write, which may be decided.
    guard case .write(let resumed)? = book.resume(ApplyResult(id: id, failure: "jammed")) else {
      Issue.record("the parked write did not come back")
      return
    }
    #expect(resumed.ticket.slot == 1)
    #expect(resumed.applied?.failure == "jammed")
    #expect(resumed.applied?.effective == false)
    #expect(book.mayDecide(resumed))
    #expect(book.release(id).map(\.ticket.slot) == [2, 4])
    #expect(book.busy.isEmpty)
    // Releasing again changes nothing.
    #expect(book.release(id).isEmpty)
  }

  @Test func reconcilesAreCountedAndAReloadAnswerWaitsForItsOwn() {
    var book = ApplyBook()
    let a = book.newID()
    let b = book.newID()
    book.park(a, .system(SystemApply(id: a, key: "a", target: nil, counted: true)), keys: ["a"])
    book.park(b, .system(SystemApply(id: b, key: "b", target: nil, counted: false)), keys: ["b"])
    #expect(book.reconciling == [a])
    book.reloadAnswer = (
      Ticket(connection: 1, slot: 1, part: 0, id: .null),
      .reload(.success(ReloadSummary(switches: 2, policies: 0))), [a, b]
    )
    _ = book.release(a)
    #expect(book.reconciling.isEmpty)
    #expect(book.reloadAnswer?.remaining == [b])
    _ = book.release(b)
    #expect(book.reloadAnswer?.remaining.isEmpty == true)
  }

  @Test func heldBackJobsComeBackOnlyWhenNothingIsBusy() {
    var book = ApplyBook()
    let id = book.newID()
    book.park(id, .write(Self.write(1, "wifi"), effective: true), keys: ["wifi"])
    book.heldBack = [.reload(nil), .stop]
    #expect(book.isHoldingBack)
    #expect(book.takeHeldBack() == nil)
    _ = book.release(id)
    #expect(book.takeHeldBack()?.count == 2)
    #expect(!book.isHoldingBack)
  }
}
