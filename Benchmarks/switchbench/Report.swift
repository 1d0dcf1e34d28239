import SwitchProtocol

/// How a figure is printed.
enum Unit: String, Sendable {
  case perSecond = "req/s"
  case microseconds = "us"
  case seconds = "s"
  case kibibytes = "KiB"
  case count = "n"
  /// Counted per call (instructions, system calls): not a time.
  case perCall = "per call"
}

/// A target from issue 6, checked against the ratio or the value.
enum Target: Sendable {
  case none
  /// switchd / reference at least this (throughput).
  case ratioAtLeast(Double)
  /// switchd / reference at most this (latency, time).
  case ratioAtMost(Double)
  /// switchd / reference strictly below 1 (faster than the peer).
  case ratioBelowOne
  /// switchd / reference within 1 ± this.
  case ratioWithin(Double)
  /// The value itself at most this (in the row's unit).
  case valueAtMost(Double)
  /// The value at most the reference plus this (in the row's unit).
  case atMostReferencePlus(Double)

  var text: String {
    switch self {
    case .none: return ""
    case .ratioAtLeast(let x): return ">= \(trim(x))x"
    case .ratioAtMost(let x): return "<= \(trim(x))x"
    case .ratioBelowOne: return "< 1x"
    case .ratioWithin(let x): return "1 +/- \(trim(x))"
    case .valueAtMost: return ""
    case .atMostReferencePlus(let x): return "<= peer + \(trim(x))"
    }
  }
}

/// One line of the report.
struct Row: Sendable {
  var section: String
  var measure: String
  var unit: Unit
  var value: Double?
  var reference: Double?
  var referenceName = ""
  var target = Target.none
  /// Why a figure is missing, or a remark.
  var note = ""

  var ratio: Double? {
    guard let value, let reference, reference > 0, value.isFinite, reference.isFinite else {
      return nil
    }
    return value / reference
  }

  /// nil: no target, or nothing to judge.
  var passed: Bool? {
    switch target {
    case .none: return nil
    case .valueAtMost(let limit):
      guard let value, value.isFinite else { return nil }
      return value <= limit
    case .ratioAtLeast(let x): return ratio.map { $0 >= x }
    case .ratioAtMost(let x): return ratio.map { $0 <= x }
    case .ratioBelowOne: return ratio.map { $0 < 1 }
    case .ratioWithin(let x): return ratio.map { abs($0 - 1) <= x }
    case .atMostReferencePlus(let x):
      guard let value, let reference, value.isFinite, reference.isFinite else { return nil }
      return value <= reference + x
    }
  }

  var targetText: String {
    if case .valueAtMost(let limit) = target { return "<= \(format(limit, unit))" }
    return target.text
  }
}

private func trim(_ x: Double) -> String {
  x == x.rounded() ? String(Int(x)) : String(x)
}

/// A number with a fixed count of decimals (no Foundation).
func fixed(_ x: Double, _ decimals: Int) -> String {
  guard x.isFinite else { return "-" }
  var scale = 1.0
  for _ in 0..<decimals { scale *= 10 }
  let scaled = (abs(x) * scale).rounded()
  let whole = Int(scaled / scale)
  let fraction = Int(scaled - Double(whole) * scale)
  var text = (x < 0 && scaled > 0 ? "-" : "") + String(whole)
  if decimals > 0 {
    let digits = String(fraction)
    text += "." + String(repeating: "0", count: decimals - digits.count) + digits
  }
  return text
}

/// A figure in a readable unit.
func format(_ value: Double?, _ unit: Unit) -> String {
  guard let value, value.isFinite else { return "-" }
  switch unit {
  case .perSecond:
    return value >= 10_000 ? "\(fixed(value / 1000, 1))k/s" : "\(fixed(value, 0))/s"
  case .microseconds:
    return value >= 1000 ? "\(fixed(value / 1000, 2)) ms" : "\(fixed(value, 0)) us"
  case .seconds:
    return value < 1 ? "\(fixed(value * 1000, 1)) ms" : "\(fixed(value, 2)) s"
  case .kibibytes: return "\(fixed(value / 1024, 1)) MiB"
  case .count: return value < 100 && value != value.rounded() ? fixed(value, 1) : fixed(value, 0)
  case .perCall:
    if value >= 10_000 { return "\(fixed(value / 1000, 1))k" }
    return value >= 100 ? fixed(value, 0) : fixed(value, 2)
  }
}

