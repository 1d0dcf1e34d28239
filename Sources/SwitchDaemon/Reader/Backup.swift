import Glibc
import SwitchStore
import SwitchSystem

/// A finished copy of the database: a read-only descriptor of a file that
/// no longer has a name (it was unlinked once opened), so it goes away
/// when the last descriptor of it closes.
struct BackupFile: Sendable {
  /// Owned by whoever holds this value: the loop hands it to the
  /// connection, which passes it to the client, or closes it.
  var descriptor: Int32
  /// The revision the copy is as of.
  var revision: Int64
  var bytes: Int64
}

/// Why a backup could not be taken: one sentence for the log and the answer.
struct BackupFailure: Error, Sendable, CustomStringConvertible {
  var description: String
}

/// What a backup thread hands back to the loop.
struct BackupOutcome: Sendable {
  var ticket: Ticket
  var result: Result<BackupFile, BackupFailure>
}

/// Backups of the database, one at a time, each on a short-lived thread of
/// its own with its own read-only SQLite connection: never on the loop
/// (which must not wait for the disk) nor on the writer (which holds the
/// only write connection). Owned by the loop; the thread hands its outcome
/// back through `outcomes` and the loop's wake-up descriptor, as the log
/// reader does. A second backup asked for while one runs is refused
/// `Overloaded` (the caller tries again), so at most one copy is being made.
final class Backups {
  private(set) var isRunning = false
  private let outcomes = BlockingQueue<BackupOutcome>()

  /// Starts taking a copy of `databasePath` for `ticket`; wakes the loop
  /// through `wakeFD` when it is done.
  func start(_ ticket: Ticket, databasePath: String, wakeFD: Int32) {
    precondition(!isRunning, "one backup at a time")
    isRunning = true
    let outcomes = self.outcomes
    startThread(named: "backup") {
      outcomes.push(BackupOutcome(ticket: ticket, result: BackupCopy.take(of: databasePath)))
      var one: UInt64 = 1
      _ = write(wakeFD, &one, 8)
    }
  }

  /// The backup that has finished, if one has; another may start then.
  func finished() -> [BackupOutcome] {
    let done = outcomes.drain()
    if !done.isEmpty { isRunning = false }
    return done
  }
}

/// Making the copy, on the backup thread.
enum BackupCopy {
  /// Where the copy is made: beside the database, in switchd's own
  /// directory (the only place it writes), never a path a client names.
  static func temporaryPath(for databasePath: String) -> String { databasePath + ".backup" }

  /// Copies the database with `VACUUM INTO` from a read transaction of its
  /// own (WAL: the writer goes on meanwhile), reads the copy's revision,
  /// then opens the copy read-only and removes its name.
  static func take(of databasePath: String) -> Result<BackupFile, BackupFailure> {
    let path = temporaryPath(for: databasePath)
    // One that a crash or a stop left behind is stale: backups run one at a
    // time, and one daemon per database (the lock file).
    unlink(path)
    defer { unlink(path) }
    // Created here, mode 0600 and not through a symbolic link, so that
    // nobody else can read the copy and SQLite writes where we mean it to
    // (VACUUM INTO takes an empty file as a new one).
    guard
      let created = Descriptor(opening: path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, mode: 0o600)
    else {
      return .failure(
        BackupFailure(description: "cannot create \(path): \(SystemError.last("open"))"))
    }
    _ = consume created  // closed: SQLite opens the file by its name
    let revision: Int64
    do throws(StoreError) {
      let source = try SwitchStore(path: databasePath, mode: .readOnly)
      defer { source.close() }
      try source.backup(into: path)
      let copy = try SwitchStore(path: path, mode: .readOnly)
      defer { copy.close() }
      revision = try copy.currentRevision()
    } catch {
      return .failure(BackupFailure(description: "\(error)"))
    }
    guard let file = Descriptor(opening: path, O_RDONLY) else {
      return .failure(
        BackupFailure(description: "cannot open \(path): \(SystemError.last("open"))"))
    }
    var status = stat()
    guard fstat(file.raw, &status) == 0 else {
      return .failure(BackupFailure(description: "\(SystemError.last("fstat")) on \(path)"))
    }
    return .success(
      BackupFile(descriptor: file.release(), revision: revision, bytes: Int64(status.st_size)))
  }
}
