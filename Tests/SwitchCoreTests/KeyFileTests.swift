import SeededRandom
import Testing

@testable import SwitchCore

/// One section as the tests write it: name, header line, and (name, value, line) entries.
private func section(
  _ name: String, line: Int, _ entries: [(String, String, Int)]
) -> KeyFile.Section {
  KeyFile.Section(
    name: name, line: line,
    entries: entries.map { KeyFile.Entry(name: $0.0, value: $0.1, line: $0.2) })
}

private func parse(_ text: String) -> (KeyFile, [ConfigDiagnostic]) {
  KeyFile.parse(text, file: "switches.d/a.conf")
}

struct KeyFileSyntaxTests {
  @Test func readsSectionsAndEntriesWithLineNumbers() {
    let text = """
      [wifi]
      Label=Wi-Fi
      Default=off

      [email.marketing]
      Label=Marketing emails
      """
    let (file, diagnostics) = parse(text)
    #expect(diagnostics.isEmpty)
    #expect(file.file == "switches.d/a.conf")
    #expect(
      file.sections == [
        section("wifi", line: 1, [("Label", "Wi-Fi", 2), ("Default", "off", 3)]),
        section("email.marketing", line: 5, [("Label", "Marketing emails", 6)]),
      ])
  }

  /// Texts that all mean `[s]` at line 2 with `A=b` at line 4.
  @Test(
    arguments: [
      "# comment\n[s]\n\nA=b",
      "; comment\n[s]\n\nA=b",
      "   # indented comment\n[s]\n\t; tabbed comment\nA=b",
      "\n  [s]  \n\n  A  =  b  ",
      "\n[ s ]\n\n\tA\t=\tb\t",
      "\r\n[s]\r\n\r\nA=b\r\n",
      "\u{FEFF}\n[s]\n\nA=b\n",
      "\n[s]\n   \nA=b\n\n\n",
    ])
  func commentsBlankLinesWhitespaceAndLineEnds(text: String) {
    let (file, diagnostics) = parse(text)
    #expect(diagnostics.isEmpty)
    #expect(file.sections == [section("s", line: 2, [("A", "b", 4)])])
  }

  /// Values keep everything after the first `=` except surrounding white space.
  @Test(
    arguments: [
      ("Reason=Ticket #123", "Ticket #123"),
      ("Reason=a; b", "a; b"),
      ("Reason=x=y=z", "x=y=z"),
      ("Reason= spaced  inside ", "spaced  inside"),
      ("Reason=", ""),
      ("Reason=[not a header]", "[not a header]"),
      ("Reason=Café ☕", "Café ☕"),
    ])
  func valuesAreKeptWhole(line: String, value: String) {
    let (file, diagnostics) = parse("[s]\n\(line)")
    #expect(diagnostics.isEmpty)
    #expect(file.sections.first?.entries == [KeyFile.Entry(name: "Reason", value: value, line: 2)])
  }

  @Test func crlfIsNotPartOfTheValue() {
    let (file, _) = parse("[s]\r\nLabel=Wi-Fi\r\nDefault=on\r\n")
    #expect(file.sections.first?.entries.map(\.value) == ["Wi-Fi", "on"])
    #expect(file.sections.first?.entries.map(\.line) == [2, 3])
  }

  @Test func duplicateNamesAreKeptInOrderForTheReaderToApply() {
    let (file, diagnostics) = parse("[s]\nA=1\nA=2")
    #expect(diagnostics.isEmpty)
    #expect(file.sections == [section("s", line: 1, [("A", "1", 2), ("A", "2", 3)])])
  }

  @Test func aRepeatedHeaderGivesTwoSections() {
    let (file, diagnostics) = parse("[s]\nA=1\n[t]\n[s]\nB=2")
    #expect(diagnostics.isEmpty)
    #expect(
      file.sections == [
        section("s", line: 1, [("A", "1", 2)]),
        section("t", line: 3, []),
        section("s", line: 4, [("B", "2", 5)]),
      ])
  }

  @Test(arguments: ["", "\n", "# only a comment\n", "\r\n\r\n", "\u{FEFF}"])
  func emptyFilesHaveNoSections(text: String) {
    let (file, diagnostics) = parse(text)
    #expect(diagnostics.isEmpty)
    #expect(file.sections.isEmpty)
  }
}

