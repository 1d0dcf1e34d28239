import SwitchCore
import Testing

@testable import SwitchDaemon

@Suite struct WatchHubTests {
  @Test func findsExactPrefixAndCatchAllWatchesOnce() {
    var hub = WatchHub()
    let exact = hub.add(connection: 1, patterns: [.exact("wifi")], replayFrom: nil)
    let prefix = hub.add(
      connection: 1, patterns: [.prefix("notifications."), .exact("notifications.chat")],
      replayFrom: nil)
    let everything = hub.add(connection: 2, patterns: nil, replayFrom: nil)
    let star = hub.add(connection: 3, patterns: [.prefix("")], replayFrom: nil)
    #expect(hub.matching("wifi") == [exact, everything, star])
    #expect(hub.matching("notifications.chat") == [prefix, everything, star])
    #expect(hub.matching("notifications") == [everything, star])
    hub.remove(prefix)
    hub.remove(star)
    #expect(hub.matching("notifications.chat") == [everything])
    #expect(hub.count == 2)
  }

  @Test func removingTheLastPrefixOfALengthForgetsTheLength() {
    var hub = WatchHub()
    let a = hub.add(connection: 1, patterns: [.prefix("ab")], replayFrom: nil)
    let b = hub.add(connection: 1, patterns: [.prefix("cd")], replayFrom: nil)
    hub.remove(a)
    #expect(hub.matching("abc").isEmpty)
    #expect(hub.matching("cde") == [b])
    hub.remove(b)
    #expect(hub.matching("cde").isEmpty)
  }

  /// Among thousands of watches of other keys, a change visits only the
  /// watch of its own key, and once, though that watch matches it through
  /// two patterns. Counted through `forEachMatch`, what the loop publishes
  /// with: `matching` gathers a set, which would hide a second visit.
  @Test func aChangeVisitsOnlyTheWatchesOfItsKeyEachOnce() {
    var hub = WatchHub()
    let others = (0..<5000).map {
      hub.add(connection: 1, patterns: [.exact("key\($0)")], replayFrom: nil)
    }
    let mine = hub.add(connection: 2, patterns: [.exact("wifi"), .prefix("wi")], replayFrom: nil)
    var visited: [String] = []
    hub.forEachMatch("wifi") { visited.append($0.id) }
    #expect(visited == [mine])
    visited = []
    hub.forEachMatch("key42") { visited.append($0.id) }
    #expect(visited == [others[42]])
  }
}
