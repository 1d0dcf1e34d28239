import SwitchCore
import SwitchSystem

/// The config reader thread: reads the configuration directory for each
/// reload (`reload` or SIGHUP) and hands what it read to the writer, which
/// applies it in order with the writes. The files are read here, never on
/// the loop or the writer: a file that is slow to read (a hung network or
/// FUSE mount) holds up only reloads, never a write, and SIGTERM does not
/// wait for this thread. Group look-ups for who administers happen here too.
final class ConfigReader: Sendable {
  private enum Request: Sendable {
    case reload(Ticket?)
    case stop
  }

  private let requests = BlockingQueue<Request>()

  /// Starts the thread; what it reads goes to `writerJobs`.
  init(directory: String, log: Log, writerJobs: BlockingQueue<WriterJob>) {
    let requests = self.requests
    startThread(named: "config reader") {
      while true {
        for request in requests.takeAll() {
          guard case .reload(let ticket) = request else { return }
          writerJobs.push(.reload(ticket, Self.read(directory, log: log)))
        }
      }
    }
  }

  /// Reads the configuration again; the writer answers `ticket`.
  func reload(_ ticket: Ticket?) { requests.push(.reload(ticket)) }

  /// Ends the thread once it has read what was asked before (a read that
  /// hangs keeps it, not the daemon: the process exits without it).
  func stop() { requests.push(.stop) }

  /// The directory as a reload sees it: the catalog and who administers
  /// under it, or every error (each logged, with the warnings).
  static func read(_ directory: String, log: Log) -> ConfigurationRead {
    let loaded = ConfigLoader.load(directory: directory)
    for diagnostic in loaded.diagnostics where diagnostic.severity == .warning {
      log.warning("\(diagnostic)")
    }
    guard let catalog = loaded.catalog else {
      for error in loaded.errors { log.error("reload refused: \(error)") }
      return .refused(errors: loaded.errors)
    }
    return .valid(catalog, AccessRules.resolve(catalog.settings, log: log))
  }
}
