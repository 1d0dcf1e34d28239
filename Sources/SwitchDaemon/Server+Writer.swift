import CShim
import Glibc
import SwitchCore
import SwitchProtocol

extension Server {
  /// Takes what the writer thread committed: swaps in a new configuration,
  /// publishes the changes (events go out before the answers), then answers
  /// the writes and resumes the connections that waited for them.
  func drainWriterOutputs() {
    var counter: UInt64 = 0
    _ = read(wakeFD, &counter, 8)
    for output in outputs.drain() {
      if let update = output.catalog { adopt(update) }
      if output.oldestRetained != nil { oldestRetained = output.oldestRetained }
      publish(output.changes)
      var resumed: [UInt64: Connection] = [:]
      for (ticket, answer) in output.answers {
        guard let connection = connections[ticket.connection] else { continue }
        connection.writesInFlight -= 1
        resumed[connection.id] = connection
        guard ticket.slot != 0 else { continue }
        if connection.writeDirectly(slot: ticket.slot, { write(&$0, answer, id: ticket.id) }) {
          continue
        }
        var w = JSONWriter(capacity: 512)
        write(&w, answer, id: ticket.id)
        connection.fill(slot: ticket.slot, part: ticket.part, with: w.bytes)
      }
      for connection in resumed.values { pump(connection) }
      if let reload = output.reload {
        lastReload = reload
        notifier.send("READY=1")
        notifier.send(statusLine)
      }
      if output.stopped { markWriterStopped() }
    }
  }

  private func adopt(_ update: CatalogUpdate) {
    catalog = update.catalog
    groups = update.groups
    limits = Limits(update.catalog.settings)
    log.setLevel(update.catalog.settings.logLevel)
    for record in update.newRecords { records[record.key] = record }
    encodings = SwitchEncodings(sortedKeys: update.catalog.sortedKeys)
  }

  var statusLine: String {
    "STATUS=Serving \(catalog.switches.count) switches, \(catalog.policyCount) policies, "
      + "revision \(revision)"
  }

  private func write(_ w: inout JSONWriter, _ answer: WriterOutput.Answer, id: RequestID) {
    switch answer {
    case .write(.success(let outcome)):
      ResponseEncoding.beginResult(&w, id: id)
      ResultEncoding.writeWrite(&w, changed: outcome.changed) { writeSwitch(&$0, outcome) }
      ResponseEncoding.endResult(&w)
    case .reload(.success(let summary)):
      ResponseEncoding.beginResult(&w, id: id)
      ResultEncoding.writeReload(&w, summary)
      ResponseEncoding.endResult(&w)
    case .write(.failure(let error)), .reload(.failure(let error)):
      ResponseEncoding.writeError(&w, id: id, error)
    }
  }

  /// Writes the Switch object a write answers with: the cached encoding when
  /// the switch is still as this write left it, else encoded from the outcome.
  private func writeSwitch(_ w: inout JSONWriter, _ outcome: WriteOutcome) {
    if records[outcome.record.key] == outcome.record, let cached = encodedSwitch(outcome.record.key)
    {
      w.raw(cached)
      return
    }
    WireEncoding.writeSwitch(
      &w, definition: outcome.definition, record: outcome.record,
      policySource: outcome.policySource)
  }
}
