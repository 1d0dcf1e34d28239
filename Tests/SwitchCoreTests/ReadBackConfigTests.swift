import Testing

@testable import SwitchCore

private let file = "switches.d/10.conf"

private func build(_ text: String) -> (catalog: Catalog?, diagnostics: [String]) {
  let (catalog, diagnostics) = CatalogBuilder.build(
    ConfigSources(daemonConf: nil, switchFiles: [(name: file, text: text)], policyFiles: []))
  return (catalog, diagnostics.map(\.description))
}

/// A `[radio]` with a label and an apply command (lines 1–3), then `lines` from line 4.
private func radio(_ lines: String...) -> String {
  (["[radio]", "Label=Radio", "ExecApply=/bin/apply"] + lines).joined(separator: "\n")
}

struct ReadBackConfigTests {
  @Test func everySettingIsRead() throws {
    let (catalog, diagnostics) = build(
      radio(
        "ExecCheck=/usr/libexec/check \"the radio\"", "ExecWatch=/usr/libexec/watch radio",
        "CheckIntervalSec=2.5", "OnDrift=reassert", "DriftLimit=3"))
    #expect(diagnostics == [])
    #expect(
      try #require(catalog).switches["radio"]?.readBack
        == ReadBack(
          check: ["/usr/libexec/check", "the radio"], watch: ["/usr/libexec/watch", "radio"],
          checkIntervalMilliseconds: 2500, onDrift: .reassert, driftLimit: 3))
  }

  @Test func theDefaultsAreAdoptFiveAndNoInterval() throws {
    let (catalog, diagnostics) = build(radio("ExecWatch=/bin/watch"))
    #expect(diagnostics == [])
    let readBack = try #require(catalog?.switches["radio"]?.readBack)
    #expect(readBack == ReadBack(watch: ["/bin/watch"]))
    #expect(readBack.onDrift == .adopt && readBack.driftLimit == 5)
    #expect(readBack.checkIntervalMilliseconds == 0)
  }

  @Test func aSwitchThatReadsNothingBackHasNoReadBack() throws {
    let (catalog, diagnostics) = build(radio())
    #expect(diagnostics == [])
    #expect(try #require(catalog).switches["radio"]?.readBack == nil)
  }

  @Test(arguments: ["0", "0.0", "0.000"])
  func aZeroIntervalMeansOnlyAfterApplies(text: String) throws {
    let (catalog, diagnostics) = build(radio("ExecCheck=/bin/check", "CheckIntervalSec=\(text)"))
    #expect(diagnostics == [])
    #expect(catalog?.switches["radio"]?.readBack?.checkIntervalMilliseconds == 0)
  }

  @Test(arguments: [
    ("ExecCheck=", "ExecCheck= is empty: name the program that reads the state"),
    ("ExecWatch=", "ExecWatch= is empty: name the program that follows the state"),
    (
      "ExecCheck=bin/check",
      "ExecCheck=bin/check: the program bin/check is not an absolute "
        + "path: it must start with '/'"
    ),
    ("ExecWatch=/bin/watch \"radio", "ExecWatch=/bin/watch \"radio has an unclosed double quote"),
    (
      "CheckIntervalSec=-1",
      "CheckIntervalSec=-1 is not a number of seconds: 0 (only after "
        + "each apply) or up to 86400, like 30 or 0.5"
    ),
    (
      "CheckIntervalSec=90000",
      "CheckIntervalSec=90000 is not a number of seconds: 0 (only "
        + "after each apply) or up to 86400, like 30 or 0.5"
    ),
    ("OnDrift=ignore", "OnDrift=ignore is not adopt or reassert"),
    (
      "DriftLimit=0",
      "DriftLimit=0 is not a whole number from 1 to 1000: how many "
        + "re-applications within 60 s are made"
    ),
    (
      "DriftLimit=five",
      "DriftLimit=five is not a whole number from 1 to 1000: how many "
        + "re-applications within 60 s are made"
    ),
  ])
  func badValuesAreErrorsAtTheirLine(line: String, message: String) {
    // A program on line 4 that the bad line does not repeat, so only the bad line is wrong.
    let program = line.hasPrefix("ExecCheck") ? "ExecWatch=/bin/watch" : "ExecCheck=/bin/check"
    let (catalog, diagnostics) = build(radio(program, line))
    #expect(catalog == nil)
    #expect(diagnostics == ["\(file):5: \(message)"])
  }

  @Test func readingBackNeedsAnApplyCommand() {
    let (catalog, diagnostics) = build(
      "[radio]\nLabel=Radio\nExecCheck=/bin/check\nExecWatch=/bin/watch")
    #expect(catalog == nil)
    #expect(
      diagnostics == [
        "\(file):3: ExecCheck= of switch radio needs ExecApply=: switchd reads back only what "
          + "it applies",
        "\(file):4: ExecWatch= of switch radio needs ExecApply=: switchd reads back only what "
          + "it applies",
      ])
  }

  @Test func aUserScopeSwitchCannotReadBack() {
    let (catalog, diagnostics) = build("[mail]\nLabel=Mail\nScope=user\nExecWatch=/bin/watch")
    #expect(catalog == nil)
    #expect(
      diagnostics == [
        "\(file):4: ExecWatch= of switch mail needs ExecApply=: switchd reads back only what "
          + "it applies"
      ])
  }

  @Test func driftSettingsWithoutAProgramAreWarnings() throws {
    let (catalog, diagnostics) = build(
      radio("OnDrift=reassert", "DriftLimit=2", "CheckIntervalSec=30"))
    #expect(try #require(catalog).switches["radio"]?.readBack == nil)
    #expect(
      diagnostics == [
        "\(file):4: OnDrift= has no effect without ExecCheck= or ExecWatch=",
        "\(file):5: DriftLimit= has no effect without ExecCheck= or ExecWatch=",
        "\(file):6: CheckIntervalSec= has no effect without ExecCheck=",
      ])
  }

  @Test func anIntervalWithOnlyAWatchIsAWarning() throws {
    let (catalog, diagnostics) = build(radio("ExecWatch=/bin/watch", "CheckIntervalSec=30"))
    #expect(catalog?.switches["radio"]?.readBack?.watch == ["/bin/watch"])
    #expect(diagnostics == ["\(file):5: CheckIntervalSec= has no effect without ExecCheck="])
  }
}
