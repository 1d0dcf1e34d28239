import Glibc
import SwitchProtocol
import SwitchSystem
import SwitchTestSupport
import Testing

@testable import SwitchCtl

/// `switchctl backup FILE` without a daemon: the file is switchctl's own
/// (created new, 0600, before anything is asked), filled from the descriptor
/// the daemon passed, and gone again when the backup fails.
@Suite struct BackupCommandTests {
  /// A read-only descriptor of a file holding `bytes`, as the daemon passes one.
  static func passedCopy(_ bytes: [UInt8], in directory: String) throws -> Int32 {
    let path = directory + "/copy"
    guard let file = Descriptor(opening: path, O_WRONLY | O_CREAT | O_TRUNC, mode: 0o600) else {
      throw SystemError.last("open")
    }
    try file.writeAll(bytes)
    guard let copy = Descriptor(opening: path, O_RDONLY) else { throw SystemError.last("open") }
    unlink(path)
    return copy.release()
  }

  static func result(bytes: Int) -> JSONValue {
    .object([JSONMember("revision", .int(7)), JSONMember("bytes", .int(Int64(bytes)))])
  }

  @Test func theCommandLineNamesTheFile() {
    #expect(
      ArgumentParser.parse(["backup", "/tmp/b.db"]).map(\.command)
        == .success(
          .backup(path: "/tmp/b.db")))
    guard case .failure(let error) = ArgumentParser.parse(["backup"]) else {
      Issue.record("accepted without FILE")
      return
    }
    #expect(error.message == "'backup' needs FILE.")
  }

  @Test func theCopyIsWrittenIntoANewPrivateFile() throws {
    try withTemporaryDirectory { directory in
      let bytes = (0..<200_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
      let copy = try Self.passedCopy(bytes, in: directory)
      let target = directory + "/backup.db"
      var existedWhenAsked = false
      let result = try BackupCommand.run(to: target) { () throws(Failure) in
        existedWhenAsked = access(target, F_OK) == 0
        return (Self.result(bytes: bytes.count), copy)
      }
      #expect(existedWhenAsked, "the file exists before the daemon is asked")
      #expect(result.revision == 7)
      #expect(try readWholeFileBytes(target) == bytes)
      var status = stat()
      #expect(stat(target, &status) == 0)
      #expect(status.st_mode & 0o777 == 0o600)
      #expect(status.st_uid == geteuid())
      #expect(
        BackupCommand.summary(result, path: target)
          == "backup of revision 7 written to \(target) (200000 bytes)")
    }
  }

  @Test func anExistingFileIsNeverOverwrittenNorIsTheDaemonAsked() throws {
    try withTemporaryDirectory { directory in
      let target = directory + "/kept.db"
      guard let existing = Descriptor(opening: target, O_WRONLY | O_CREAT, mode: 0o644) else {
        throw SystemError.last("open")
      }
      try existing.writeAll(Array("precious".utf8))
      var asked = false
      do throws(Failure) {
        _ = try BackupCommand.run(to: target) { () throws(Failure) in
          asked = true
          return (Self.result(bytes: 0), nil)
        }
        Issue.record("an existing file was accepted")
      } catch {
        #expect(error.exitCode == .failure)
        #expect(
          error.lines == [
            "switchctl: cannot create \(target): File exists "
              + "(backup never overwrites: remove it or choose another name)"
          ])
      }
      #expect(!asked)
      #expect(try readWholeFileBytes(target) == Array("precious".utf8))
    }
  }

  /// The daemon's refusal of a caller that may not back up.
  static let refusal = RemoteError(
    code: .permissionDenied, message: "You may not call backup: only root may.",
    data: .object([JSONMember("name", .string("PermissionDenied"))]))

  @Test func aRefusalOrAMissingOrShortCopyLeavesNoFile() throws {
    try withTemporaryDirectory { directory in
      let target = directory + "/backup.db"
      Self.expectNoFile(at: target) { () throws(Failure) in throw .remote(Self.refusal) }
      Self.expectNoFile(at: target) { () throws(Failure) in (Self.result(bytes: 10), nil) }
      let short = try Self.passedCopy(Array("short".utf8), in: directory)
      Self.expectNoFile(at: target) { () throws(Failure) in (Self.result(bytes: 10), short) }
    }
  }

  /// A failure removes the file switchctl made, not whatever has its name
  /// by then (someone moved it away and put their own file there).
  @Test func aFailureLeavesAFileThatTookTheNameMeanwhile() throws {
    try withTemporaryDirectory { directory in
      let target = directory + "/backup.db"
      var failed = false
      do throws(Failure) {
        _ = try BackupCommand.run(to: target) { () throws(Failure) in
          #expect(rename(target, directory + "/moved") == 0)
          try? writeWholeFile(target, "someone else's")
          throw .remote(Self.refusal)
        }
      } catch {
        failed = true
      }
      #expect(failed, "the backup succeeded")
      #expect((try? readWholeFileBytes(target)) == Array("someone else's".utf8))
      #expect(access(directory + "/moved", F_OK) == 0)
    }
  }

  /// Whatever answers on the socket may pass any descriptor: one that is
  /// not a file (/dev/null, /dev/zero, a pipe) or a file of another size
  /// than announced is refused before anything is copied, so switchctl,
  /// often run as root, cannot be made to fill a disk.
  @Test func aDescriptorThatIsNotTheAnnouncedFileIsRefusedUncopied() throws {
    try withTemporaryDirectory { directory in
      let target = directory + "/backup.db"
      for device in ["/dev/null", "/dev/zero"] {
        guard let opened = Descriptor(opening: device, O_RDONLY) else {
          throw SystemError.last("open")
        }
        let fd = opened.release()
        let lines = Self.expectNoFile(at: target) { () throws(Failure) in
          (Self.result(bytes: 0), fd)
        }
        #expect(
          lines == ["switchctl: the descriptor switchd passed is not a file; nothing was copied"])
      }
      var ends: [Int32] = [0, 0]
      #expect(pipe(&ends) == 0)
      close(ends[1])
      Self.expectNoFile(at: target) { () throws(Failure) in (Self.result(bytes: 0), ends[0]) }
      let long = try Self.passedCopy(Array(repeating: 1, count: 100_000), in: directory)
      let lines = Self.expectNoFile(at: target) { () throws(Failure) in
        (Self.result(bytes: 10), long)
      }
      #expect(
        lines == ["switchctl: the copy switchd passed has 100000 bytes, not the 10 it announced"])
    }
  }

  /// A sparse file (a hole announced as bytes) is copied as sparse: the
  /// copy takes on the caller's disk what the file took on the sender's,
  /// with every byte the same.
  @Test func aSparseCopyStaysSparse() throws {
    try withTemporaryDirectory { directory in
      let path = directory + "/sparse"
      guard let file = Descriptor(opening: path, O_RDWR | O_CREAT | O_TRUNC, mode: 0o600) else {
        throw SystemError.last("open")
      }
      let size: Int64 = 64 << 20
      #expect(ftruncate(file.raw, off_t(size)) == 0)
      let head = Array("SQLite format 3\u{0}".utf8)
      let tail = Array("the end".utf8)
      #expect(pwrite(file.raw, head, head.count, 0) == head.count)
      #expect(pwrite(file.raw, tail, tail.count, off_t(size) - off_t(tail.count)) == tail.count)
      guard let copy = Descriptor(opening: path, O_RDONLY) else { throw SystemError.last("open") }
      let passed = copy.release()
      let target = directory + "/backup.db"
      _ = try BackupCommand.run(to: target) { () throws(Failure) in
        (Self.result(bytes: Int(size)), passed)
      }
      var status = stat()
      #expect(stat(target, &status) == 0 && Int64(status.st_size) == size)
      #expect(Int64(status.st_blocks) * 512 < 4 << 20, "the holes were written out")
      let bytes = try readWholeFileBytes(target)
      #expect(Array(bytes.prefix(head.count)) == head)
      #expect(Array(bytes.suffix(tail.count)) == tail)
      #expect(bytes.dropFirst(head.count).dropLast(tail.count).allSatisfy { $0 == 0 })
    }
  }

  /// Runs a backup that must fail and leave no file; the lines it printed.
  @discardableResult
  static func expectNoFile(
    at target: String, ask: () throws(Failure) -> (result: JSONValue, copy: Int32?),
    sourceLocation: SourceLocation = #_sourceLocation
  ) -> [String] {
    var lines: [String] = []
    var failed = false
    do throws(Failure) {
      _ = try BackupCommand.run(to: target, ask: ask)
    } catch {
      failed = error.exitCode != .success
      lines = error.lines
    }
    #expect(failed, "the backup succeeded", sourceLocation: sourceLocation)
    #expect(access(target, F_OK) != 0, "\(target) was left behind", sourceLocation: sourceLocation)
    return lines
  }
}