/// Prints the rows as a table, grouped by section.
func printTable(_ rows: [Row], header: [String]) {
  for line in header { print(line) }
  let titles = ["measure", "switchd", "floor/peer", "ratio", "target", "verdict"]
  var table: [[String]] = []
  for row in rows {
    let reference =
      row.reference == nil
      ? (row.referenceName.isEmpty ? "" : row.referenceName)
      : "\(format(row.reference, row.unit)) \(row.referenceName)"
    let verdict = row.passed.map { $0 ? "pass" : "FAIL" } ?? (row.target.isSet ? "n/a" : "")
    var measure = row.measure
    if !row.note.isEmpty { measure += " (\(row.note))" }
    table.append([
      measure, format(row.value, row.unit), reference, row.ratio.map { "\(fixed($0, 2))x" } ?? "",
      row.targetText, verdict,
    ])
  }
  var widths = titles.map(\.count)
  for line in table {
    for (i, cell) in line.enumerated() { widths[i] = max(widths[i], cell.count) }
  }
  func render(_ cells: [String]) -> String {
    var out = ""
    for (i, cell) in cells.enumerated() {
      let pad = String(repeating: " ", count: widths[i] - cell.count)
      out += i == 0 || i == 2 || i == 4 ? cell + pad : pad + cell
      if i < cells.count - 1 { out += "  " }
    }
    while out.hasSuffix(" ") { out.removeLast() }
    return out
  }
  print(render(titles))
  print(render(widths.map { String(repeating: "-", count: $0) }))
  var section = ""
  for (row, line) in zip(rows, table) {
    if row.section != section {
      section = row.section
      print("[\(section)]")
    }
    print(render(line))
  }
  let judged = rows.compactMap(\.passed)
  print(
    "\(judged.filter { $0 }.count) of \(judged.count) targets pass"
      + (judged.contains(false)
        ? "; failing: "
          + rows.filter { $0.passed == false }.map(\.measure).joined(separator: "; ") : ""))
}

extension Target {
  var isSet: Bool {
    if case .none = self { return false }
    return true
  }
}

/// The rows as one JSON object (numbers in the row's unit).
func printJSON(_ rows: [Row], meta: [(String, String)]) {
  var w = JSONWriter(capacity: 8192)
  w.raw("{")
  for (name, value) in meta {
    w.string(name)
    w.raw(":")
    w.string(value)
    w.raw(",")
  }
  w.raw("\"rows\":[")
  for (i, row) in rows.enumerated() {
    if i > 0 { w.raw(",\n") }
    w.raw("{\"section\":")
    w.string(row.section)
    w.raw(",\"measure\":")
    w.string(row.measure)
    w.raw(",\"unit\":")
    w.string(row.unit.rawValue)
    w.raw(",\"switchd\":")
    number(&w, row.value)
    w.raw(",\"reference\":")
    number(&w, row.reference)
    w.raw(",\"referenceName\":")
    w.string(row.referenceName)
    w.raw(",\"ratio\":")
    number(&w, row.ratio)
    w.raw(",\"target\":")
    w.string(row.targetText)
    w.raw(",\"verdict\":")
    w.stringOrNull(row.passed.map { $0 ? "pass" : "fail" })
    w.raw(",\"note\":")
    w.string(row.note)
    w.raw("}")
  }
  w.raw("]}")
  print(String(decoding: w.bytes, as: UTF8.self))
}

private func number(_ w: inout JSONWriter, _ value: Double?) {
  guard let value, value.isFinite else {
    w.null()
    return
  }
  w.raw(Array(fixed(value, 3).utf8))
}
