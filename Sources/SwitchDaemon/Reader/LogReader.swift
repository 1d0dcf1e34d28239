import Glibc
import SwitchCore
import SwitchProtocol
import SwitchStore
import SwitchSystem

/// What the event loop asks of the log reader thread. Every bound is
/// decided by the loop before it asks: the reader never sees the loop's
/// revision, so it can never read past what was published.
enum ReaderJob: Sendable {
  /// A `history` page, `before` already capped at the loop's revision + 1,
  /// encoded for `viewer` (whose actors it may see).
  /// `view` is whose world it shows.
  case history(
    Ticket, key: String?, before: Int64, limit: Int, newest: Int64?, viewer: Caller,
    view: ReaderView)
  /// The next page of a `since` replay: log rows after `after`, up to `upTo`,
  /// as the watch's viewer sees them, written as its events (`format`).
  case replay(
    connection: UInt64, watch: String, after: Int64, upTo: Int64, limit: Int, view: ReaderView,
    format: ReplayFormat)
  /// Close the read-only connection and end the thread.
  case stop
}

/// What the log reader thread hands back, in the order it was asked.
enum ReaderOutput: Sendable {
  /// The page's whole response line, its line end included, encoded here:
  /// a page of 1,000 entries is too much JSON to write, or even to copy, on
  /// the loop between two other clients' requests. Whole, so that the loop
  /// sends it as it is: appending the line end there copied the page when
  /// another reference to it was still alive (~500 KB into fresh memory,
  /// ~0.5 ms of the loop, every `get` behind it waiting; switchbench
  /// history isolation).
  case history(Ticket, Result<[UInt8], StoreError>)
  /// Encoded here for the same reason: 256 events written on the loop were
  /// ~0.5 ms a page (switchbench, `get` beside a replaying watch).
  case replay(connection: UInt64, watch: String, after: Int64, Result<ReplayPage, StoreError>)
  /// The thread closed its connection and ended.
  case stopped
}

/// The thread that reads the change log for `history` and `watch since`,
/// so a big log or a slow disk delays only the client that asked, never
/// the loop. It opens and owns the read-only SQLite connection.
enum LogReader {
  /// Starts the thread; returns once its connection is open, or throws
  /// why it could not open it.
  static func start(
    databasePath: String, jobs: BlockingQueue<ReaderJob>, spares: BlockingQueue<[UInt8]>,
    deliver: @escaping @Sendable (ReaderOutput) -> Void
  ) throws(StoreError) {
    let opened = BlockingQueue<Result<Void, StoreError>>()
    startThread(named: "log reader") {
      let store: SwitchStore
      switch Result(catching: { () throws(StoreError) in
        try SwitchStore(path: databasePath, mode: .readOnly)
      }) {
      case .success(let opening):
        store = opening
        opened.push(.success(()))
      case .failure(let error):
        opened.push(.failure(error))
        return
      }
      serve(store, jobs: jobs, spares: spares, deliver: deliver)
    }
    try opened.takeAll()[0].get()
  }

  private static func serve(
    _ store: SwitchStore, jobs: BlockingQueue<ReaderJob>, spares: BlockingQueue<[UInt8]>,
    deliver: (ReaderOutput) -> Void
  ) {
    var w = JSONWriter(capacity: 1 << 16)
    while true {
      for job in jobs.takeAll() {
        switch job {
        case .history(let ticket, let key, let before, let limit, let newest, let viewer, let view):
          // Written in the thread's own writer, kept from page to page,
          // then copied into a buffer the loop is done with, if one came
          // back: a page is ~500 KB, and fresh memory each time costs page
          // faults here and giving it back to the kernel on the loop.
          w.removeAll()
          var page: Result<Void, StoreError> = .success(())
          Server.writeResponse(&w, to: ticket) { w in
            page = Result { () throws(StoreError) in
              let entries = try view.history(
                store, key: key, before: before, limit: limit, newest: newest,
                pause: { sched_yield() })
              encodeHistory(&w, entries, for: viewer)
            }
          }
          deliver(
            .history(
              ticket,
              page.map {
                var bytes = copy(w, reusing: spares, room: 1)
                bytes.append(ticket.wire.terminator)
                return bytes
              }))
        case .replay(
          let connection, let watch, let after, let upTo, let limit, let view, let format):
          deliver(
            .replay(
              connection: connection, watch: watch, after: after,
              Result { () throws(StoreError) in
                let page = try view.replay(
                  store, after: after, upTo: upTo, limit: limit,
                  matching: { Watch.matches(format.patterns, $0) }, pause: { sched_yield() })
                w.removeAll()
                encodeReplay(&w, page.shown, format)
                return ReplayPage(
                  first: page.first, last: page.last, events: copy(w, reusing: spares),
                  viewer: format.viewer)
              }))
        case .stop:
          store.close()
          deliver(.stopped)
          return
        }
      }
    }
  }

  /// What `w` holds, copied into the newest buffer the loop gave back (the
  /// others are freed here), with `room` bytes to spare.
  private static func copy(
    _ w: borrowing JSONWriter, reusing spares: BlockingQueue<[UInt8]>, room: Int = 0
  ) -> [UInt8] {
    var bytes = spares.drain().last ?? []
    bytes.removeAll(keepingCapacity: true)
    bytes.reserveCapacity(w.count + room)
    w.copy(to: &bytes)
    return bytes
  }

  /// Entries encoded between two `sched_yield`s: ~20 µs of work on this
  /// machine. A page is milliseconds of CPU; the loop is woken for every
  /// request, and when it wakes on this thread's core it would otherwise
  /// wait for the scheduler's slice (about a millisecond) to run out.
  /// Halved from 32 with `rowsPerRead`: a `get`'s p99 beside a pager or a
  /// replay went from ~170 to ~140 µs (switchbench, alternated runs).
  static let entriesBetweenYields = 16

  /// `history`'s result object, other users' actors hidden unless `viewer` may
  /// see them, encoded into `w` entry by entry, yielding the core now and then.
  private static func encodeHistory(_ w: inout JSONWriter, _ entries: [Change], for viewer: Caller)
  {
    ResultEncoding.beginHistory(&w)
    for (index, change) in entries.enumerated() {
      ResultEncoding.writeHistoryEntry(
        &w, change, index: index, showingActor: viewer.seesActor(change.actor))
      if (index + 1) % entriesBetweenYields == 0 { sched_yield() }
    }
    ResultEncoding.endHistory(&w)
  }

  /// A replay page's event lines (changes of keys the watch matches), each
  /// as a live event to that watch would be written, yielding as above.
  private static func encodeReplay(
    _ w: inout JSONWriter, _ shown: [Change], _ format: ReplayFormat
  ) {
    var written = 0
    for change in shown {
      w.raw(format.head)
      Server.writeEventRest(
        &w, change, showingActor: format.viewer.seesActor(change.actor), end: format.end)
      written += 1
      if written % entriesBetweenYields == 0 { sched_yield() }
    }
  }
}
