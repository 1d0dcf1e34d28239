import Testing

@testable import SwitchDaemon

/// A prefix search through the fences finds exactly what a scan of every key finds.
@Suite struct SwitchEncodingsTests {
  static func keys(_ count: Int) -> [String] {
    (0..<count).map { "k\($0 % 7).\($0)" }.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
  }

  @Test(arguments: [0, 1, 2, 15, 16, 17, 31, 32, 33, 100, 1000])
  func prefixSearchEqualsAScan(count: Int) {
    let keys = Self.keys(count)
    let encodings = SwitchEncodings(sortedKeys: keys)
    var prefixes = ["", "a", "k", "k0", "k3.", "k6.9", "z", "k7", "k0.1"]
    prefixes += keys.flatMap { key in (1...key.count).map { String(key.prefix($0)) } }
    for prefix in Set(prefixes) {
      let found = encodings.positions(withPrefix: prefix)
      let expected = keys.indices.filter {
        prefix.isEmpty || keys[$0].utf8.starts(with: prefix.utf8)
      }
      #expect(Array(found) == expected, "prefix \(prefix) among \(count)")
    }
    #expect(encodings.positions(withPrefix: nil) == keys.indices)
  }
}
