// switches.d: how a switch's state is read back from the system and what a
// drift does (ExecCheck=, ExecWatch=, CheckIntervalSec=, OnDrift=, DriftLimit=).
extension CatalogBuilder {
  static let readBackNames = [
    "ExecCheck", "ExecWatch", "CheckIntervalSec", "OnDrift", "DriftLimit",
  ]

  /// The read-back entries of one `[key]` as they are read, checked
  /// against the rest of the section by `finish`.
  struct ReadBackDraft {
    var settings = ReadBack()
    var programLines: [(name: String, line: Int)] = []
    var driftLines: [(name: String, line: Int)] = []
    var intervalLine: Int?

    /// Reads one entry whose name is in `readBackNames`; false when its value is invalid
    /// (reported).
    mutating func read(
      _ entry: KeyFile.Entry, at location: SourceLocation, into report: inout Report
    ) -> Bool {
      switch entry.name {
      case "ExecCheck", "ExecWatch":
        programLines.append((entry.name, entry.line))
        let purpose = entry.name == "ExecCheck" ? "reads the state" : "follows the state"
        let (words, problem) = CatalogBuilder.programWords(
          entry.value, name: entry.name, purpose: purpose)
        guard let words else {
          report.error(location, problem ?? "\(entry.name)= is invalid")
          return false
        }
        if entry.name == "ExecCheck" { settings.check = words } else { settings.watch = words }
      case "CheckIntervalSec":
        intervalLine = entry.line
        guard let milliseconds = ReadBack.parseInterval(entry.value) else {
          report.error(
            location,
            "CheckIntervalSec=\(entry.value) is not a number of seconds: 0 (only after each "
              + "apply) or up to 86400, like 30 or 0.5")
          return false
        }
        settings.checkIntervalMilliseconds = milliseconds
      case "OnDrift":
        driftLines.append((entry.name, entry.line))
        guard let onDrift = ReadBack.OnDrift(rawValue: entry.value) else {
          report.error(location, "OnDrift=\(entry.value) is not adopt or reassert")
          return false
        }
        settings.onDrift = onDrift
      default:  // DriftLimit
        driftLines.append((entry.name, entry.line))
        let limit = ReadBack.maximumDriftLimit
        guard let number = CatalogBuilder.parseDecimal(entry.value, limit: limit),
          (1...limit).contains(number)
        else {
          report.error(
            location,
            "DriftLimit=\(entry.value) is not a whole number from 1 to \(limit): how many "
              + "re-applications within 60 s are made")
          return false
        }
        settings.driftLimit = number
      }
      return true
    }

    /// The switch's `ReadBack` (nil when it reads nothing back), with what
    /// does not fit the rest of the section reported; `valid` false after an error.
    func finish(
      key: String, hasApply: Bool, file: String, into report: inout Report
    ) -> (readBack: ReadBack?, valid: Bool) {
      let reads = settings.check != nil || settings.watch != nil
      var valid = true
      if !hasApply {
        for (name, line) in programLines {
          report.error(
            SourceLocation(file: file, line: line),
            "\(name)= of switch \(key) needs ExecApply=: switchd reads back only what it applies")
          valid = false
        }
      }
      if !reads && programLines.isEmpty {
        for (name, line) in driftLines {
          report.warning(
            SourceLocation(file: file, line: line),
            "\(name)= has no effect without ExecCheck= or ExecWatch=")
        }
      }
      if let intervalLine, !programLines.contains(where: { $0.name == "ExecCheck" }) {
        report.warning(
          SourceLocation(file: file, line: intervalLine),
          "CheckIntervalSec= has no effect without ExecCheck=")
      }
      return (reads ? settings : nil, valid)
    }
  }

  /// The words of an `ExecApply=`, `ExecCheck=` or `ExecWatch=` value
  /// (`ApplyCommand.split`), or what is wrong with it: empty, an unclosed
  /// quote, or a program path that is not absolute. `purpose` ends the
  /// sentence for an empty value: "name the program that `purpose`".
  static func programWords(
    _ value: String, name: String, purpose: String
  ) -> (words: [String]?, problem: String?) {
    switch ApplyCommand.split(value) {
    case .failure(.empty):
      return (nil, "\(name)= is empty: name the program that \(purpose)")
    case .failure(.unclosedQuote):
      return (nil, "\(name)=\(value) has an unclosed double quote")
    case .success(let words):
      guard words[0].hasPrefix("/") else {
        return (
          nil,
          "\(name)=\(value): the program \(words[0]) is not an absolute path: "
            + "it must start with '/'"
        )
      }
      return (words, nil)
    }
  }
}
