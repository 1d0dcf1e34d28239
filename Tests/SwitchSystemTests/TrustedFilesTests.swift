import Glibc
import SwitchTestSupport
import Testing

@testable import SwitchSystem

/// `TrustedFiles`: only regular files of root or the daemon's user that
/// neither group nor others may write, never opening anything else.
@Suite struct TrustedFilesTests {
  let trust = TrustedFiles()

  /// Reads `name` of the trusted directory `base`.
  func read(_ name: String, in base: String) throws(TrustedFiles.Problem) -> [UInt8] {
    let directory = try trust.openDirectory(base)
    return try trust.read(name, in: directory, limit: 1 << 20)
  }

  func problem(_ name: String, in base: String) -> TrustedFiles.Problem? {
    do throws(TrustedFiles.Problem) {
      _ = try read(name, in: base)
      return nil
    } catch {
      return error
    }
  }

  func file(_ path: String, _ text: String, mode: mode_t = 0o644) {
    let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode)
    _ = Array(text.utf8).withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    close(fd)
    chmod(path, mode)
  }

  @Test func aTrustedRegularFileAndALinkToOneAreRead() throws {
    try withTemporaryDirectory { (base: String) throws in
      chmod(base, 0o755)
      file(base + "/a.conf", "[a]\n")
      symlink(base + "/a.conf", base + "/b.conf")
      #expect(try read("a.conf", in: base) == Array("[a]\n".utf8))
      #expect(try read("b.conf", in: base) == Array("[a]\n".utf8))
      #expect(problem("none.conf", in: base) == .missing(path: base + "/none.conf"))
    }
  }

  @Test(.needsRoot("gives a link to another uid (lchown)"))
  func aLinkOfAnotherUserIsNamedAsALink() throws {
    try withTemporaryDirectory { (base: String) throws in
      chmod(base, 0o755)
      file(base + "/a.conf", "[a]\n")
      symlink(base + "/a.conf", base + "/b.conf")
      #expect(lchown(base + "/b.conf", 65534, 65534) == 0)
      let text = problem("b.conf", in: base).map { "\($0)" } ?? "read"
      #expect(text.contains("b.conf: not trusted: a symbolic link owned by uid 65534"), "\(text)")
      #expect(!text.contains("mode 0000"), "\(text)")
    }
  }

  /// The file checked is the file read: a link swapped after the checks
  /// for one to a FIFO (whose open would wake a writer waiting on it, or a
  /// device's, which reaches its driver) still reads the file checked,
  /// held since the checks and opened itself, never by its name again.
  @Test func aLinkSwappedAfterTheChecksStillReadsTheFileChecked() throws {
    try withTemporaryDirectory { (base: String) throws in
      chmod(base, 0o755)
      file(base + "/real.conf", "[checked]\n")
      mkfifo(base + "/fifo", 0o644)
      symlink(base + "/real.conf", base + "/a.conf")
      let directory = try trust.openDirectory(base)
      let read = try trust.read("a.conf", in: directory, limit: 1 << 20) {
        unlink(base + "/a.conf")
        symlink(base + "/fifo", base + "/a.conf")
      }
      #expect(read == Array("[checked]\n".utf8))
    }
  }

  @Test func whatIsNotARegularFileIsNamedAndNeverRead() throws {
    try withTemporaryDirectory { (base: String) throws in
      chmod(base, 0o755)
      mkfifo(base + "/fifo.conf", 0o644)
      mkdir(base + "/dir.conf", 0o755)
      symlink(base + "/fifo.conf", base + "/to-fifo.conf")
      symlink(base + "/nothing", base + "/dangling.conf")
      #expect(
        problem("fifo.conf", in: base)?.description.contains("is a FIFO (named pipe)") == true)
      #expect(problem("dir.conf", in: base)?.description.contains("is a directory") == true)
      #expect(
        problem("to-fifo.conf", in: base)?.description.contains("a symbolic link to a FIFO")
          == true)
      #expect(
        problem("dangling.conf", in: base)?.description.contains("a symbolic link to nothing")
          == true)
    }
  }

  @Test func writableByGroupOrOthersIsUntrustedForFilesAndFolders() throws {
    try withTemporaryDirectory { (base: String) throws in
      chmod(base, 0o755)
      file(base + "/g.conf", "", mode: 0o664)
      file(base + "/o.conf", "", mode: 0o646)
      let group = problem("g.conf", in: base)?.description ?? ""
      #expect(group.contains("mode 0664: its group may write to it"), "\(group)")
      let others = problem("o.conf", in: base)?.description ?? ""
      #expect(others.contains("mode 0646: its others may write to it"), "\(others)")
      // A sticky folder is no safer for what is read.
      chmod(base, 0o1777)
      #expect(throws: TrustedFiles.Problem.self) { _ = try trust.openDirectory(base) }
    }
  }

  @Test func anOwnerOtherThanRootOrTheDaemonIsUntrusted() throws {
    let daemon = TrustedFiles(daemonUID: 4242)
    #expect(daemon.owners == [0, 4242])
    var status = stat()
    status.st_mode = S_IFREG | 0o644
    status.st_uid = 4242
    #expect(daemon.trusts(status))
    status.st_uid = 1000
    #expect(!daemon.trusts(status))
    status.st_uid = 0
    status.st_mode = S_IFREG | 0o620
    #expect(!daemon.trusts(status))
    let text = TrustedFiles.Problem.untrusted(
      path: "/etc/switchd/policy.d/a.conf", owner: 1000, mode: S_IFREG | 0o644,
      allowed: [0, 4242]
    ).description
    #expect(text.hasPrefix("/etc/switchd/policy.d/a.conf: not trusted: owner uid 1000"), "\(text)")
    #expect(text.contains("mode 0644: it is not owned by uid 0"), "\(text)")
    // A link's mode (always 0777) is not shown, nor taken for others' write.
    let link = TrustedFiles.Problem.untrusted(
      path: "/etc/switchd", owner: 1000, mode: S_IFLNK | 0o777, allowed: [0]
    ).description
    #expect(
      link.hasPrefix("/etc/switchd: not trusted: a symbolic link owned by uid 1000"), "\(link)")
    #expect(!link.contains("mode") && !link.contains("may write"), "\(link)")
  }
}
