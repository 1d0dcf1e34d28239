import SwitchCore
import SwitchProtocol
import SwitchTestSupport
import Testing

@testable import SwitchCtl

/// The tables the docs print, read out of them and compared with the code's
/// own: exit statuses (ExitCode.allCases, and which error gives which),
/// methods (Method.allCases), errors (RPCErrorCode.known) and switchctl's
/// commands, their options and which refuse `--user` (Commands.all). A row
/// added, removed or changed on either side fails here, so the docs cannot
/// drift from the program again.
@Suite struct DocumentedTablesTests {
  static let protocolPage = DocumentText.read("docs/protocol.md")
  static let switchctlPage = DocumentText.read("docs/man/switchctl.1.scd")
  static let readme = DocumentText.read("README.md")

  // MARK: Exit status

  @Test func switchctlManPageExitStatusesAreExitCodes() throws {
    let section = try #require(Self.switchctlPage.scdSection("EXIT STATUS"))
    let rows = ScdList(section).items.map { (status: Int32($0.term.trimmingBold), text: $0.text) }
    try #require(rows.allSatisfy { $0.status != nil }, "every term is a number: \(rows)")
    Self.expectExitRows(rows.map { ($0.status!, $0.text) }, in: "switchctl(1)")
  }

  @Test func protocolPageExitStatusesAreExitCodes() throws {
    let table = try #require(
      Self.protocolPage.markdownTable(headed: ["status", "meaning", "from"]))
    let rows = table.map { (status: Int32($0[0]), text: $0[2]) }
    try #require(rows.allSatisfy { $0.status != nil }, "every status is a number: \(table)")
    Self.expectExitRows(rows.map { ($0.status!, $0.text) }, in: "docs/protocol.md")
  }

  @Test func readmeExitStatusesAreExitCodes() throws {
    let sentence = try #require(Self.readme.text(from: "Exit status: ", to: ";"))
    let statuses = sentence.split(separator: ",").compactMap {
      Int32($0.split(whereSeparator: \.isWhitespace).first ?? "")
    }
    #expect(statuses == ExitCode.allCases.map(\.rawValue), "README: \(sentence)")
  }

  /// Each status once, the code's statuses exactly; a row names (as a word)
  /// the error names that exit with its status: all of them, except that
  /// "failed" (1) is also every error no other row names.
  static func expectExitRows(_ rows: [(status: Int32, text: String)], in page: String) {
    let documented = rows.map(\.status)
    #expect(
      documented.sorted() == ExitCode.allCases.map(\.rawValue).sorted(),
      "\(page) lists exit statuses \(documented)")
    for (status, text) in rows {
      let named = Set(words(in: text)).intersection(RPCErrorCode.known.map(\.name))
      let giving = Set(RPCErrorCode.known.filter { ExitCode($0).rawValue == status }.map(\.name))
      if status == ExitCode.failure.rawValue {
        #expect(named.isSubset(of: giving), "\(page), exit \(status) names \(named)")
      } else {
        #expect(named == giving, "\(page), exit \(status) names \(named); it is given by \(giving)")
      }
    }
  }

  // MARK: Methods and errors

  @Test func protocolPageMethodsAreTheMethods() throws {
    let table = try #require(
      Self.protocolPage.markdownTable(headed: ["method", "params", "result", "who"]))
    let methods = table.map { $0[0].trimmingCode }
    #expect(methods.sorted() == Method.allCases.map(\.rawValue).sorted())
    // "who" is the method's privilege, SwitchCore's table.
    for row in table {
      guard let method = Method(rawValue: row[0].trimmingCode) else { continue }
      let who: Privilege =
        row[3].contains("administrator") ? .administrator : row[3] == "writers" ? .writer : .anyone
      #expect(who == method.privilege, "\(row)")
    }
  }

  @Test func readmeMethodsAreTheMethods() throws {
    let sentence = try #require(Self.readme.text(from: "Methods: ", to: ";"))
    #expect(
      codeSpans(in: sentence).sorted() == Method.allCases.map(\.rawValue).sorted(),
      "README: \(sentence)")
  }

  @Test func protocolPageErrorsAreTheErrorCodes() throws {
    let table = try #require(
      Self.protocolPage.markdownTable(
        headed: ["code", "`data.name`", "when", "other `data` members"]))
    let documented = table.map { "\($0[0]) \($0[1].trimmingCode)" }
    let known = RPCErrorCode.known.map { "\($0.rawValue) \($0.name)" }
    #expect(documented.sorted() == known.sorted())
  }

  // MARK: Objects, as the daemon sends them

  /// The Switch, `changed` and Entry examples and member lists of
  /// docs/protocol.md have the members a real switchd sends, in its order.
  @Test func protocolPageObjectsAreWhatTheDaemonSends() throws {
    let daemon = try DaemonFixture.shipped()
    let watcher = try DaemonClient.connect(to: daemon.socketPath, receiveTimeout: 30)
    let wifi = [JSONMember("key", .string("wifi"))]
    _ = try watcher.call(.watch, [JSONMember("keys", .array([.string("wifi")]))]).get()
    let switchObject = try daemon.call(.get, wifi)
    _ = try daemon.call(.toggle, wifi)
    let event = try watcher.nextNotification().params
    let entry = try #require(
      try daemon.call(.history, [JSONMember("limit", .int(1))])["entries"]?.arrayValue?.first)
    let page = Self.protocolPage

    let switchExample = try #require(page.jsonBlock(after: "### Switch"))
    #expect(switchExample.memberNames == switchObject.memberNames, "the Switch example")
    let table = try #require(page.markdownTable(headed: ["member", "type", "meaning"]))
    #expect(
      table.flatMap { codeSpans(in: $0[0]) }.sorted() == switchObject.memberNames.sorted(),
      "the Switch table")
    let tryIt = try #require(page.line(startingWith: #"{"jsonrpc":"2.0","id":1,"result":{"key""#))
    #expect(json(tryIt)["result"]?.memberNames == switchObject.memberNames, "Try it: get")

    let changed = try #require(page.jsonBlock(after: "### `changed`"))["params"]
    #expect(changed?.memberNames == event.memberNames, "the changed example")
    for state in ["state", "previous"] {
      #expect(changed?[state]?.memberNames == event[state]?.memberNames, "changed: \(state)")
    }
    let members = try #require(
      page.markdownTable(headed: ["member", "meaning"]) { rows in
        rows.contains { $0[0] == "`watch`" }
      })
    #expect(
      members.flatMap { codeSpans(in: $0[0]) }.sorted() == event.memberNames.sorted(),
      "the changed table")
    let statusTable = try #require(
      page.markdownTable(headed: ["member", "meaning"]) { rows in
        rows.contains { $0[0] == "`version`" }
      })
    #expect(
      statusTable.flatMap { codeSpans(in: $0[0]) }.sorted()
        == (try daemon.call(.status, [])).memberNames.sorted(), "the status table")
    let state = try #require(page.text(from: "### State", to: ", with the"))
    #expect(codeSpans(in: state) == event["state"]?.memberNames, "State")
    let entryList = try #require(page.text(from: "without `watch`:", to: ".\n"))
    #expect(codeSpans(in: entryList) == entry.memberNames, "Entry")
  }

  /// `"params": null` is not a request (JSON-RPC wants a structured value),
  /// and its sentence names only what switchd takes: it once said arrays were
  /// allowed, and an array is then InvalidParams. The page says both.
  @Test func paramsNullAndPositionalParamsAreRefusedAsDocumented() throws {
    func decode(_ line: String) -> Incoming {
      Array(line.utf8).withUnsafeBufferPointer { RequestDecoder.decode($0, maxDepth: 32) }
    }
    let null = decode(#"{"jsonrpc":"2.0","id":1,"method":"status","params":null}"#)
    guard case .single(.failure(let refused)) = null else {
      Issue.record("params null was accepted: \(null)")
      return
    }
    #expect(refused.error.code == .invalidRequest)
    #expect(refused.id == .number(JSONNumber(1)))
    let sentence = "\"params\" must be an object of named params, or left out"
    #expect(refused.error.message == "The message is not a JSON-RPC 2.0 request: \(sentence).")
    #expect(!refused.error.message.contains("array"))

    let positional = decode(#"{"jsonrpc":"2.0","id":1,"method":"status","params":[]}"#)
    guard case .single(.success(let request)) = positional else {
      Issue.record("params [] is not a request: \(positional)")
      return
    }
    guard case .failure(let invalid) = Call.decode(.status, params: request.params) else {
      Issue.record("params [] was accepted")
      return
    }
    #expect(invalid.code == .invalidParams)
    #expect(invalid.dataObject["param"] == .string("params"))

    let framing = try #require(Self.protocolPage.text(from: "**Requests.**", to: "\n\n"))
    let prose = framing.replacing("\n", with: " ")
    #expect(prose.contains(#"`"params": null`"#), "\(prose)")
    #expect(prose.contains("it is `InvalidRequest` (\(sentence))"), "\(prose)")
    #expect(prose.contains("Positional params (an array"), "\(prose)")
  }

  /// The causes a `changed` event names, and who may disable a switch, are
  /// SwitchCore's.
  @Test func protocolPageCausesAndHoldersAreTheCodes() throws {
    let events = try #require(
      Self.protocolPage.markdownTable(headed: ["member", "meaning"]) { rows in
        rows.contains { $0[0] == "`watch`" }
      })
    let cause = try #require(events.first { $0[0] == "`cause`" })
    #expect(Set(codeSpans(in: cause[1])) == Set(Cause.allCases.map(\.wireName)), "\(cause)")
    let members = try #require(
      Self.protocolPage.markdownTable(headed: ["member", "type", "meaning"]))
    let disabledBy = try #require(members.first { $0[0] == "`disabledBy`" })
    #expect(
      codeSpans(in: disabledBy[1]).map { $0.filter { $0 != "\"" } }.sorted()
        == Holder.allCases.map(\.wireName).sorted(), "\(disabledBy)")
  }

  // MARK: switchctl's commands

  @Test func switchctlManPageCommandsAndOptionsAreTheCommandTable() throws {
    let section = try #require(Self.switchctlPage.scdSection("COMMANDS"))
    var options: [String: [String]] = [:]
    for item in ScdList(section).items {
      for command in commandsOfTerm(item.term) {
        #expect(options[command] == nil, "switchctl(1) lists \(command) twice")
        options[command] = boldWords(in: item.term).filter { $0.hasPrefix("--") }.sorted()
      }
    }
    var table: [String: [String]] = [:]
    for spec in Commands.all { table[spec.name] = spec.options.map(\.name).sorted() }
    #expect(options == table)
  }

  @Test func protocolPageCommandsAreTheCommandTable() throws {
    let table = try #require(
      Self.protocolPage.markdownTable(headed: ["command", "method", "prints"]))
    let commands = table.flatMap { codeSpans(in: $0[0]) }.map { String($0.prefix { $0 != " " }) }
    #expect(commands.sorted() == Commands.all.map(\.name).sorted())
  }

  /// The commands that refuse `--user`, as both pages list them, are the
  /// table's.
  @Test func theCommandsThatRefuseUserAreTheTablesInBothPages() throws {
    let refusing = Commands.all.filter { $0.user == .refused }.map(\.name).sorted()
    let options = try #require(Self.switchctlPage.scdSection("OPTIONS"))
    let user = try #require(ScdList(options).items.first { $0.term.hasPrefix("*--user*") })
    let manSentence = try #require(sentences(user.text).first { $0.contains("refuse") })
    #expect(boldWords(in: manSentence).sorted() == refusing, "switchctl(1): \(manSentence)")

    let paragraph = try #require(
      Self.protocolPage.text(from: "`--user USER` (a global option", to: "\n\n"))
    let sentence = try #require(sentences(paragraph).first { $0.contains("refuse") })
    #expect(codeSpans(in: sentence).sorted() == refusing, "docs/protocol.md: \(sentence)")
  }

  /// `*set* _KEY_ *on*|*off*, *on* _KEY_` names set and on: the bold word
  /// that starts the term or follows ", ".
  func commandsOfTerm(_ term: String) -> [String] {
    term.split(separator: ", ").compactMap { part in
      guard part.hasPrefix("*") else { return nil }
      return boldWords(in: String(part)).first
    }
  }
}