struct KeyFileErrorTests {
  /// A bad line, the line it is on, and the whole `description` of the error.
  @Test(
    arguments: [
      (
        "[s]\nA=1\njust words", 3,
        "switches.d/a.conf:3: expected Name=value, a [section] header or a comment, "
          + "found \"just words\""
      ),
      (
        "\nLabel=Wi-Fi\n[s]", 2,
        "switches.d/a.conf:2: Label= is outside any section: put it under a [section] header"
      ),
      ("[]", 1, "switches.d/a.conf:1: empty section header: a section needs a name"),
      ("[s]\n[  ]", 2, "switches.d/a.conf:2: empty section header: a section needs a name"),
      ("[wifi", 1, "switches.d/a.conf:1: section header has no closing ']'"),
      (
        "[wifi] # radio", 1,
        "switches.d/a.conf:1: unexpected text after ']' in section header: "
          + "comments go on their own line"
      ),
      (
        "[a]b]", 1,
        "switches.d/a.conf:1: unexpected text after ']' in section header: "
          + "comments go on their own line"
      ),
      ("[a[b]", 1, "switches.d/a.conf:1: section name cannot contain '['"),
      ("[s]\n=on", 2, "switches.d/a.conf:2: entry has no name before '=': write Name=value"),
      ("[s]\n  = on", 2, "switches.d/a.conf:2: entry has no name before '=': write Name=value"),
      (
        "[s]\nA=b\u{0}c", 2,
        "switches.d/a.conf:2: line contains a NUL byte: configuration files are text"
      ),
      (
        "[s]\r\nnonsense\r\n", 2,
        "switches.d/a.conf:2: expected Name=value, a [section] "
          + "header or a comment, found \"nonsense\""
      ),
    ])
  func eachErrorNamesFileAndLine(text: String, line: Int, description: String) {
    let (_, diagnostics) = parse(text)
    #expect(diagnostics.count == 1)
    #expect(diagnostics.first?.severity == .error)
    #expect(
      diagnostics.first?.location
        == SwitchCore.SourceLocation(file: "switches.d/a.conf", line: line))
    #expect(diagnostics.first?.description == description)
  }

  @Test func parsingGoesOnAfterAnErrorAndSkipsTheBadLine() {
    let (file, diagnostics) = parse("[s]\nbad line\nA=1\nB=x\u{0}\n[\nC=2")
    #expect(diagnostics.map(\.location.line) == [2, 4, 5])
    // The broken header at line 5 opens no section, so C stays in [s].
    #expect(file.sections == [section("s", line: 1, [("A", "1", 3), ("C", "2", 6)])])
  }

  @Test func bytesThatAreNotUTF8AreReportedNotCrashedOn() {
    let bytes: [UInt8] = Array("[s]\nLabel=".utf8) + [0xFF, 0xFE, 0xC3] + Array("\nA=1".utf8)
    let (file, diagnostics) = KeyFile.parse(bytes: bytes, file: "switches.d/a.conf")
    #expect(diagnostics.map(\.description) == ["switches.d/a.conf:2: line is not valid UTF-8 text"])
    #expect(file.sections == [section("s", line: 1, [("A", "1", 3)])])
  }

  @Test func aReplacementCharacterTheAuthorWroteIsText() {
    let bytes = Array("[s]\nDescription=Unknown glyph \u{FFFD} shown as is\n".utf8)
    let (file, diagnostics) = KeyFile.parse(bytes: bytes, file: "switches.d/a.conf")
    #expect(diagnostics.isEmpty)
    #expect(file.sections.first?.entries.first?.value == "Unknown glyph \u{FFFD} shown as is")
  }

  @Test func aByteOrderMarkIsSkippedInBytesToo() {
    let (file, diagnostics) = KeyFile.parse(
      bytes: [0xEF, 0xBB, 0xBF] + Array("[s]\nA=1".utf8), file: "x.conf")
    #expect(diagnostics.isEmpty)
    #expect(file.sections == [section("s", line: 1, [("A", "1", 2)])])
  }

  @Test func longBadLinesAreShortenedInTheMessage() {
    let long = String(repeating: "x", count: 100)
    let (_, diagnostics) = parse("[s]\n\(long)")
    let expected =
      "expected Name=value, a [section] header or a comment, found \""
      + String(repeating: "x", count: 40) + "…\""
    #expect(diagnostics.map(\.message) == [expected])
  }
}

/// Random texts from the characters that matter to the syntax: whatever the
/// input, parsing ends, and what it returns is consistent.
struct KeyFilePropertyTests {
  static let pieces = [
    "[", "]", "=", "#", ";", "\n", "\r\n", "\r", " ", "\t", "\u{0}", "\u{FFFD}", "\u{FEFF}",
    "a", "wifi", "Label", "ReadOnly", "yes", "é", "☕", "e\u{301}",
  ]

  static func randomText(using generator: inout SplitMix64) -> String {
    let count = Int.random(in: 0...60, using: &generator)
    return (0..<count).map { _ in pieces.randomElement(using: &generator)! }.joined()
  }

  @Test func anyTextParsesConsistently() {
    var generator = SplitMix64(seed: 42)
    for _ in 0..<3000 {
      let text = Self.randomText(using: &generator)
      let (file, diagnostics) = KeyFile.parse(text, file: "x.conf")
      let lineCount = text.unicodeScalars.filter { $0 == "\n" }.count + 1
      for diagnostic in diagnostics {
        #expect(diagnostic.severity == .error)
        #expect(diagnostic.location.file == "x.conf")
        #expect((1...lineCount).contains(diagnostic.location.line))
      }
      var previousLine = 0
      for section in file.sections {
        #expect(!section.name.isEmpty)
        #expect(section.line > previousLine)
        previousLine = section.line
        for entry in section.entries {
          #expect(!entry.name.isEmpty)
          #expect(!entry.name.contains("="))
          #expect(entry.line > previousLine && entry.line <= lineCount)
          previousLine = entry.line
        }
      }
    }
  }
}
