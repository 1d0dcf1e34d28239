import Glibc
import SwitchProtocol

extension Server {
  /// `backup`: checked here, taken by a thread of its own (`Backups`),
  /// answered when the copy is made (`drainBackups`), with the copy's
  /// descriptor passed on the answer's line. The daemon never opens a path
  /// a client names: the client writes the file, with its own rights.
  func backup(_ pending: PendingRequest, on connection: Connection) {
    guard pending.answer != nil else { return }  // a notification: nobody to hand the copy to
    if stopSentToReader {
      fail(pending, on: connection, .overloaded("switchd is stopping"))
      return
    }
    if backups.isRunning {
      fail(
        pending, on: connection,
        .overloaded("a backup is already being taken; try again once it is done"))
      return
    }
    // Counted as a read in flight: the connection's later requests wait for
    // its answer (answers keep their order), and a stop waits for it.
    connection.barriersInFlight += 1
    backups.start(ticket(pending, connection), databasePath: databasePath, wakeFD: wakeFD)
  }

  /// Answers the backup that has finished, passing its copy; a copy whose
  /// connection has closed is closed (and, having no name, gone).
  func drainBackups() {
    for outcome in backups.finished() {
      let ticket = outcome.ticket
      guard let connection = connections[ticket.connection] else {
        if case .success(let file) = outcome.result {
          close(file.descriptor)
          log.info("a backup of revision \(file.revision) was dropped: its client left")
        }
        continue
      }
      connection.barriersInFlight -= 1
      switch outcome.result {
      case .success(let file):
        log.info(
          "a backup of revision \(file.revision) (\(file.bytes) bytes) went to uid "
            + "\(connection.peer.uid) (pid \(connection.peer.pid))")
        respond(ticket, on: connection, passing: file.descriptor) {
          Self.writeResponse(&$0, to: ticket) {
            ResultEncoding.writeBackup(&$0, revision: file.revision, bytes: file.bytes)
          }
        }
      case .failure(let failure):
        log.warning("a backup failed: \(failure)")
        fail(ticket, on: connection, .backupFailed(failure.description))
      }
      pump(connection)
    }
  }
}