// MARK: Reading the pages

/// A page of the repository, found from this file's path.
struct DocumentText {
  var path: String
  var text: String

  static func read(_ relativePath: String) -> DocumentText {
    var root = #filePath
    for _ in 0..<3 { root = String(root[..<root.lastIndex(of: "/")!]) }
    let path = root + "/" + relativePath
    return DocumentText(path: path, text: (try? readWholeFile(path)) ?? "")
  }

  /// The lines of an scdoc section (`# NAME` up to the next `# `).
  func scdSection(_ name: String) -> [Substring]? {
    let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
    guard let start = lines.firstIndex(of: Substring("# " + name)) else { return nil }
    let rest = lines[(start + 1)...]
    return Array(rest.prefix { !$0.hasPrefix("# ") })
  }

  /// The body rows (cells trimmed) of the one Markdown table whose header is
  /// `header` (and whose rows `which` picks); nil when there is none or more
  /// than one.
  func markdownTable(
    headed header: [String], which: ([[String]]) -> Bool = { _ in true }
  ) -> [[String]]? {
    var tables: [[[String]]] = []
    var current: [[String]] = []
    for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
      if line.hasPrefix("|") {
        current.append(markdownCells(line))
      } else if !current.isEmpty {
        tables.append(current)
        current = []
      }
    }
    if !current.isEmpty { tables.append(current) }
    let matching = tables.filter { $0.first == header && which(Array($0.dropFirst(2))) }
    guard matching.count == 1 else { return nil }
    // The header, then the |---| line.
    return Array(matching[0].dropFirst(2))
  }

  /// The first ```json block after the line `heading`, parsed.
  func jsonBlock(after heading: String) -> JSONValue? {
    guard let rest = text(from: "\n" + heading + "\n", to: "\n## "),
      let block = DocumentText(path: path, text: rest).text(from: "```json\n", to: "```")
    else { return nil }
    return try? JSONParser.parse(block, maxDepth: 64)
  }

  /// The first line that starts with `prefix`.
  func line(startingWith prefix: String) -> String? {
    text.split(separator: "\n").first { $0.hasPrefix(prefix) }.map(String.init)
  }

  /// The text after the first `start`, up to `end` (not included).
  func text(from start: String, to end: String) -> String? {
    guard let head = text.firstRange(of: start) else { return nil }
    let rest = text[head.upperBound...]
    return String(rest[..<(rest.firstRange(of: end)?.lowerBound ?? rest.endIndex)])
  }
}

