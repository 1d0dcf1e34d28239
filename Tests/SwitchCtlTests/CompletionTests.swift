import Glibc
import SwitchTestSupport
import Testing

/// The bash completion (completion/switchctl.bash), run by bash as it runs
/// it on TAB: the words of a line in COMP_WORDS, what it offers read from
/// COMPREPLY. Keys come from a switches.d of the test's (no daemon: there is
/// no switchctl on the PATH it is given).
@Suite struct CompletionTests {
  static let script: String = {
    var path = #filePath
    for _ in 0..<3 { path = String(path[..<path.lastIndex(of: "/")!]) }
    return path + "/completion/switchctl.bash"
  }()

  /// What the completion offers for each line (its words, the last the
  /// one being completed), one line of output each, sorted.
  static func offered(_ lines: [[String]]) throws -> [String] {
    let directory = try makeTemporaryDirectory()
    defer { removeTree(directory) }
    try #require(mkdir(directory + "/bin", 0o755) == 0)
    try #require(mkdir(directory + "/switches.d", 0o755) == 0)
    // Only the tools the script runs: never an installed switchctl.
    for tool in ["grep", "sed", "sort", "timeout", "tr"] {
      let found = ["/usr/bin/", "/bin/"].map { $0 + tool }.first { access($0, X_OK) == 0 }
      try #require(symlink(try #require(found), directory + "/bin/" + tool) == 0)
    }
    try writeWholeFile(directory + "/switches.d/a.conf", "[wifi]\nLabel=W\n[bluetooth]\nLabel=B\n")
    var text = """
      source "$1"
      offer() {
        COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); COMPREPLY=(); _switchctl
        printf '%s\\n' "${COMPREPLY[*]}" | tr ' ' '\\n' | sort | tr '\\n' ' '; echo
      }

      """
    for words in lines {
      text += "offer " + words.map { "'" + $0 + "'" }.joined(separator: " ") + "\n"
    }
    try writeWholeFile(directory + "/t.sh", text)
    let run = runProcess([
      "/usr/bin/env", "-i", "PATH=\(directory)/bin", "SWITCHCTL_COMPLETION_CONFDIR=\(directory)",
      "/bin/bash", directory + "/t.sh", script,
    ])
    #expect(run.status == 0, "\(run.stderr)")
    return run.stdout.split(separator: "\n", omittingEmptySubsequences: false).dropLast().map {
      $0.split(separator: " ").joined(separator: " ")
    }
  }

  @Test func optionsWithEqualsAreSkippedWithTheirValues() throws {
    let offered = try Self.offered([
      // `--limit=5` reaches the script as `--limit`, `=`, `5`.
      ["switchctl", "history", "--limit", "=", "5", ""],
      ["switchctl", "--user", "=", "root", "g"],
      ["switchctl", "history", "--limit", "5", ""],
      ["switchctl", "--checked", "=", ""],
    ])
    #expect(offered == ["bluetooth wifi", "get", "bluetooth wifi", "off on"])
  }

  @Test func theOptionsEveryCommandTakesAreOfferedAfterItToo() throws {
    let offered = try Self.offered([
      ["switchctl", "get", "wifi", "--j"],
      ["switchctl", "status", "--j"],
      ["switchctl", "backup", "--j"],
      ["switchctl", "--no"],
      ["switchctl", "history", "--l"],
    ])
    #expect(offered == ["--json", "--json", "--json", "--no-ask-password", "--limit"])
  }
}
