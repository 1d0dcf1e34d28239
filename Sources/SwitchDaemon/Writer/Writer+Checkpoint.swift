import SwitchCore
import SwitchProtocol
import SwitchStore
import SwitchSystem

// Checkpoints of the switch rows, and pruning the log to HistoryRetention.
extension Writer {
  /// Writes the rows of the switches changed since the last checkpoint. A
  /// failure only means a longer replay at the next start: it is retried later.
  ///
  /// The rows changed since are found by their revision, a scan of the
  /// records every 4,096 changes, not a set of keys kept at every commit
  /// (a look-up that hashes the key per change, callgrind).
  func checkpoint() {
    // (An empty set answers `contains` without hashing the key.)
    let rows = records.values.filter {
      $0.revision > checkpointed || rowsWithoutRevision.contains($0.key)
    }
    do {
      if rowsLagTheLog {
        try store.checkpointFromLog()
        rowsLagTheLog = false
      }
      try store.checkpoint(rows, userRows: users.rowsToCheckpoint, at: revision)
      rowsWithoutRevision.removeAll(keepingCapacity: true)
      users.checkpointed()
      checkpointed = revision
    } catch {
      log.rateLimited(.warning, cause: "checkpoint", "updating the switch rows failed: \(error)")
    }
  }

  /// Prunes the log once it exceeds `HistoryRetention` by a margin, so
  /// pruning runs now and then in chunks, not after every commit.
  func prune() -> WriterOutput? {
    let retention = catalog.settings.historyRetention
    guard let oldest = oldestRetained else { return nil }
    let margin = Int64(min(1000, max(1, retention / 10)))
    // The span of revisions kept holds every row, and is their count but
    // for the numbers a restore skipped (`markRestored`): then the rows
    // are counted (once; the store keeps the count). Counted only then, as
    // counting a long log takes a while.
    guard revision - oldest + 1 > Int64(retention) + margin else { return nil }
    if resumeFloor > oldest {
      guard let rows = try? store.logRowCount(), rows > Int64(retention) + margin else {
        return nil
      }
    }
    do {
      if revision > checkpointed { checkpoint() }  // the rows must hold what goes
      _ = try store.prune(keep: retention)
      oldestRetained = try store.oldestRetainedRevision()
      return WriterOutput(catalog: nil, changes: [], answers: [], oldestRetained: oldestRetained)
    } catch {
      log.rateLimited(.warning, cause: "prune", "pruning the change log failed: \(error)")
      return nil
    }
  }
}
