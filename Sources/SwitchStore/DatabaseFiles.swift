import Glibc

/// The database file and its WAL as the writer opened them, to notice when
/// either is removed, renamed or replaced while switchd runs. SQLite would
/// go on writing into the unlinked file and every write would be lost at
/// the next start, so once that happens the store refuses to commit: what
/// it acknowledged before is all that is acknowledged.
///
/// A commit asks before it writes. The answer comes from an inotify watch
/// on the folder: the kernel queues its events inside the unlink or rename
/// itself, so a move that happened before the commit is always in the
/// queue, and an empty queue (one `read` that finds nothing) means nothing
/// moved. Only when something happened in the folder are the files looked
/// at (`stat`), so a commit costs one system call here instead of two.
/// Without a watch (inotify refused, or its watch gone) every commit looks.
final class DatabaseFiles {
  private struct Identity: Equatable {
    var device: UInt64
    var inode: UInt64
  }

  let path: String
  private let database: Identity?
  /// Taken when first seen: SQLite creates the WAL on the first transaction.
  private var wal: Identity?
  /// Set once the files were found moved; it stays set.
  private(set) var lost: String?
  /// The inotify descriptor watching the folder, or -1.
  private var watch: Int32 = -1
  /// Where `nothingHappened` reads the watch's events, made once: a
  /// temporary allocation of this size comes from the heap, not the stack
  /// (`posix_memalign` and `free` on every commit, ~1k instructions,
  /// callgrind).
  private let eventBuffer = UnsafeMutableRawBufferPointer.allocate(
    byteCount: DatabaseFiles.eventsSize, alignment: 8)
  /// Room for many events; at least one of the longest name (NAME_MAX).
  private static let eventsSize = 4096
  /// What a name's removal, renaming or creation in the folder reports,
  /// and the folder's own move or removal.
  private static let events: UInt32 =
    UInt32(IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_CREATE | IN_DELETE_SELF | IN_MOVE_SELF)

  init(path: String) {
    self.path = path
    // Watched before the identities are taken: a move between the two is
    // then either seen by the stat or queued.
    watch = Self.watchFolder(of: path)
    database = Self.identity(of: path)
    wal = Self.identity(of: path + "-wal")
  }

  /// Whether the folder is watched (else each check looks at the files).
  var isWatching: Bool { watch >= 0 }

  deinit {
    if watch >= 0 { close(watch) }
    eventBuffer.deallocate()
  }

  /// Nil while both files are the ones opened; else what happened to them.
  func check() -> String? {
    if let lost { return lost }
    guard let database else { return nil }
    if wal != nil && nothingHappened() { return nil }
    if let found = Self.identity(of: path), found == database {
      let walPath = path + "-wal"
      guard let wal else {
        wal = Self.identity(of: walPath)
        return nil
      }
      if Self.identity(of: walPath) == wal { return nil }
      lost = "its write-ahead log \(walPath) was removed or replaced"
    } else {
      lost = "\(path) was removed, renamed or replaced"
    }
    return lost
  }

  /// Whether the watch's queue is empty. Reading it empties it; an event of
  /// any name (a backup written beside the database, say) sends the caller
  /// to look at the files once. A watch the kernel dropped (IN_IGNORED: the
  /// folder was removed or its file system unmounted) is closed, and every
  /// later check looks.
  private func nothingHappened() -> Bool {
    guard watch >= 0 else { return false }
    let count = read(watch, eventBuffer.baseAddress, eventBuffer.count)
    if count < 0 { return errno == EAGAIN }
    var offset = 0
    while offset + MemoryLayout<inotify_event>.size <= count {
      let event = eventBuffer.loadUnaligned(fromByteOffset: offset, as: inotify_event.self)
      if event.mask & UInt32(IN_IGNORED) != 0 {
        close(watch)
        watch = -1
      }
      offset += MemoryLayout<inotify_event>.size + Int(event.len)
    }
    return false
  }

  private static func watchFolder(of path: String) -> Int32 {
    let fd = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
    guard fd >= 0 else { return -1 }
    var folder = path
    if let slash = folder.lastIndex(of: "/") {
      folder = slash == folder.startIndex ? "/" : String(folder[..<slash])
    } else {
      folder = "."
    }
    guard inotify_add_watch(fd, folder, events) >= 0 else {
      close(fd)
      return -1
    }
    return fd
  }

  private static func identity(of path: String) -> Identity? {
    var status = stat()
    guard stat(path, &status) == 0 else { return nil }
    return Identity(device: UInt64(status.st_dev), inode: UInt64(status.st_ino))
  }
}
