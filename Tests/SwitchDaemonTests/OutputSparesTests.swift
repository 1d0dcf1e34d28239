import Glibc
import Testing

@testable import SwitchDaemon

/// The outputs' arrays the loop hands back to the writer (`outputSpares`):
/// reloads answer through outputs that take no spare, and each gives one
/// back, so without a bound the queue grows by one a reload for good.
@Suite struct OutputSparesTests {
  @Test func sparesStayBoundedWhateverTheOutputsThatTakeNone() throws {
    let harness = try LoopHarness(daemonConf: "[Daemon]\nAdminGroup=\nLogLevel=warning\n")
    defer { harness.stop() }
    let peer = try TestClient(harness)
    defer { close(peer.fd) }
    let rounds = 50
    let input = FlowControlTests.lines(rounds * 2) { id in
      id % 2 == 1
        ? #"{"jsonrpc":"2.0","id":\#(id),"method":"reload"}"#
        : #"{"jsonrpc":"2.0","id":\#(id),"method":"toggle","params":{"key":"wifi"}}"#
    }
    peer.drive(input: input) { $0.lines.count >= rounds * 2 }
    #expect(peer.answered(inOrder: 1...(rounds * 2)))
    #expect(harness.server.revision == Int64(rounds))
    #expect(harness.server.outputSpares.drain().count <= WriterOutput.Spare.queued)
  }

  @Test func aBoundedPushDropsWhatWouldGoPastItsLimit() {
    let queue = BlockingQueue<Int>()
    #expect(queue.push(1, ifFewerThan: 2))
    #expect(queue.push(2, ifFewerThan: 2))
    #expect(!queue.push(3, ifFewerThan: 2))
    #expect(queue.drain() == [1, 2])
    #expect(queue.push(4, ifFewerThan: 2))
  }
}
