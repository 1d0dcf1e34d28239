import Glibc
import SwitchProtocol
import SwitchSystem
import Testing

@testable import SwitchDaemon

/// `backup` in a loop this test turns: the copy comes back as a descriptor
/// passed with the answer's line, and a second backup asked for while one is
/// being taken is `Overloaded`, not queued behind it.
@Suite struct BackupLoopTests {
  static let backupLine = Array(#"{"jsonrpc":"2.0","id":1,"method":"backup"}"#.utf8 + [10])

  /// Reads what `fd` has now: its lines, and the descriptors passed with them.
  static func read(_ fd: Int32, into lines: inout [String], _ passed: inout [Int32]) {
    var chunk = [UInt8](repeating: 0, count: 65_536)
    var buffer: [UInt8] = []
    while true {
      let (n, descriptors) = chunk.withUnsafeMutableBytes {
        DescriptorPassing.receive(fd, into: $0, flags: Int32(MSG_DONTWAIT))
      }
      passed += descriptors
      if n <= 0 { break }
      buffer += chunk[0..<n]
    }
    lines += buffer.split(separator: 10).map { String(decoding: $0, as: UTF8.self) }
  }

  @Test func aSecondBackupMeanwhileIsOverloadedAndTheFirstArrivesAsADescriptor() throws {
    let harness = try LoopHarness(daemonConf: "[Daemon]\nAdminGroup=\nLogLevel=warning\n")
    defer { harness.stop() }
    let first = try harness.connect()
    let second = try harness.connect()
    defer {
      close(first)
      close(second)
    }
    let deadline = monotonicSeconds() + 30
    while harness.server.connections.count < 2 && monotonicSeconds() < deadline {
      harness.server.turn(timeoutMilliseconds: 5)
    }
    // Both requests wait in their sockets, so one turn runs both: the first
    // starts the backup thread, whose outcome the loop takes only on a
    // later turn, and the second finds it running.
    for fd in [first, second] {
      #expect(send(fd, Self.backupLine, Self.backupLine.count, 0) == Self.backupLine.count)
    }
    harness.server.turn(timeoutMilliseconds: 1000)

    var firstLines: [String] = []
    var secondLines: [String] = []
    var passed: [Int32] = []
    var strays: [Int32] = []
    while (firstLines.isEmpty || secondLines.isEmpty) && monotonicSeconds() < deadline {
      harness.server.turn(timeoutMilliseconds: 5)
      Self.read(first, into: &firstLines, &passed)
      Self.read(second, into: &secondLines, &strays)
    }
    defer { for descriptor in passed + strays { close(descriptor) } }
    let refused = try JSONParser.parse(secondLines.first ?? "", maxDepth: 8)
    #expect(refused["error"]?["data"]?["name"]?.stringValue == "Overloaded")
    #expect(strays.isEmpty)
    let answer = try JSONParser.parse(firstLines.first ?? "", maxDepth: 8)
    #expect(answer["result"]?["revision"]?.int64Value == 0)
    #expect(passed.count == 1)
    if let copy = passed.first {
      var header = [UInt8](repeating: 0, count: 16)
      #expect(pread(copy, &header, 16, 0) == 16)
      #expect(header == Array("SQLite format 3\0".utf8))
      var status = stat()
      #expect(fstat(copy, &status) == 0)
      #expect(status.st_nlink == 0, "the copy has no name left")
      #expect(Int64(status.st_size) == answer["result"]?["bytes"]?.int64Value)
      #expect(fcntl(copy, F_GETFL) & O_ACCMODE == O_RDONLY)
    }
    #expect(access(harness.directory + "/switches.db.backup", F_OK) != 0)
  }
}
