import SwitchCore
import SwitchTestSupport
import Testing

@testable import SwitchStore

/// A log row's texts are bound without a copy: the key only while its row
/// is stepped (`withText`), the cause and holders from static strings. Keys
/// short enough to live inside the String value and keys on the heap, one
/// group after another through the same statement, read back as written.
@Suite struct BindingTests {
  @Test func keysAndCausesOfEveryLengthAndKindReadBackAsWritten() throws {
    try withTemporaryDirectory { directory in
      let store = try SwitchStore(path: directory + "/s.db")
      defer { store.close() }
      let keys = [
        "a", "wifi", "fifteen.bytes.k", "sixteen.bytes.ke",
        "a.much.longer.key-that-lives-on-the-heap.and.is.well.past-the-inline-limit",
      ]
      let causes: [Cause] = [.set, .toggle, .policy, .dependency, .expiry]
      var written: [Change] = []
      var revision: Int64 = 0
      for round in 0..<3 {
        var group: [Change] = []
        for (index, key) in keys.enumerated() {
          revision += 1
          var change = sampleChange(
            revision, key: key, checked: (index + round) % 2 == 0,
            cause: causes[(index + round) % causes.count])
          if index == 2 {
            // Not free: the other statement, with its holder bound from a static string.
            change.state.heldBy = .admin
            change.state.readOnly = true
          }
          group.append(change)
        }
        try store.commit(group)
        written += group
      }
      let read = try store.changes(after: 0, upTo: revision, limit: 100)
      #expect(read.map(\.key) == written.map(\.key))
      #expect(read.map(\.cause) == written.map(\.cause))
      #expect(read.map(\.state) == written.map(\.state))
    }
  }
}
