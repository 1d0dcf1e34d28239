import Glibc
import SwitchTestSupport
import Testing

@testable import SwitchSystem

@Suite struct TrustedDirectoryTests {
  let uid = getuid()

  @Test func createsEveryMissingDirectory() throws {
    try withTemporaryDirectory { base in
      let nested = base + "/a/b/c"
      try TrustedDirectory.create(nested, mode: 0o755, uid: uid)
      var st = stat()
      #expect(stat(nested, &st) == 0 && (st.st_mode & S_IFMT) == S_IFDIR)
    }
  }

  @Test func aRelativePathIsRefusedAndNothingIsMadeAtTheRoot() {
    let name = "switchd-relative-\(getpid())"
    #expect(throws: TrustedDirectory.Failure.self) {
      try TrustedDirectory.create(name + "/db", mode: 0o700, uid: uid)
    }
    var st = stat()
    #expect(stat("/" + name, &st) != 0)
  }

  @Test func aPrivateDirectoryIsMadeMode0700WhateverTheUmask() throws {
    try withTemporaryDirectory { base in
      let runtime = base + "/switchd-\(uid)"
      let old = umask(0)
      defer { umask(old) }
      try TrustedDirectory.create(runtime, mode: 0o755, uid: uid, privateDirectory: runtime)
      #expect(mode(of: runtime) == 0o700)
    }
  }

  /// A umask that takes the search bit (an in-process server narrows the
  /// test process's to 0177 while it binds, and a daemon spawned then
  /// inherits it) does not leave a new directory unsearchable.
  @Test func aNewDirectoryHasItsModeWhateverTheUmask() throws {
    try withTemporaryDirectory { base in
      let state = base + "/state/db"
      let old = umask(0o177)
      defer { umask(old) }
      try TrustedDirectory.create(state, mode: 0o755, uid: uid)
      umask(old)
      #expect(mode(of: base + "/state") == 0o755)
      #expect(mode(of: state) == 0o755)
    }
  }

  @Test func anExistingPrivateDirectoryWithALooserModeIsRefused() throws {
    try withTemporaryDirectory { base in
      let runtime = base + "/switchd-\(uid)"
      mkdir(runtime, 0o700)
      chmod(runtime, 0o755)
      #expect(
        throws: TrustedDirectory.Failure.untrusted(
          path: runtime, reason: "its mode is 0755, not 0700")
      ) {
        try TrustedDirectory.create(runtime, mode: 0o755, uid: uid, privateDirectory: runtime)
      }
    }
  }

  @Test func aSymbolicLinkInPlaceOfThePrivateDirectoryIsRefused() throws {
    try withTemporaryDirectory { base in
      let target = base + "/elsewhere"
      mkdir(target, 0o700)
      let runtime = base + "/switchd-\(uid)"
      symlink(target, runtime)
      #expect(
        throws: TrustedDirectory.Failure.untrusted(path: runtime, reason: "it is a symbolic link")
      ) {
        try TrustedDirectory.create(
          runtime + "/sub", mode: 0o755, uid: uid, privateDirectory: runtime)
      }
    }
  }

  /// A folder on the way others may write to is refused unless sticky
  /// (`/tmp`); the folder that holds switchd's own files, even sticky:
  /// there others could plant files under switchd's names (CONFIG.md).
  @Test func aDirectoryOthersMayWriteIsRefusedUnlessStickyOnTheWay() throws {
    try withTemporaryDirectory { base in
      let shared = base + "/shared"
      mkdir(shared, 0o755)
      chmod(shared, 0o777)
      #expect(throws: TrustedDirectory.Failure.self) {
        try TrustedDirectory.create(shared + "/switchd", mode: 0o755, uid: uid)
      }
      chmod(shared, 0o1777)
      try TrustedDirectory.create(shared + "/switchd", mode: 0o755, uid: uid)
      do throws(TrustedDirectory.Failure) {
        try TrustedDirectory.create(shared, mode: 0o755, uid: uid)
        Issue.record("a sticky folder others may write was taken for switchd's own files")
      } catch {
        #expect("\(error)".contains("mode 1777"), "\(error)")
        #expect("\(error)".contains("not from planting their own"), "\(error)")
      }
    }
  }

  @Test(
    .enabled(if: getuid() == 0, "needs root to give a directory to another user (chown)"))
  func aDirectoryAnotherUserCreatedFirstIsRefused() throws {
    try withTemporaryDirectory { base in
      let nobody: uid_t = 65534
      let runtime = base + "/switchd-\(uid)"
      mkdir(runtime, 0o700)
      #expect(chown(runtime, nobody, gid_t(nobody)) == 0)
      #expect(
        throws: TrustedDirectory.Failure.untrusted(
          path: runtime, reason: "it is owned by uid 65534, not \(uid)")
      ) {
        try TrustedDirectory.create(runtime, mode: 0o755, uid: uid, privateDirectory: runtime)
      }
      // Not only the private one: any directory on the way.
      let other = base + "/other"
      mkdir(other, 0o755)
      #expect(chown(other, nobody, gid_t(nobody)) == 0)
      #expect(throws: TrustedDirectory.Failure.self) {
        try TrustedDirectory.create(other + "/switchd", mode: 0o755, uid: uid)
      }
    }
  }

  /// A second name of another file (a hard link) is not switchd's file:
  /// writing the database there would rewrite that file.
  @Test func anOwnFileWithTwoNamesIsRefused() throws {
    try withTemporaryDirectory { base in
      let victim = base + "/victim"
      try writeWholeFile(victim, "keep")
      let database = base + "/switches.db"
      #expect(link(victim, database) == 0)
      #expect(
        throws: TrustedDirectory.Failure.untrusted(
          path: database, reason: "it has 2 names (hard links); switchd's files have one")
      ) {
        try TrustedDirectory.checkOwnFiles([database, database + "-wal"], uid: uid)
      }
      unlink(victim)
      try TrustedDirectory.checkOwnFiles([database, database + "-wal"], uid: uid)
    }
  }

  @Test func aGroupThatMayWriteIsNamedAsTheGroup() throws {
    try withTemporaryDirectory { base in
      let shared = base + "/shared"
      mkdir(shared, 0o755)
      chmod(shared, 0o775)
      #expect(
        throws: TrustedDirectory.Failure.untrusted(
          path: shared, reason: "its group may write to it (mode 0775) and it is not sticky")
      ) {
        try TrustedDirectory.create(shared + "/switchd", mode: 0o755, uid: uid)
      }
    }
  }
}
