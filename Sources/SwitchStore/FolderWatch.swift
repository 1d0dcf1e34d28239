import Glibc
import Synchronization

/// An inotify watch on the database's folder: whether a name in it was
/// removed, renamed or created since it was last asked (`DatabaseFiles`).
///
/// The writer reads it before each commit, one `read` that finds nothing,
/// until an event loop takes it over (`handOver`): the loop has it in its
/// epoll set and reads it only when something happened (`drain`), so a
/// commit costs no system call here (issue 26). The kernel queues the
/// event inside the unlink or rename itself, and the loop reads its events
/// before it hands the turn's writes to the writer (`Server.turn`): a
/// write the loop reads in a later turn than the move is refused. One read
/// in the turn the move raced (its `recv` comes after `epoll_wait`), or a
/// timer's write before the loop's next turn, may still go into the moved
/// file, as a move racing the writer's own `read` could before: a check
/// before a write is not a lock.
///
/// `Sendable`: the descriptor is fixed, the rest atomics; after the hand-
/// over only the loop reads the descriptor.
public final class FolderWatch: Sendable {
  /// The inotify descriptor, closed with the watch.
  public let descriptor: Int32
  /// Read by an event loop: the writer only asks `happened`.
  private let handedOver = Atomic<Bool>(false)
  /// The loop read events the writer has not yet looked at.
  private let happened = Atomic<Bool>(false)
  /// The kernel dropped the watch (IN_IGNORED: the folder was removed or
  /// its file system unmounted): every check looks at the files.
  private let gone = Atomic<Bool>(false)

  /// What a name's removal, renaming or creation in the folder reports,
  /// and the folder's own move or removal.
  private static let events: UInt32 =
    UInt32(IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_CREATE | IN_DELETE_SELF | IN_MOVE_SELF)
  /// Room for many events; at least one of the longest name (NAME_MAX).
  private static let bufferSize = 4096

  /// Watches the folder `path` is in; nil when inotify refuses.
  init?(folderOf path: String) {
    let fd = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
    guard fd >= 0 else { return nil }
    var folder = path
    if let slash = folder.lastIndex(of: "/") {
      folder = slash == folder.startIndex ? "/" : String(folder[..<slash])
    } else {
      folder = "."
    }
    guard inotify_add_watch(fd, folder, Self.events) >= 0 else {
      close(fd)
      return nil
    }
    descriptor = fd
  }

  deinit { close(descriptor) }

  /// Whether the kernel still watches the folder.
  var isWatching: Bool { !gone.load(ordering: .acquiring) }

  /// Hands `descriptor` to an event loop that polls it (readable when
  /// events wait) and calls `drain` each time it is. From then on the
  /// writer does not read it.
  public func handOver() {
    handedOver.store(true, ordering: .releasing)
  }

  /// For the loop that took the watch over: reads what is queued and notes
  /// that something happened. False once the watch is gone (the loop then
  /// stops polling it).
  @discardableResult
  public func drain() -> Bool {
    _ = readEvents()
    happened.store(true, ordering: .releasing)
    return isWatching
  }

  /// For the writer, before a commit: true when nothing happened in the
  /// folder since it last asked (the files need no look).
  func nothingHappened() -> Bool {
    if !handedOver.load(ordering: .acquiring) && readEvents() { return false }
    return isWatching && !happened.exchange(false, ordering: .acquiringAndReleasing)
  }

  /// Reads every queued event; true when there was one.
  private func readEvents() -> Bool {
    var any = false
    withUnsafeTemporaryAllocation(byteCount: Self.bufferSize, alignment: 8) { buffer in
      while true {
        let count = read(descriptor, buffer.baseAddress, buffer.count)
        guard count > 0 else { return }
        any = true
        var offset = 0
        while offset + MemoryLayout<inotify_event>.size <= count {
          let event = buffer.loadUnaligned(fromByteOffset: offset, as: inotify_event.self)
          if event.mask & UInt32(IN_IGNORED) != 0 { gone.store(true, ordering: .releasing) }
          offset += MemoryLayout<inotify_event>.size + Int(event.len)
        }
      }
    }
    return any
  }
}
