import SwitchTestSupport
import Testing

@testable import SwitchStore

/// The hot queries must walk a key, never scan the log or sort in a temporary b-tree: that is
/// what keeps `history` and `changes` O(rows returned) however long the log grows.
@Suite struct QueryPlanTests {
  typealias SQL = StoreStatements.SQL

  static let keyed: [(name: String, sql: String, uses: String)] = [
    ("changes", SQL.changesRange, "INTEGER PRIMARY KEY"),
    ("history", SQL.history, "INTEGER PRIMARY KEY"),
    ("changeAndPrevious", SQL.changeAndPrevious, "INTEGER PRIMARY KEY"),
    ("markAtOrAbove", SQL.markAtOrAbove, "PRIMARY KEY"),
    ("switchRevision", SQL.switchRevision, "PRIMARY KEY"),
    ("hasSwitch", SQL.hasSwitch, "PRIMARY KEY"),
    ("readRevision", SQL.readRevision, "PRIMARY KEY"),
    ("writeRevision", SQL.writeRevision, "PRIMARY KEY"),
    ("pruneChunk", SQL.pruneChunk, "INTEGER PRIMARY KEY"),
    ("pruneDetailsChunk", SQL.pruneDetailsChunk, "INTEGER PRIMARY KEY"),
  ]

  @Test(arguments: keyed.map(\.name))
  func queryUsesAKey(name: String) throws {
    let entry = Self.keyed.first { $0.name == name }!
    let plan = try withTemporaryDirectory { directory in
      let store = try SwitchStore(path: directory + "/s.db")
      defer { store.close() }
      return try queryPlan(store, entry.sql)
    }
    #expect(plan.contains { $0.hasPrefix("SEARCH") && $0.contains(entry.uses) }, "\(plan)")
    #expect(!plan.contains { $0.hasPrefix("SCAN") }, "\(plan)")
    #expect(!plan.contains { $0.contains("TEMP B-TREE") }, "\(plan)")
  }

  /// The prune threshold walks the newest `keep` rows backwards (O(keep), once per prune);
  /// loading every switch is a scan by design; neither sorts.
  @Test func oldestAndThresholdAvoidSorting() throws {
    let plans = try withTemporaryDirectory { directory in
      let store = try SwitchStore(path: directory + "/s.db")
      defer { store.close() }
      return [
        try queryPlan(store, SQL.oldestChange), try queryPlan(store, SQL.pruneThreshold),
        try queryPlan(store, SQL.loadSwitches),
      ]
    }
    for plan in plans {
      #expect(!plan.contains { $0.contains("TEMP B-TREE") }, "\(plan)")
    }
    // min() over the rowid is a single descent ("SEARCH"), not a scan of the log.
    #expect(plans[0].allSatisfy { !$0.hasPrefix("SCAN") }, "\(plans[0])")
  }

  /// The `detail` column of EXPLAIN QUERY PLAN, one line per step.
  private func queryPlan(_ store: SwitchStore, _ sql: String) throws -> [String] {
    let statement = try store.connection.prepareOnce("EXPLAIN QUERY PLAN " + sql)
    defer { statement.reset() }
    var details: [String] = []
    while try statement.step() { details.append(statement.text(at: 3)) }
    return details
  }
}
