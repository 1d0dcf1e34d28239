import Glibc
import SwitchTestSupport
import Testing

/// docs/semantics.md's "Where each rule lives" against the tree: every rule
/// has a row, and every function, type, file and test a row names exists
/// (a rename that forgets the map fails here, as DocumentedTablesTests does
/// for the tables the program prints).
@Suite struct RuleMapTests {
  static let header = ["rule", "in a few words", "decided in", "held by"]

  @Test func everyRuleHasARowWithAPlaceAndATest() throws {
    let rows = try #require(
      DocumentText.read("docs/semantics.md").markdownTable(headed: Self.header),
      "docs/semantics.md has one table headed \(Self.header)")
    let numbered = Set(rows.compactMap { Int($0[0]) })
    #expect(numbered == Set(1...22), "rows for rules 1 to 22, found \(numbered.sorted())")
    for row in rows {
      #expect(!Self.names(in: row[2]).isEmpty, "rule \(row[0]) names where it is decided")
      #expect(!Self.names(in: row[3]).isEmpty, "rule \(row[0]) names a test")
    }
  }

  @Test func everyNameInTheMapExists() throws {
    let rows = try #require(
      DocumentText.read("docs/semantics.md").markdownTable(headed: Self.header))
    let sources = try SourceTree(folder: "Sources")
    let tests = try SourceTree(folder: "Tests")
    // Collected first: an #expect on the tree itself would print all of it.
    var missing: [String] = []
    for row in rows {
      for name in Self.names(in: row[2]) where !sources.has(name) {
        missing.append("rule \(row[0]): `\(name)` is not in Sources/")
      }
      for name in Self.names(in: row[3]) where !tests.has(name) {
        missing.append("rule \(row[0]): `\(name)` is not in Tests/")
      }
    }
    #expect(missing.isEmpty, "\(missing.joined(separator: "\n"))")
  }

  @Test func aMissingNameIsFound() throws {
    let sources = try SourceTree(folder: "Sources")
    #expect(sources.has("Rules.nextState"))
    #expect(!sources.has("Rules.nextStates"))
    #expect(!sources.has("Rule.nextState"))
    // A member of that name elsewhere is not the type's.
    #expect(sources.has("Refusal.message"))
    #expect(sources.has("Rules.conflict"))
    #expect(!sources.has("Drift.conflict"))
    #expect(sources.has("Writer/Writer+Group.swift"))
    #expect(!sources.has("Writer/Writer+Groups.swift"))
    #expect(sources.has("Rules.swift"))
    #expect(!sources.has("Ruless.swift"))
    #expect(sources.has("CatalogBuilder.SchemaReader.read"))
    #expect(sources.has("ApplyPool"))
    #expect(!sources.has("ApplyPools"))
  }

  /// The code names in a cell: what is between backticks.
  static func names(in cell: String) -> [String] {
    cell.split(separator: "`", omittingEmptySubsequences: false).enumerated()
      .filter { $0.offset % 2 == 1 }.map { String($0.element) }
  }
}

/// The Swift files under a folder of the repository: their paths, and the
/// names each file declares (read once; a look-up is then a set's).
struct SourceTree {
  var paths: [String] = []
  /// The files (by number) that declare or extend each type.
  var typeFiles: [String: Set<Int>] = [:]
  /// The files that declare each function, property or constant.
  var memberFiles: [String: Set<Int>] = [:]
  private var files = 0

  init(folder: String) throws {
    let root = DocumentText.read(folder).path
    try walk(root, relative: folder)
  }

  private mutating func walk(_ path: String, relative: String) throws {
    for name in try directoryEntries(path).sorted() {
      let child = path + "/" + name
      var status = stat()
      guard lstat(child, &status) == 0 else { continue }
      if status.st_mode & S_IFMT == S_IFDIR {
        paths.append(relative + "/" + name + "/")
        try walk(child, relative: relative + "/" + name)
      } else if name.hasSuffix(".swift") {
        paths.append(relative + "/" + name)
        learn(try readWholeFile(child), file: files)
        files += 1
      }
    }
  }

  /// The identifier after each declaring word: a type's or a member's name.
  private mutating func learn(_ text: String, file: Int) {
    var previous = ""
    var word = ""
    func take() {
      guard !word.isEmpty else { return }
      switch previous {
      case "struct", "enum", "class", "extension", "protocol":
        typeFiles[word, default: []].insert(file)
      case "func", "var", "let": memberFiles[word, default: []].insert(file)
      default: break
      }
      previous = word
      word = ""
    }
    for character in text {
      if character.isLetter || character.isNumber || character == "_" {
        word.append(character)
      } else {
        take()
      }
    }
    take()
  }

  /// Whether the tree has `name`: `Type.member` (a member of that name in a
  /// file that declares or extends the type; `Outer.Type.member` alike),
  /// `…member` (a test of a suite named before it), `Type` or a folder, or
  /// a path's end (`Writer/Writer+Group.swift`, `Rules.swift`). Anything
  /// else (a setting such as `synchronous=FULL`, an enum case, an
  /// initializer's signature) is taken as it is.
  func has(_ name: String) -> Bool {
    if name.contains("/") || name.hasSuffix(".swift") {
      return paths.contains { $0.hasSuffix("/" + name) }
    }
    if name.contains("=") || name.contains("(") || name.hasPrefix(".") { return true }
    let parts = name.replacing("…", with: "").split(separator: ".").map(String.init)
    switch parts.count {
    case 0: return false
    case 1 where name.hasPrefix("…"): return memberFiles[parts[0]] != nil
    case 1:
      return typeFiles[parts[0]] != nil || paths.contains { $0.hasSuffix("/" + parts[0] + "/") }
    default:
      let type = typeFiles[parts[parts.count - 2], default: []]
      return !type.isDisjoint(with: memberFiles[parts[parts.count - 1], default: []])
    }
  }
}
