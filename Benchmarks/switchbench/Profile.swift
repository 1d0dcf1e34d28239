import Glibc

/// Where switchd's instructions go per call (`--profile`): the inclusive
/// cost of each function, per thread, from `callgrind_annotate
/// --inclusive=yes` on the two counted runs, differenced like the totals,
/// so start-up and shutdown drop out of the listing too.
enum CallgrindProfile {
  /// Inclusive instructions by function name, one table per thread file.
  typealias Threads = [[String: Int]]

  /// The thread's whole count, as callgrind_annotate names it.
  static let totalsName = "PROGRAM TOTALS"

  /// Why the profile cannot be made here, or nil.
  static var missing: String? {
    findOnPath("callgrind_annotate") == nil ? "callgrind_annotate not installed (valgrind)" : nil
  }

  /// Every thread of a run made with `launcher(output:threads: true)`.
  static func read(_ output: String, scratch: String) throws -> Threads {
    guard let annotate = findOnPath("callgrind_annotate") else { return [] }
    return try threadFiles(output).map { file in
      let listing = "\(scratch)/annotate.txt"
      unlink(listing)
      let (status, _) = try runTimed(
        annotate, ["--inclusive=yes", "--threshold=100", "--auto=no", file],
        output: .file(listing))
      guard status == 0, let text = readFile(listing) else {
        throw BenchError("callgrind_annotate \(file) failed (\(status))")
      }
      return parse(text)
    }
  }

  /// "1,234,567 (12.34%)  file:function [object]" lines, by function (the
  /// largest of a function's lines).
  static func parse(_ text: String) -> [String: Int] {
    var costs: [String: Int] = [:]
    for line in text.split(separator: "\n") {
      let trimmed = line.drop { $0 == " " }
      guard let space = trimmed.firstIndex(of: " "),
        let cost = Int(trimmed[..<space].filter { $0 != "," }),
        let close = trimmed.firstIndex(of: ")")
      else { continue }
      let entry = trimmed[trimmed.index(after: close)...].drop { $0 == " " }
      if entry == totalsName {
        costs[totalsName] = cost
        continue
      }
      guard let colon = entry.firstIndex(of: ":") else { continue }
      var name = String(entry[entry.index(after: colon)...])
      if name.hasPrefix("0x"), name.contains("/"), let object = name.split(separator: "/").last {
        // An address without a symbol: its object's name says whose it is.
        name = "?? [" + object
      } else if let bracket = name.firstRange(of: " [") {
        name = String(name[..<bracket.lowerBound])
      }
      // A function is listed once per source file its code came from
      // (inlining), each time with about its whole inclusive cost.
      costs[name] = max(costs[name] ?? 0, cost)
    }
    return costs
  }

  /// Per thread, the `top` functions by inclusive instructions per call
  /// ((long - short) / calls), under the thread's own total per call;
  /// `per` names what was counted ("call", "delivered event").
  static func report(
    short: Threads, long: Threads, calls: Int, per: String, top: Int = 40, scratch: String
  ) -> [String] {
    let threads = zip(short, long).map { few, many in
      many.map { name, cost in (name, Double(cost - (few[name] ?? 0)) / Double(calls)) }
        .filter { $0.1 >= 1 }.sorted { $0.1 > $1.1 }
    }
    let totals = threads.map { $0.first { $0.0 == totalsName }?.1 ?? 0 }
    let sum = totals.reduce(0, +)
    var lines: [String] = []
    for (index, entries) in threads.enumerated() where totals[index] >= sum * 0.02 {
      let functions = entries.filter { $0.0 != totalsName }
      // The frames that hold (nearly) the whole thread (start_thread, main,
      // the run loop) only say where it runs: the innermost one is kept.
      let roots = functions.prefix { $0.1 >= totals[index] * 0.9 }
      let shown = Array(roots.suffix(1) + functions.dropFirst(roots.count).prefix(top - 1))
      let names = demangled(shown.map(\.0), scratch: scratch)
      lines.append(
        "thread \(index + 1): \(fixed(totals[index], 0)) instructions per \(per) "
          + "(\(fixed(totals[index] / sum * 100, 0)) %)")
      for ((_, cost), name) in zip(shown, names) {
        let padded = String(repeating: " ", count: max(0, 9 - fixed(cost, 0).count))
        lines.append("  \(padded)\(fixed(cost, 0))  \(name.prefix(150))")
      }
    }
    return lines
  }

  /// Swift names made readable by `swift-demangle --simplified` when the
  /// toolchain is on PATH; other names as they are.
  private static func demangled(_ names: [String], scratch: String) -> [String] {
    let swift = names.indices.filter { names[$0].hasPrefix("$s") || names[$0].hasPrefix("_$s") }
    guard !swift.isEmpty, let tool = findOnPath("swift-demangle") else { return names }
    let file = "\(scratch)/demangled.txt"
    unlink(file)
    guard
      let (status, _) = try? runTimed(
        tool, ["--simplified"] + swift.map { names[$0] }, output: .file(file)),
      status == 0, let text = readFile(file)
    else { return names }
    // One "mangled ---> readable" line per name.
    let lines = text.split(separator: "\n").compactMap { line in
      line.firstRange(of: " ---> ").map { String(line[$0.upperBound...]) }
    }
    guard lines.count == swift.count else { return names }
    var out = names
    for (index, line) in zip(swift, lines) { out[index] = line }
    return out
  }
}
