import SwitchCore
import SwitchStore

/// A page of a `since` replay: the log rows' bounds (to detect pruning and
/// move the cursor) and the event lines of the changes the watch matches
/// and its viewer is shown, as it sees them, encoded by the log reader.
/// A viewer's stream skips the revisions it is not shown.
struct ReplayPage: Sendable {
  var first: Int64?
  var last: Int64?
  var events: [UInt8]
  /// Whose rights decided which actors the events show: a page written
  /// before a reload changed them is read again (`continueReplay`).
  var viewer: Caller
}

/// Whose world a replay or a history page shows, with what the log reader
/// needs to show a switch-level change of a user-scope switch with the
/// viewer's own value as of that change (`Visibility.view`).
struct ReaderView: Sendable {
  var viewpoint: Viewpoint
  /// The viewer's own values of user-scope switches, as the loop has them:
  /// the newest of each chain the reader walks down.
  var own: [String: UserValue] = [:]
  /// For a history of one key: it is user-scope, so users' rows exist to merge.
  var keyIsUserScope = false

  /// A `since` replay page: the log rows after `after`, up to `upTo`, at
  /// most `limit`, read `rowsPerRead` at a time with `pause()` between, as
  /// a history page is (256 rows at once kept the reader's core ~0.4 ms;
  /// a loop woken there waited for it). Rows are never changed and only
  /// the oldest are pruned: a read that does not go on from the last one
  /// was pruned underneath, so the page ends before it, and the next page
  /// finds the gap (as it does a first run that does not follow `after`:
  /// that page is returned unviewed). Only the rows of keys `matching` are
  /// viewed: a user's view of a change may walk that user's chain.
  func replay(
    _ store: SwitchStore, after: Int64, upTo: Int64, limit: Int,
    matching: (String) -> Bool = { _ in true }, pause: () -> Void = {}
  ) throws(StoreError) -> (first: Int64?, last: Int64?, shown: [Change]) {
    var first: Int64?
    var cursor = after
    var shown: [Change] = []
    var read = 0
    while read < limit {
      let wanted = min(Self.rowsPerRead, limit - read)
      let rows = try store.changes(after: cursor, upTo: upTo, limit: wanted)
      guard let last = rows.last, first == nil || rows[0].revision == cursor + 1 else { break }
      if first == nil {
        first = rows[0].revision
        if rows[0].revision != after + 1 { return (first, last.revision, []) }
      }
      shown += try self.shown(rows.filter { matching($0.key) }, store)
      read += rows.count
      cursor = last.revision
      guard rows.count == wanted else { break }
      pause()
    }
    return (first, first == nil ? nil : cursor, shown)
  }

  /// `changes` (in any order) as the viewer sees them; hidden ones dropped.
  func shown(_ changes: [Change], _ store: SwitchStore) throws(StoreError) -> [Change] {
    var result: [Change] = []
    result.reserveCapacity(changes.count)
    for change in changes {
      if let seen = try view(change, store) { result.append(seen) }
    }
    return result
  }

  /// `change` as the viewer saw it live (`Server.publishPerViewer`): with
  /// their own value and timers as of it, or, a change of a user's own
  /// value under a hold that fixes it, with the fixed value as of it.
  private func view(_ change: Change, _ store: SwitchStore) throws(StoreError) -> Change? {
    guard Visibility.shows(change, to: viewpoint) else { return nil }
    var ownThen: SeenOwnValue?
    var fixed: Bool?
    if change.user == nil {
      if case .user(let uid) = viewpoint, let head = own[change.key] {
        ownThen = try store.userValue(key: change.key, user: uid, at: change.revision, head: head)
      }
    } else if change.isOwnValueUnderAFixingHold {
      // Rare (a timer's end, a confirm or a revert under such a hold): a
      // walk of the switch's chain from its mark just above, or its row.
      if let switchThen = try store.switchState(key: change.key, at: change.revision) {
        fixed = switchThen.valueFixed ? switchThen.checked : nil
      }
    }
    return Visibility.view(change, for: viewpoint, own: ownThen, fixed: fixed)
  }

  /// A `history` page as the viewer sees it, newest first. One key: the
  /// switch's chain, merged with the viewer's own chain of that key (every
  /// user's rows, for `everyone`). No key: the log, without what the
  /// viewer is not shown.
  ///
  /// The whole log is read `rowsPerRead` rows at a time with `pause()`
  /// between: a page of 1,000 rows is about half a millisecond of SQLite,
  /// and the reader gives its core back now and then (`LogReader`). A key's
  /// history is read at once: its chain walk starts from the key's newest
  /// change each time.
  func history(
    _ store: SwitchStore, key: String?, before: Int64, limit: Int, newest: Int64?,
    pause: () -> Void = {}
  ) throws(StoreError) -> [Change] {
    // A change that alters nothing this viewer sees is dropped, so a page
    // is read on below it until it holds `limit` entries or the log ends.
    var entries: [Change] = []
    var cursor = before
    while entries.count < limit {
      let left = limit - entries.count
      let wanted = key == nil ? min(Self.rowsPerRead, left) : left
      // Through `shown` for every viewer: a change that alters nothing
      // anyone sees (a lock whose fixed value is the default on a switch
      // locked already) was on everyone's page of the whole log, while the
      // watch, the replay and a key's page left it out (chaos audit).
      let rows = try self.rows(store, key: key, before: cursor, limit: wanted, newest: newest)
      entries += try shown(rows, store)
      guard let last = rows.last, rows.count == wanted else { break }
      cursor = last.revision
      pause()
    }
    return entries
  }

  /// Log rows read between two pauses of a history page of the whole log,
  /// or of a replay page (~50 µs of SQLite here).
  static let rowsPerRead = 32

  /// The log rows a history page is made of, newest first, before views.
  private func rows(
    _ store: SwitchStore, key: String?, before: Int64, limit: Int, newest: Int64?
  ) throws(StoreError) -> [Change] {
    // The whole log: `shown` drops what this viewer is not shown.
    guard let key else { return try store.history(key: nil, before: before, limit: limit) }
    let switchLevel = try store.history(key: key, before: before, limit: limit, newest: newest)
    var users: [Change] = []
    switch viewpoint {
    case .user(let uid):
      if let head = own[key] {
        users = try store.userHistory(
          key: key, user: uid, before: before, limit: limit, newest: head.revision)
      }
    case .everyone where keyIsUserScope:
      users = try store.history(before: before, limit: limit) {
        $0.key == key && $0.user != nil
      }
    case .everyone:
      break
    }
    return Array((switchLevel + users).sorted { $0.revision > $1.revision }.prefix(limit))
  }
}
