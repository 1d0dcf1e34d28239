import SwitchCore

/// Writes the result objects of docs/protocol.md ("Methods", column "result"),
/// each in one place. Switch objects are the daemon's to write (it keeps them
/// encoded until they change): a result takes a closure that writes them
/// where they go (`writeSwitchArray` for an array). Member names are
/// `WireField`'s; `Results.swift` holds the types these decode to.
public enum ResultEncoding {
  /// A writer of one Switch object, or of a JSON array of them.
  public typealias Switches = (inout JSONWriter) -> Void

  /// `list`: `{"revision":R,"switches":[Switch…]}`; `switches` writes the array.
  public static func writeList(_ w: inout JSONWriter, revision: Int64, switches: Switches) {
    w.raw(Parts.listHead)
    w.int(revision)
    w.raw(Parts.switches)
    switches(&w)
    w.raw("}")
  }

  /// `watch`: `{"watch":id,"revision":R,"switches":[Switch…]}`, the
  /// snapshot as of R; `switches` writes the array.
  public static func writeWatch(
    _ w: inout JSONWriter, watch: String, revision: Int64, switches: Switches
  ) {
    writeWatchHead(&w, watch: watch, revision: revision)
    w.member(WireField.switches)
    switches(&w)
    w.raw("}")
  }

  /// `watch` with `since`: `{"watch":id,"revision":R}`, no snapshot (the
  /// replay brings the changes).
  public static func writeReplayingWatch(_ w: inout JSONWriter, watch: String, revision: Int64) {
    writeWatchHead(&w, watch: watch, revision: revision)
    w.raw("}")
  }

  private static func writeWatchHead(_ w: inout JSONWriter, watch: String, revision: Int64) {
    w.firstMember(WireField.watch)
    w.string(watch)
    w.member(WireField.revision)
    w.int(revision)
  }

  /// A write (`set`, `toggle`, `reset`, `lock`, `unlock`, `disable`,
  /// `enable`): `{"changed":bool,"switch":Switch}`; `switch` writes the object.
  public static func writeWrite(_ w: inout JSONWriter, changed: Bool, switch object: Switches) {
    w.raw(changed ? Parts.changedHead : Parts.unchangedHead)
    object(&w)
    w.raw("}")
  }

  /// A JSON array of Switch objects, each encoded for anyone and given the
  /// caller's `writable` and `writableReason` here: `[a,b,…]`.
  @inlinable
  public static func writeSwitchArray<
    Items: Sequence<(encoded: [UInt8], writable: Writability)>
  >(
    _ w: inout JSONWriter, _ items: Items
  ) {
    writeArray(&w, items) { w, item in
      WireEncoding.writeSwitch(&w, encoded: item.encoded, writable: item.writable)
    }
  }

  /// A JSON array whose elements `element` writes: `[a,b,…]`.
  @inlinable
  public static func writeArray<Items: Sequence>(
    _ w: inout JSONWriter, _ items: Items, element: (inout JSONWriter, Items.Element) -> Void
  ) {
    w.raw("[")
    var first = true
    for item in items {
      if !first { w.raw(",") }
      first = false
      element(&w, item)
    }
    w.raw("]")
  }

  /// `reload`: `{"switches":n,"policies":n,"restartRequired":[setting…]}`.
  public static func writeReload(_ w: inout JSONWriter, _ summary: ReloadSummary) {
    w.firstMember(WireField.switches)
    w.int(Int64(summary.switches))
    w.member(WireField.policies)
    w.int(Int64(summary.policies))
    w.member(WireField.restartRequired)
    w.strings(summary.restartRequired)
    w.raw("}")
  }

  /// `history`: `{"entries":[Entry…]}`, newest first as given; an entry
  /// whose actor `showsActor` refuses carries null ids.
  public static func writeHistory(
    _ w: inout JSONWriter, entries: [Change], showsActor: (Actor) -> Bool = { _ in true }
  ) {
    beginHistory(&w)
    for (i, change) in entries.enumerated() {
      writeHistoryEntry(&w, change, index: i, showingActor: showsActor(change.actor))
    }
    endHistory(&w)
  }

