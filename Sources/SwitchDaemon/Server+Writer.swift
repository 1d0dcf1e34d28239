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
      if output.reloaded {
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
      w.raw("{\"changed\":")
      w.bool(outcome.changed)
      w.raw(",\"switch\":")
      if records[outcome.record.key] == outcome.record {
        // The switch is as this write left it: the cached encoding serves.
        writeSwitch(&w, key: outcome.record.key)
      } else {
        WireEncoding.writeSwitch(
          &w, definition: outcome.definition, record: outcome.record,
          policySource: outcome.policySource)
      }
      w.raw("}")
      ResponseEncoding.endResult(&w)
    case .reload(.success(let counts)):
      ResponseEncoding.beginResult(&w, id: id)
      w.raw("{\"switches\":")
      w.int(Int64(counts.switches))
      w.raw(",\"policies\":")
      w.int(Int64(counts.policies))
      w.raw("}")
      ResponseEncoding.endResult(&w)
    case .write(.failure(let error)), .reload(.failure(let error)):
      ResponseEncoding.writeError(&w, id: id, withCurrentSwitch(error))
    }
  }

  /// A Conflict carries the switch as it is now (`data.switch`), so that a
  /// page redraws it without another `get`; other errors pass unchanged.
  private func withCurrentSwitch(_ error: RPCError) -> RPCError {
    guard error.code == .conflict,
      case .string(let key)? = error.data.first(where: { $0.name == "key" })?.value,
      let bytes = encodedSwitch(key), let value = try? JSONParser.parse(bytes, maxDepth: 4)
    else { return error }
    var withSwitch = error
    withSwitch.data.append(JSONMember("switch", value))
    return withSwitch
  }
}
