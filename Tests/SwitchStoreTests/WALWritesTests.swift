import Glibc
import SwitchCore
import SwitchTestSupport
import Testing

@testable import SwitchStore

/// The store's VFS (`CSQLiteVFS`) writes each WAL frame, its 24-byte header
/// and its page, in one system call; SQLite's own unix VFS makes two. Counted
/// with the kernel's count of this thread's write calls (`syscw` in
/// /proc/thread-self/io), against the frames the commit added to the WAL.
@Suite struct WALWritesTests {
  /// WAL frames are a page and its header.
  static let frameSize = 4096 + 24

  @Test func eachFrameOfACommitIsOneWriteCall() throws {
    guard (try? writeCalls()) != nil else {
      print("skipped: /proc/thread-self/io is not readable here (no task I/O accounting)")
      return
    }
    try withTemporaryDirectory { directory in
      let path = directory + "/s.db"
      let store = try SwitchStore(path: path)
      defer { store.close() }
      // The first commit writes the WAL's own header as well.
      try commitEach(store, 1...1)
      var revision: Int64 = 1
      var frames = 0
      for round in 1...30 {
        let walBefore = try fileSize(path + "-wal")
        let callsBefore = try writeCalls()
        // Many keys a commit now and then: a commit of more than one page.
        let keys = round % 5 == 0 ? (0..<40).map { "key.\($0)" } : ["wifi"]
        try store.commit(
          keys.map { key in
            revision += 1
            return sampleChange(revision, key: key, checked: revision % 2 == 0)
          })
        let calls = try writeCalls() - callsBefore
        let added = try fileSize(path + "-wal") - walBefore
        #expect(added > 0 && added % Self.frameSize == 0, "round \(round): \(added) bytes")
        #expect(calls == added / Self.frameSize, "round \(round): \(calls) write calls")
        frames += added / Self.frameSize
      }
      #expect(frames > 30, "no commit of more than one frame")
      // What was written that way reads back.
      store.close()
      let reopened = try SwitchStore(path: path)
      defer { reopened.close() }
      #expect(try reopened.currentRevision() == revision)
    }
  }

  /// The write system calls this thread has made.
  private func writeCalls() throws -> Int {
    let text = try readWholeFile("/proc/thread-self/io")
    guard
      let line = text.split(separator: "\n").first(where: { $0.hasPrefix("syscw:") }),
      let count = Int(line.dropFirst("syscw:".count).trimmingPrefix(" "))
    else { throw FixtureError("no syscw in /proc/thread-self/io: \(text)") }
    return count
  }

  private func fileSize(_ path: String) throws -> Int {
    var status = stat()
    guard stat(path, &status) == 0 else { throw FixtureError("stat \(path): errno \(errno)") }
    return Int(status.st_size)
  }
}
