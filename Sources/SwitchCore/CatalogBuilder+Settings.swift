// switchd.conf: the daemon's own settings ([Daemon]).
extension CatalogBuilder {
  static let daemonNames = [
    "Socket", "Database", "AdminGroup", "Writers", "SocketMode", "MaxFrameBytes",
    "MaxConnections", "MaxConnectionsPerUser", "MaxQueuedBytes", "MaxWatchesPerConnection",
    "MaxHistoryPage",
    "MaxNestingDepth", "HistoryRetention", "LogLevel", "VarlinkSocket", "Authorization",
  ]

  /// `sun_path` holds 108 bytes including the terminating NUL (a test keeps
  /// this equal to SwitchSystem's `UnixSocketAddress.maxPathBytes`).
  static let maxSocketPathBytes = 107

  /// What is wrong with a socket's path (`Socket=`, `VarlinkSocket=`), if anything.
  static func socketPathProblem(_ entry: KeyFile.Entry) -> String? {
    if let problem = absolutePathProblem(entry) { return problem }
    let count = entry.value.utf8.count
    guard count > maxSocketPathBytes else { return nil }
    return "\(entry.name)= is \(count) bytes long: a Unix socket path is at most "
      + "\(maxSocketPathBytes) bytes"
  }

  static func readSettings(
    _ bytes: [UInt8], into report: inout Report
  ) -> DaemonSettings {
    let (keyFile, syntax) = KeyFile.parse(bytes: bytes, file: daemonConfName)
    report.add(syntax)
    reportRepeats(keyFile, sections: true, into: &report)
    var settings = DaemonSettings()
    for section in keyFile.sections {
      guard section.name == "Daemon" else {
        report.error(
          SourceLocation(file: keyFile.file, line: section.line),
          "unknown section [\(section.name)]: switchd.conf has only [Daemon]")
        continue
      }
      for entry in section.entries {
        let location = SourceLocation(file: keyFile.file, line: entry.line)
        if let problem = apply(entry, to: &settings) {
          report.error(location, problem)
        }
      }
    }
    return settings
  }

  /// Applies one `[Daemon]` entry; returns what is wrong with it, if anything.
  static func apply(_ entry: KeyFile.Entry, to settings: inout DaemonSettings) -> String? {
    let value = entry.value
    switch entry.name {
    case "Socket":
      if value.isEmpty {
        settings.socket = nil
        return nil
      }
      if let problem = socketPathProblem(entry) { return problem }
      settings.socket = value
    case "VarlinkSocket":
      // Empty is meaningful here: no varlink socket at all.
      if !value.isEmpty, let problem = socketPathProblem(entry) { return problem }
      settings.varlinkSocket = value
    case "Database":
      if value.isEmpty {
        settings.database = nil
        return nil
      }
      if let problem = absolutePathProblem(entry) { return problem }
      settings.database = value
    case "AdminGroup":
      // Empty is a deliberate choice, not "unset": no group, only root administers.
      settings.adminGroup = value.isEmpty ? nil : value
    case "Writers":
      settings.writers = value.isEmpty ? nil : value
    case "SocketMode":
      guard let mode = parseOctalMode(value) else {
        return "SocketMode=\(value) is not a file mode: use octal digits from 0000 to 0777,"
          + " like 0666 or 0660"
      }
      settings.socketMode = mode
    case "Authorization":
      guard let mode = Authorization(rawValue: value) else {
        return "Authorization=\(value) is not a way to authorize: use builtin (the table of"
          + " docs/semantics.md) or polkit (ask polkit for each write)"
      }
      settings.authorization = mode
    case "LogLevel":
      guard let level = LogLevel.allCases.first(where: { $0.name == value.lowercased() }) else {
        let names = LogLevel.allCases.map(\.name).joined(separator: ", ")
        return "LogLevel=\(value) is not a log level: use one of \(names)"
      }
      settings.logLevel = level
    default:
      guard let (range, keyPath) = numericSetting(entry.name) else {
        return unknownName(entry, section: "Daemon", allowed: daemonNames)
      }
      switch parseDecimal(value, limit: range.upperBound) {
      case .some(let number) where range.contains(number):
        settings[keyPath: keyPath] = number
      case .some:
        return "\(entry.name)=\(value) is out of range: it must be a whole number from "
          + "\(range.lowerBound) to \(range.upperBound)"
      case .none:
        return "\(entry.name)=\(value) is not a number: it must be a whole number from "
          + "\(range.lowerBound) to \(range.upperBound)"
      }
    }
    return nil
  }

  /// The allowed range and the field of a numeric `[Daemon]` name.
  ///
  /// A function rather than a table: key paths are not Sendable, so a static
  /// table of them is not allowed in Swift 6 mode.
  static func numericSetting(
    _ name: String
  ) -> (ClosedRange<Int>, WritableKeyPath<DaemonSettings, Int>)? {
    switch name {
    case "MaxFrameBytes": return (1024...64 * 1024 * 1024, \.maxFrameBytes)
    case "MaxConnections": return (1...1_000_000, \.maxConnections)
    case "MaxConnectionsPerUser": return (1...65_536, \.maxConnectionsPerUser)
    case "MaxQueuedBytes": return (4096...1024 * 1024 * 1024, \.maxQueuedBytes)
    case "MaxWatchesPerConnection": return (1...10_000, \.maxWatchesPerConnection)
    case "MaxHistoryPage": return (1...1000, \.maxHistoryPage)
    case "MaxNestingDepth": return (2...512, \.maxNestingDepth)
    case "HistoryRetention": return (1...100_000_000, \.historyRetention)
    default: return nil
    }
  }

  static func absolutePathProblem(_ entry: KeyFile.Entry) -> String? {
    entry.value.hasPrefix("/")
      ? nil : "\(entry.name)=\(entry.value) is not an absolute path: it must start with '/'"
  }

  /// A plain decimal number: digits only, no sign, no separators. A number
  /// above `limit` comes back as `limit + 1` so that huge inputs read as
  /// "out of range" rather than overflowing.
  static func parseDecimal(_ text: String, limit: Int) -> Int? {
    if text.isEmpty { return nil }
    var value = 0
    for byte in text.utf8 {
      guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
      if value <= limit { value = value * 10 + Int(byte - UInt8(ascii: "0")) }
    }
    return min(value, limit + 1)
  }

  /// Octal digits (`0666`, `660`) up to 0777.
  static func parseOctalMode(_ text: String) -> UInt32? {
    if text.isEmpty { return nil }
    var value: UInt32 = 0
    for byte in text.utf8 {
      guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "7") else { return nil }
      value = value * 8 + UInt32(byte - UInt8(ascii: "0"))
      if value > 0o777 { return nil }
    }
    return value
  }
}