  /// `writeHistory` in three steps, for a page encoded as it is read:
  /// `beginHistory`, then each entry with its position, then `endHistory`.
  public static func beginHistory(_ w: inout JSONWriter) {
    w.firstMember(WireField.entries)
    w.raw("[")
  }

  public static func writeHistoryEntry(
    _ w: inout JSONWriter, _ change: Change, index: Int, showingActor: Bool
  ) {
    if index > 0 { w.raw(",") }
    WireEncoding.writeEntry(&w, change, showingActor: showingActor)
  }

  public static func endHistory(_ w: inout JSONWriter) {
    w.raw("]}")
  }

  /// `backup`: `{"revision":R,"bytes":n}`, the revision the copy is as of
  /// and its size; the copy itself is the descriptor passed with this line.
  public static func writeBackup(_ w: inout JSONWriter, revision: Int64, bytes: Int64) {
    w.firstMember(WireField.revision)
    w.int(revision)
    w.member(WireField.bytes)
    w.int(bytes)
    w.raw("}")
  }

  /// `unwatch`: `{}`.
  public static func writeEmpty(_ w: inout JSONWriter) {
    w.raw("{}")
  }

  /// `status`.
  public static func writeStatus(_ w: inout JSONWriter, _ status: StatusReport) {
    w.firstMember(WireField.version)
    w.string(status.version)
    w.member(WireField.revision)
    w.int(status.revision)
    w.member(WireField.switches)
    w.int(Int64(status.switches))
    w.member(WireField.policies)
    w.int(Int64(status.policies))
    w.member(WireField.connections)
    w.int(Int64(status.connections))
    w.member(WireField.watches)
    w.int(Int64(status.watches))
    w.member(WireField.uptimeSeconds)
    w.int(status.uptimeSeconds)
    w.member(WireField.database)
    w.string(status.database)
    w.member(WireField.socket)
    w.string(status.socket)
    w.member(WireField.configDirectory)
    w.string(status.configDirectory)
    w.member(WireField.lastReload)
    if let reload = status.lastReload {
      w.firstMember(WireField.time)
      WireEncoding.writeTime(&w, reload.time)
      w.member(WireField.result)
      w.string(reload.result.wireName)
      w.member(WireField.errorCount)
      w.int(Int64(reload.errorCount))
      // The errors quote configuration lines: administrators only (CONFIG.md).
      if status.caller.administrator {
        w.member(WireField.errors)
        w.strings(reload.errors)
      }
      w.raw("}")
    } else {
      w.null()
    }
    w.member(WireField.reconciling)
    w.int(Int64(status.reconciling))
    w.member(WireField.caller)
    w.firstMember(WireField.uid)
    w.int(Int64(status.caller.uid))
    w.member(WireField.gid)
    w.int(Int64(status.caller.gid))
    w.member(WireField.administrator)
    w.bool(status.caller.administrator)
    w.member(WireField.writesSystemSwitches)
    w.bool(status.caller.writesSystemSwitches)
    w.raw("}")
    w.member(WireField.readBack)
    writeArray(&w, status.readBack) { w, report in
      w.firstMember(WireField.key)
      w.string(report.key)
      w.member(WireField.reapplied)
      w.int(Int64(report.reapplied))
      w.member(WireField.lastReapplied)
      if let time = report.lastReapplied { WireEncoding.writeTime(&w, time) } else { w.null() }
      w.member(WireField.systemHad)
      w.stringOrNull(report.systemHad.map { $0 ? "on" : "off" })
      w.member(WireField.watchProblem)
      w.stringOrNull(report.watchProblem)
      w.raw("}")
    }
    w.raw("}")
  }

  /// The heads of the results every `list` and write answers, made once.
  private enum Parts {
    static let listHead = fixedBytes { $0.firstMember(WireField.revision) }
    static let switches = fixedBytes { $0.member(WireField.switches) }
    static let changedHead = writeHead(changed: true)
    static let unchangedHead = writeHead(changed: false)
    static func writeHead(changed: Bool) -> FixedBytes {
      fixedBytes {
        $0.firstMember(WireField.changed)
        $0.bool(changed)
        $0.member(WireField.switch)
      }
    }
  }
}