/// An scdoc list of terms, each followed by its tab-indented text.
struct ScdList {
  var items: [(term: String, text: String)] = []

  init(_ lines: [Substring]) {
    for line in lines {
      if line.hasPrefix("\t"), !items.isEmpty {
        items[items.count - 1].text +=
          (items[items.count - 1].text.isEmpty ? "" : " ")
          + line.dropFirst()
      } else if line.hasPrefix("*") {
        items.append((String(line), ""))
      }
    }
  }
}

/// `| a | b\|c |` → ["a", "b|c"].
func markdownCells(_ line: Substring) -> [String] {
  var cells: [String] = []
  var cell = ""
  var escaped = false
  for character in line.dropFirst() {
    if escaped {
      cell.append(character)
      escaped = false
    } else if character == "\\" {
      escaped = true
    } else if character == "|" {
      cells.append(cell.trimmingSpaces)
      cell = ""
    } else {
      cell.append(character)
    }
  }
  return cells
}

/// The words of a text: runs of letters.
func words(in text: String) -> [String] {
  text.split { !$0.isLetter }.map(String.init)
}

/// The contents of each `code span`.
func codeSpans(in text: String) -> [String] {
  let parts = text.split(separator: "`", omittingEmptySubsequences: false)
  return stride(from: 1, to: parts.count, by: 2).map { String(parts[$0]) }
}

/// The words set in scdoc bold: `*lock*`, `*--reason*` (not `\*`).
func boldWords(in text: String) -> [String] {
  let parts = text.replacing("\\*", with: "").split(
    separator: "*", omittingEmptySubsequences: false)
  return stride(from: 1, to: parts.count, by: 2).map { String(parts[$0]) }
}

/// Sentences: split after a full stop and a space or line end (good
/// enough for the pages' prose).
func sentences(_ text: String) -> [String] {
  text.replacing("\n", with: " ").split(separator: ". ").map(String.init)
}

extension JSONValue {
  /// An object's member names, in order; empty for anything else.
  var memberNames: [String] { objectMembers?.map(\.name) ?? [] }
}

extension String {
  var trimmingSpaces: String {
    String(drop { $0 == " " }.reversed().drop { $0 == " " }.reversed())
  }
  /// "`get`" → "get".
  var trimmingCode: String { codeSpans(in: self).first ?? self }
  /// "*8*" → "8".
  var trimmingBold: String { boldWords(in: self).first ?? self }
}
