import SwitchCore
import SwitchStore
import SwitchTestSupport
import Testing

@testable import SwitchDaemon

/// A history page of the whole log is read in runs of `rowsPerRead` rows
/// with a pause between (so the log reader can give its core back); the
/// page must be the same as one read at once, for every viewer.
@Suite struct ReaderViewTests {
  /// 300 changes on three keys; every third is user 1000's or user 1001's
  /// own value, so a user's page skips the other user's rows.
  private static func changes() -> [Change] {
    (1...300).map { (revision: Int64) in
      let user: UInt32? = revision % 3 == 0 ? (revision % 2 == 0 ? 1000 : 1001) : nil
      return Change(
        revision: revision, time: 1_790_000_000_000 + revision,
        key: ["wifi", "bluetooth", "email.marketing"][Int(revision % 3)], cause: .set,
        actor: .peer(uid: 1000, gid: 1000, pid: 4321),
        state: SwitchState(checked: revision % 2 == 0),
        previous: SwitchState(checked: revision % 2 != 0), user: user)
    }
  }

  @Test(arguments: [Viewpoint.everyone, .user(1000)])
  func aPageReadInRunsIsThePageReadAtOnce(viewpoint: Viewpoint) throws {
    try withStore { store in
      let view = ReaderView(viewpoint: viewpoint)
      for (before, limit) in [(Int64(301), 200), (301, 1000), (150, 64), (100, 65), (40, 500)] {
        var pauses = 0
        let page = try view.history(
          store, key: nil, before: before, limit: limit, newest: nil, pause: { pauses += 1 })
        let atOnce = try store.history(before: before, limit: 10_000) {
          Visibility.shows($0, to: viewpoint)
        }
        let expected = Array(try view.shown(atOnce, store).prefix(limit))
        #expect(
          page.map(\.revision) == expected.map(\.revision), "before \(before), limit \(limit)")
        #expect(page == expected)
        // Every run but the last is followed by a pause.
        let runs = (page.count + ReaderView.rowsPerRead - 1) / ReaderView.rowsPerRead
        #expect(pauses >= max(0, runs - 1))
      }
    }
  }

  /// A `since` replay page, read in runs too, is the page read at once:
  /// the same rows, bounds and changes shown, for every viewer.
  @Test(arguments: [Viewpoint.everyone, .user(1000)])
  func aReplayPageReadInRunsIsThePageReadAtOnce(viewpoint: Viewpoint) throws {
    try withStore { store in
      let view = ReaderView(viewpoint: viewpoint)
      for (after, upTo, limit) in [
        (Int64(0), Int64(300), 256), (0, 300, 64), (10, 200, 256), (100, 300, 65), (299, 300, 256),
        (300, 300, 256), (0, 128, 256),
      ] {
        var pauses = 0
        let page = try view.replay(
          store, after: after, upTo: upTo, limit: limit, pause: { pauses += 1 })
        let rows = try store.changes(after: after, upTo: upTo, limit: limit)
        let context = "after \(after), up to \(upTo), limit \(limit)"
        #expect(page.first == rows.first?.revision, "\(context)")
        #expect(page.last == rows.last?.revision, "\(context)")
        #expect(page.shown == (try view.shown(rows, store)), "\(context)")
        let runs = (rows.count + ReaderView.rowsPerRead - 1) / ReaderView.rowsPerRead
        #expect(pauses >= max(0, runs - 1), "\(context)")
      }
    }
  }

  /// Rows pruned between two runs of a replay page: the page ends with the
  /// last run that goes on from the one before, so the gap is found by the
  /// next page (which the loop answers by closing the watch).
  @Test func aReplayPageEndsBeforeRowsPrunedUnderneathIt() throws {
    try withStore { store in
      let view = ReaderView(viewpoint: .everyone)
      var pruned = 0
      let page = try view.replay(
        store, after: 0, upTo: 300, limit: 256,
        pause: { if pruned == 0 { pruned = (try? store.prune(keep: 100)) ?? -1 } })
      #expect(pruned == 200)
      #expect(page.first == 1)
      #expect(page.last == Int64(ReaderView.rowsPerRead))
      #expect(page.shown.map(\.revision) == Array(1...Int64(ReaderView.rowsPerRead)))
      let next = try view.replay(store, after: page.last!, upTo: 300, limit: 256)
      #expect(next.first == 201)
      // A page that does not follow its `after` is not viewed: the loop
      // closes the watch on it.
      #expect(next.shown.isEmpty)
    }
  }

  /// Everything up to `upTo` pruned between two runs: the page ends with
  /// the first run, and the next page finds nothing after it.
  @Test func aReplayPageEndsWhenTheRestOfItIsPruned() throws {
    try withStore { store in
      let view = ReaderView(viewpoint: .everyone)
      var pruned = 0
      let page = try view.replay(
        store, after: 0, upTo: 200, limit: 256,
        pause: { if pruned == 0 { pruned = (try? store.prune(keep: 50)) ?? -1 } })
      #expect(pruned == 250)
      #expect(page.first == 1)
      #expect(page.last == Int64(ReaderView.rowsPerRead))
      let next = try view.replay(store, after: page.last!, upTo: 200, limit: 256)
      #expect(next.first == nil)
    }
  }

  /// Only the rows of the keys a watch matches are viewed and returned.
  @Test func aReplayPageHoldsOnlyTheKeysItMatches() throws {
    try withStore { store in
      let view = ReaderView(viewpoint: .user(1000))
      let page = try view.replay(
        store, after: 0, upTo: 300, limit: 256, matching: { $0 == "wifi" })
      let rows = try store.changes(after: 0, upTo: 300, limit: 256)
      #expect(page.last == 256)
      #expect(!page.shown.isEmpty)
      #expect(page.shown == (try view.shown(rows.filter { $0.key == "wifi" }, store)))
    }
  }

  /// A change that alters nothing a viewer is shown (here only
  /// `valueFixed`, which is no wire field: a lock whose fixed value is
  /// the one everyone read) is on no page, for no viewer: the whole log's
  /// for everyone left it in, while the watch and a key's page did not.
  @Test(arguments: [Viewpoint.everyone, .user(1000)])
  func aChangeThatShowsNothingIsOnNoPage(viewpoint: Viewpoint) throws {
    let silent = Change(
      revision: 301, time: 1_790_000_000_301, key: "notifications.chat", cause: .lock,
      actor: .peer(uid: 0, gid: 0, pid: 1),
      state: SwitchState(checked: true, readOnly: true, heldBy: .admin, valueFixed: true),
      previous: SwitchState(checked: true, readOnly: true, heldBy: .admin))
    #expect(silent.fields.isEmpty)
    try withStore(then: [silent]) { store in
      let view = ReaderView(viewpoint: viewpoint)
      let whole = try view.history(store, key: nil, before: 302, limit: 10, newest: nil)
      #expect(!whole.contains { $0.revision == 301 })
      #expect(whole.count == 10)
      let replay = try view.replay(store, after: 290, upTo: 301, limit: 256)
      #expect(!replay.shown.contains { $0.revision == 301 })
    }
  }

  private func withStore(then more: [Change] = [], _ body: (SwitchStore) throws -> Void) throws {
    try withTemporaryDirectory { directory in
      let store = try SwitchStore(path: "\(directory)/s.db")
      defer { store.close() }
      try store.commit(Self.changes() + more)
      try body(store)
    }
  }
}
