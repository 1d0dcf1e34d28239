import Glibc
import SwitchProtocol
import SwitchSystem
import SwitchTestSupport
import Testing

/// Helpers for the durability suites (DurabilityEndToEndTests,
/// DurabilityStorageFaultTests), in one namespace so that they cannot clash
/// with other suites' helpers: a line socket with deadlines that reports a
/// dead peer instead of throwing, the whole change log, SQLite checks through
/// python3, and filesystems for real storage faults.
enum Durability {
  /// A JSON-RPC line socket whose reads take a deadline and tell a closed peer
  /// (the daemon was killed) apart from a slow one. Unlike `RPCClient` it never
  /// blocks past its deadline, so a storm thread notices a crash or a stall.
  final class LineSocket {
    enum Read {
      case line(String)
      case timedOut
      case closed
    }

    let fd: Int32
    private var buffer: [UInt8] = []
    private var peerClosed = false

    init(socketPath: String) throws {
      fd = try connectUnixSocket(socketPath)
    }

    deinit { Glibc.close(fd) }

    /// Sends all of `text`; false when the peer is gone.
    func send(_ text: String) -> Bool { sendAll(fd, Array(text.utf8)) }

    /// The next line (without its newline), waiting at most `timeout` seconds.
    /// Lines the peer sent before it died are still returned, then `.closed`.
    func readLine(timeout: Double) -> Read {
      let deadline = monotonicSeconds() + timeout
      while true {
        if let newline = buffer.firstIndex(of: 10) {
          let line = Array(buffer[..<newline])
          buffer.removeSubrange(...newline)
          return .line(String(decoding: line, as: UTF8.self))
        }
        if peerClosed { return .closed }
        let remaining = deadline - monotonicSeconds()
        if remaining <= 0 { return .timedOut }
        var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        let ready = poll(&descriptor, 1, Int32(remaining * 1000) + 1)
        if ready < 0 && errno != EINTR { peerClosed = true }
        if ready <= 0 { continue }
        var chunk = [UInt8](repeating: 0, count: 65_536)
        let n = chunk.withUnsafeMutableBytes {
          recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT))
        }
        if n > 0 {
          buffer += chunk[0..<n]
        } else if n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
          // End of stream, or ECONNRESET from a peer killed with unread input.
          peerClosed = true
        }
      }
    }
  }

  /// One JSON-RPC request line.
  static func requestLine(id: Int64, _ method: String, _ params: String = "{}") -> String {
    "{\"jsonrpc\":\"2.0\",\"id\":\(id),\"method\":\"\(method)\",\"params\":\(params)}\n"
  }

  /// An event's params without `watch`: what `history` returns as its Entry.
  static func entryOf(event: JSONValue) -> JSONValue {
    .object((event.objectMembers ?? []).filter { $0.name != "watch" })
  }

  /// The whole retained change log, oldest first, paged with `before`.
  static func fullHistory(_ client: RPCClient) throws -> [JSONValue] {
    var newestFirst: [JSONValue] = []
    var before: Int64?
    while true {
      let params = before.map { "{\"limit\":1000,\"before\":\($0)}" } ?? "{\"limit\":1000}"
      let page = try client.result("history", params)["entries"]?.arrayValue ?? []
      newestFirst += page
      guard page.count == 1000, let last = page.last?["revision"]?.int64Value else { break }
      before = last
    }
    return newestFirst.reversed()
  }

  /// The revisions of `entries`, in their order.
  static func revisions(_ entries: [JSONValue]) -> [Int64] {
    entries.map { $0["revision"]?.int64Value ?? -1 }
  }

  // MARK: SQLite from outside, through python3's sqlite3 module

  enum Python {
    /// python3 from PATH (or /usr/bin), nil when there is none.
    static let path: String? = {
      var directories = ["/usr/bin", "/usr/local/bin"]
      if let path = getenv("PATH") {
        directories = String(cString: path).split(separator: ":").map(String.init) + directories
      }
      for directory in directories where access(directory + "/python3", X_OK) == 0 {
        return directory + "/python3"
      }
      return nil
    }()

    /// Runs a query on a read-only connection; prints the first column of the
    /// first row.
    static func readOnlyQuery(_ database: String, _ sql: String) -> ProcessResult {
      run(
        """
        import sqlite3, sys
        db = sqlite3.connect('file:' + sys.argv[1] + '?mode=ro', uri=True)
        print(db.execute(sys.argv[2]).fetchone()[0])
        """, database, sql)
    }

    /// Runs statements on a read-write connection and closes it (which
    /// checkpoints a WAL database into its main file).
    static func execute(_ database: String, _ sql: String) -> ProcessResult {
      run(
        """
        import sqlite3, sys
        db = sqlite3.connect(sys.argv[1], isolation_level=None)
        db.executescript(sys.argv[2])
        db.close()
        """, database, sql)
    }

    /// Reads the database without waiting for a lock: prints the log's row
    /// count, or "locked" when another process holds the database.
    static func readWithoutWaiting(_ database: String) -> ProcessResult {
      run(
        """
        import sqlite3, sys
        try:
            db = sqlite3.connect('file:' + sys.argv[1] + '?mode=ro', uri=True, timeout=0)
            print(db.execute('SELECT count(*) FROM changes').fetchone()[0])
        except sqlite3.OperationalError as error:
            print('locked' if 'locked' in str(error) else error)
        """, database)
    }

    /// `PRAGMA integrity_check` on a read-only connection: "ok" when sound.
    static func integrityCheck(_ database: String) -> String {
      let result = readOnlyQuery(database, "PRAGMA integrity_check")
      guard result.status == 0 else { return "python3 failed: \(result.stderr)" }
      var text = result.stdout
      while text.hasSuffix("\n") { text.removeLast() }
      return text
    }

    private static func run(_ script: String, _ arguments: String...) -> ProcessResult {
      guard let path else { return ProcessResult(status: -1, stdout: "", stderr: "no python3") }
      return runProcess([path, "-c", script] + arguments)
    }
  }

  static func randomBytes(_ count: Int) -> [UInt8] {
    (0..<count).map { _ in UInt8.random(in: 0...255) }
  }

  // MARK: Small filesystems for real storage faults

  /// Lazy unmount: detaches even while something still has a file open.
  static func lazyUnmount(_ directory: String) {
    _ = runProcess(["/bin/umount", "-l", directory])
  }

  enum Tmpfs {
    /// Whether this process may mount a tmpfs (root, or CAP_SYS_ADMIN, and a
    /// kernel that lets it): probed once, by mounting one.
    static let isMountable: Bool = {
      guard let directory = try? makeTemporaryDirectory("switchd-e2e-probe") else { return false }
      defer { removeTree(directory) }
      guard mount(at: directory, size: "64k") else { return false }
      lazyUnmount(directory)
      return true
    }()

    /// Mounts a tmpfs of `size` (mount(8) syntax) at `directory`.
    static func mount(at directory: String, size: String) -> Bool {
      runProcess(["/bin/mount", "-t", "tmpfs", "-o", "size=\(size),mode=0755", "tmpfs", directory])
        .status == 0
    }

    /// Fills the filesystem holding `directory` with one file until ENOSPC.
    /// Returns the file's path.
    static func fill(_ directory: String) -> String {
      let filler = directory + "/filler"
      // dd stops at ENOSPC with a non-zero status: that is the point.
      _ = runProcess(["/bin/dd", "if=/dev/zero", "of=" + filler, "bs=4k"])
      return filler
    }
  }

  // MARK: Starts that must be refused

  typealias StartOutcome = DaemonFixture.StartOutcome

  /// `daemon.startExpectingRefusal()`, under the name it had here first.
  static func startExpectingRefusal(_ daemon: DaemonFixture) throws -> StartOutcome {
    try daemon.startExpectingRefusal()
  }

  /// Nil when equal; otherwise the sizes and the first differing offsets.
  static func byteDifferences(_ before: [UInt8]?, _ after: [UInt8]?) -> String? {
    guard let before, let after else { return before == nil && after == nil ? nil : "unreadable" }
    if before == after { return nil }
    var offsets: [Int] = []
    for i in 0..<min(before.count, after.count) where before[i] != after[i] {
      offsets.append(i)
      if offsets.count == 8 { break }
    }
    return "\(before.count) -> \(after.count) bytes; first differing offsets \(offsets)"
  }

  // MARK: A loop-mounted ext4 that can be forced read-only under a running daemon

  enum LoopExt4 {
    static let tools: (mkfs: String, fsck: String, losetup: String)? = {
      for directory in ["/usr/sbin", "/sbin"]
      where ["mkfs.ext4", "e2fsck", "losetup"].allSatisfy({
        access(directory + "/" + $0, X_OK) == 0
      }) {
        return (directory + "/mkfs.ext4", directory + "/e2fsck", directory + "/losetup")
      }
      return nil
    }()

    /// Whether an ext4 image can be made and loop-mounted here: probed once.
    static let isMountable: Bool = {
      guard tools != nil, access("/dev/loop-control", F_OK) == 0 else { return false }
      guard let directory = try? makeTemporaryDirectory("switchd-e2e-probe") else { return false }
      defer { removeTree(directory) }
      let mountPoint = directory + "/m"
      mkdir(mountPoint, 0o755)
      guard create(directory + "/probe.img", megabytes: 2),
        mount(directory + "/probe.img", at: mountPoint)
      else { return false }
      let canForce =
        access("/sys/fs/ext4/\(device(of: mountPoint) ?? "none")/trigger_fs_error", W_OK) == 0
      _ = unmount(mountPoint)
      return canForce
    }()

    /// A file of `megabytes` holding a fresh ext4 filesystem.
    static func create(_ image: String, megabytes: Int) -> Bool {
      guard let tools else { return false }
      let fd = open(image, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
      guard fd >= 0 else { return false }
      let sized = ftruncate(fd, off_t(megabytes) << 20) == 0
      close(fd)
      return sized && runProcess([tools.mkfs, "-q", "-F", image]).status == 0
    }

    /// Mounts `image` through a loop device of its own; an ext4 error then
    /// turns the filesystem read-only.
    ///
    /// A new loop device every time, never `mount -o loop`: that reuses a
    /// loop device still attached to the same file, and with it the kernel's
    /// superblock, still shut down by the error it was told about, whenever
    /// another mount namespace holds the old mount (a sandboxed service or
    /// container started meanwhile copies every mount there is). The repaired
    /// filesystem then mounts "rw" and every write fails with EROFS (CI,
    /// kernel 6.18, next to the systemd tests).
    static func mount(_ image: String, at directory: String) -> Bool {
      guard let tools else { return false }
      let attached = runProcess([tools.losetup, "--find", "--show", image])
      let loopDevice =
        attached.stdout.split(whereSeparator: \.isWhitespace).first.map(String.init)
        ?? ""
      guard attached.status == 0, loopDevice.hasPrefix("/dev/loop") else { return false }
      if runProcess(["/bin/mount", "-o", "errors=remount-ro", loopDevice, directory]).status == 0 {
        return true
      }
      _ = runProcess([tools.losetup, "--detach", loopDevice])
      return false
    }

    /// Unmounts `directory` and detaches its loop device (lazily, by the
    /// kernel, while anything still holds it); `lazily` unmounts even while
    /// files are open there.
    @discardableResult
    static func unmount(_ directory: String, lazily: Bool = false) -> Bool {
      guard let tools else { return false }
      let device = mountEntry(of: directory).map { String($0[0]) }
      let unmounted =
        runProcess(["/bin/umount"] + (lazily ? ["-l"] : []) + [directory]).status == 0
      if unmounted, let device, device.hasPrefix("/dev/loop") {
        _ = runProcess([tools.losetup, "--detach", device])
      }
      return unmounted
    }

    /// The block device's name (`loop3`) mounted at `directory`.
    static func device(of directory: String) -> String? {
      mountEntry(of: directory)?[0].split(separator: "/").last.map(String.init)
    }

    /// Makes the kernel report an ext4 error on the filesystem at `directory`:
    /// with `errors=remount-ro` it is read-only from then on, for files that
    /// are already open for writing too (what a failing disk does).
    static func forceReadOnly(_ directory: String) -> Bool {
      guard let device = device(of: directory) else { return false }
      return (try? writeWholeFile("/sys/fs/ext4/\(device)/trigger_fs_error", "switchd test\n"))
        != nil
    }

    /// Unmounts, repairs the filesystem as an operator would, and mounts it
    /// again (on a new loop device: see `mount`); true when a file can be
    /// made there, which the mount's "rw" alone does not prove.
    static func repairAndRemount(_ image: String, at directory: String) -> Bool {
      guard let tools, unmount(directory) else { return false }
      // e2fsck: 0 clean, 1 errors corrected.
      guard runProcess([tools.fsck, "-fy", image]).status <= 1 else { return false }
      guard mount(image, at: directory) else { return false }
      let probe = directory + "/.writable"
      let fd = open(probe, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
      guard fd >= 0 else { return false }
      close(fd)
      return unlink(probe) == 0
    }

    /// The fields of /proc/mounts' line for `directory` (device, directory,
    /// type, options, …): the last of its mounts, the one on top.
    static func mountEntry(of directory: String) -> [Substring]? {
      guard let mounts = try? readWholeFile("/proc/mounts") else { return nil }
      return mounts.split(separator: "\n").map { $0.split(separator: " ") }
        .last { $0.count > 3 && $0[1] == directory }
    }
  }

  /// Nil when `values` is exactly `from, from+1, …` (ending at `to` when
  /// given); otherwise where it first goes wrong.
  static func consecutiveRunProblem(_ values: [Int64], from start: Int64, to end: Int64? = nil)
    -> String?
  {
    var expected = start
    for (index, value) in values.enumerated() {
      if value != expected {
        let kind = value < expected ? "a duplicate or reordering" : "a gap"
        return "\(kind) at position \(index): \(value) where \(expected) was due"
      }
      expected += 1
    }
    if let end, expected != end + 1 {
      return "ends at \(expected - 1), not \(end) (\(values.count) values)"
    }
    return nil
  }
}
