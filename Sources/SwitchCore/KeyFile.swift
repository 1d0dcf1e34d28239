/// A configuration file in the keyfile style of systemd units: `[section]`
/// headers and `Name=value` lines, each kept with its line number so that
/// every later error can point at the exact place.
///
/// The parser only knows the syntax. Which sections and names exist, and what
/// a value means, is `CatalogBuilder`'s business. Entries are kept in file
/// order, duplicates included: the reader reports a repeat with both lines.
public struct KeyFile: Sendable {
  /// One `Name=value` line, with white space around name and value removed.
  public struct Entry: Sendable, Equatable {
    public var name: String
    public var value: String
    public var line: Int

    public init(name: String, value: String, line: Int) {
      self.name = name
      self.value = value
      self.line = line
    }
  }

  /// A `[name]` header and the entries under it. A name that appears twice in
  /// one file gives two sections: the reader decides what that means.
  public struct Section: Sendable, Equatable {
    public var name: String
    public var line: Int
    public var entries: [Entry]

    public init(name: String, line: Int, entries: [Entry]) {
      self.name = name
      self.line = line
      self.entries = entries
    }
  }

  /// The path relative to the configuration directory (`policy.d/50-corp.conf`).
  public var file: String
  public var sections: [Section]

  public init(file: String, sections: [Section]) {
    self.file = file
    self.sections = sections
  }

  /// Parses keyfile text. Errors (never thrown — collected) name file and line.
  public static func parse(_ text: String, file: String) -> (KeyFile, [ConfigDiagnostic]) {
    parse(bytes: Array(text.utf8), file: file)
  }

  /// Parses the bytes of a keyfile as read from disk.
  ///
  /// Lines end in LF or CRLF; a leading byte order mark is skipped. Comments
  /// are whole lines starting with `#` or `;`, so `Reason=Ticket #123` keeps
  /// `#123`. A line with a NUL or with bytes that are not UTF-8 is reported
  /// and skipped: configuration is text. (Each line is validated as bytes,
  /// so a U+FFFD the author wrote is text like any other.)
  public static func parse(bytes: [UInt8], file: String) -> (KeyFile, [ConfigDiagnostic]) {
    var sections: [Section] = []
    var diagnostics: [ConfigDiagnostic] = []
    var content = bytes[...]
    if content.starts(with: [0xEF, 0xBB, 0xBF]) { content = content.dropFirst(3) }

    let lines = content.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false)
    for (index, lineBytes) in lines.enumerated() {
      let lineNumber = index + 1
      func error(_ message: String) {
        diagnostics.append(
          ConfigDiagnostic(.error, SourceLocation(file: file, line: lineNumber), message))
      }

      if lineBytes.contains(0) {
        error("line contains a NUL byte: configuration files are text")
        continue
      }
      guard let text = String(validating: lineBytes, as: UTF8.self) else {
        error("line is not valid UTF-8 text")
        continue
      }
      let line = trimmed(Substring(text).unicodeScalars)
      guard let first = line.first else { continue }
      if first == "#" || first == ";" { continue }

      if first == "[" {
        switch parseHeader(line) {
        case .success(let name):
          sections.append(Section(name: name, line: lineNumber, entries: []))
        case .failure(let problem):
          error(problem.message)
        }
        continue
      }

      guard let equals = line.firstIndex(of: "=") else {
        error(
          "expected Name=value, a [section] header or a comment, found \"\(excerpt(String(line), limit: 40))\""
        )
        continue
      }
      let name = String(trimmed(line[..<equals]))
      let value = String(trimmed(line[line.index(after: equals)...]))
      if name.isEmpty {
        error("entry has no name before '=': write Name=value")
        continue
      }
      if sections.isEmpty {
        error("\(name)= is outside any section: put it under a [section] header")
        continue
      }
      sections[sections.count - 1].entries.append(
        Entry(name: name, value: value, line: lineNumber))
    }
    return (KeyFile(file: file, sections: sections), diagnostics)
  }

  private struct HeaderProblem: Error {
    var message: String
  }

  /// The name inside `[name]`, white space around it dropped.
  private static func parseHeader(
    _ line: Substring.UnicodeScalarView
  ) -> Result<String, HeaderProblem> {
    let afterOpen = line.index(after: line.startIndex)
    guard let close = line[afterOpen...].firstIndex(of: "]") else {
      return .failure(HeaderProblem(message: "section header has no closing ']'"))
    }
    let rest = line[line.index(after: close)...]
    if !rest.isEmpty {
      return .failure(
        HeaderProblem(
          message: "unexpected text after ']' in section header: comments go on their own line"
        ))
    }
    let name = trimmed(line[afterOpen..<close])
    if name.isEmpty {
      return .failure(HeaderProblem(message: "empty section header: a section needs a name"))
    }
    if name.contains("[") {
      return .failure(HeaderProblem(message: "section name cannot contain '['"))
    }
    return .success(String(name))
  }

  /// The line with leading and trailing white space (including a CR) removed.
  private static func trimmed(
    _ scalars: Substring.UnicodeScalarView
  ) -> Substring.UnicodeScalarView {
    var start = scalars.startIndex
    var end = scalars.endIndex
    while start < end, isSpace(scalars[start]) { start = scalars.index(after: start) }
    while end > start, isSpace(scalars[scalars.index(before: end)]) {
      end = scalars.index(before: end)
    }
    return scalars[start..<end]
  }

  private static func isSpace(_ scalar: Unicode.Scalar) -> Bool {
    scalar == " " || scalar == "\t" || scalar == "\r" || scalar == "\u{0B}" || scalar == "\u{0C}"
  }
}
