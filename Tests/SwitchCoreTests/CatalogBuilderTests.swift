import SeededRandom
import Testing

@testable import SwitchCore

private func build(
  daemon: String? = nil, switches: [(String, String)] = [], policies: [(String, String)] = []
) -> (catalog: Catalog?, diagnostics: [ConfigDiagnostic]) {
  CatalogBuilder.build(
    ConfigSources(
      daemonConf: daemon,
      switchFiles: switches.map { (name: $0.0, text: $0.1) },
      policyFiles: policies.map { (name: $0.0, text: $0.1) }))
}

private func settings(_ change: (inout DaemonSettings) -> Void) -> DaemonSettings {
  var settings = DaemonSettings()
  change(&settings)
  return settings
}

// `Testing` has a `SourceLocation` too: name ours in full.
private func at(_ file: String, _ line: Int) -> SwitchCore.SourceLocation {
  SwitchCore.SourceLocation(file: file, line: line)
}

private let base = "switches.d/10-base.conf"
private let corp = "policy.d/50-corp.conf"
private let local = "policy.d/90-local.conf"

/// Declares `keys`, each with a label, one section per two lines from line 1.
private func schema(_ keys: String...) -> (String, String) {
  (base, keys.map { "[\($0)]\nLabel=\($0)" }.joined(separator: "\n"))
}

/// 107 bytes: what fits in `sun_path` with its terminating NUL.
private let longestSocketPath = "/" + String(repeating: "s", count: 106)

/// A valid `[Daemon]` line and the settings it gives.
private let goodDaemonLines: [(String, DaemonSettings)] = [
  ("Socket=/tmp/s.sock", settings { $0.socket = "/tmp/s.sock" }),
  ("Socket=", settings { $0.socket = nil }),
  ("Socket=\(longestSocketPath)", settings { $0.socket = longestSocketPath }),
  ("VarlinkSocket=/tmp/v", settings { $0.varlinkSocket = "/tmp/v" }),
  ("VarlinkSocket=", settings { $0.varlinkSocket = "" }),
  ("Database=/var/db/x.db", settings { $0.database = "/var/db/x.db" }),
  ("AdminGroup=wheel", settings { $0.adminGroup = "wheel" }),
  ("AdminGroup=", settings { $0.adminGroup = nil }),
  ("Writers=staff", settings { $0.writers = "staff" }),
  ("Writers=", settings { $0.writers = nil }),
  ("SocketMode=0660", settings { $0.socketMode = 0o660 }),
  ("SocketMode=600", settings { $0.socketMode = 0o600 }),
  ("SocketMode=0777", settings { $0.socketMode = 0o777 }),
  ("SocketMode=0", settings { $0.socketMode = 0 }),
  ("MaxFrameBytes=1024", settings { $0.maxFrameBytes = 1024 }),
  ("MaxFrameBytes=67108864", settings { $0.maxFrameBytes = 67_108_864 }),
  ("MaxConnections=1", settings { $0.maxConnections = 1 }),
  ("MaxConnections=1000000", settings { $0.maxConnections = 1_000_000 }),
  ("MaxConnectionsPerUser=1", settings { $0.maxConnectionsPerUser = 1 }),
  ("MaxConnectionsPerUser=65536", settings { $0.maxConnectionsPerUser = 65_536 }),
  ("MaxQueuedBytes=4096", settings { $0.maxQueuedBytes = 4096 }),
  ("MaxQueuedBytes=1073741824", settings { $0.maxQueuedBytes = 1_073_741_824 }),
  ("MaxWatchesPerConnection=1", settings { $0.maxWatchesPerConnection = 1 }),
  ("MaxWatchesPerConnection=10000", settings { $0.maxWatchesPerConnection = 10_000 }),
  ("MaxHistoryPage=1", settings { $0.maxHistoryPage = 1 }),
  ("MaxHistoryPage=1000", settings { $0.maxHistoryPage = 1000 }),
  ("MaxNestingDepth=2", settings { $0.maxNestingDepth = 2 }),
  ("MaxNestingDepth=512", settings { $0.maxNestingDepth = 512 }),
  ("HistoryRetention=1", settings { $0.historyRetention = 1 }),
  ("HistoryRetention=100000000", settings { $0.historyRetention = 100_000_000 }),
  ("HistoryRetention=007", settings { $0.historyRetention = 7 }),
  ("LogLevel=error", settings { $0.logLevel = .error }),
  ("LogLevel=warning", settings { $0.logLevel = .warning }),
  ("LogLevel=notice", settings { $0.logLevel = .notice }),
  ("LogLevel=info", settings { $0.logLevel = .info }),
  ("LogLevel=DEBUG", settings { $0.logLevel = .debug }),
  ("Authorization=builtin", settings { $0.authorization = .builtin }),
  ("Authorization=polkit", settings { $0.authorization = .polkit }),
]

private let daemonNamesAllowed =
  "allowed are Socket, Database, AdminGroup, Writers, SocketMode, MaxFrameBytes, "
  + "MaxConnections, MaxConnectionsPerUser, MaxQueuedBytes, MaxWatchesPerConnection, MaxHistoryPage, "
  + "MaxNestingDepth, HistoryRetention, LogLevel, VarlinkSocket, Authorization"
private let modeAllowed = "use octal digits from 0000 to 0777, like 0666 or 0660"
private let levelsAllowed = "use one of error, warning, notice, info, debug"

private func number(_ low: Int, _ high: Int) -> String {
  "it must be a whole number from \(low) to \(high)"
}

/// A bad `[Daemon]` line and the message it gives.
private let badDaemonLines: [(String, String)] = [
  ("Port=80", "unknown name Port in [Daemon]: \(daemonNamesAllowed)"),
  (
    "Authorization=pam",
    "Authorization=pam is not a way to authorize: use builtin (the table of docs/semantics.md)"
      + " or polkit (ask polkit for each write)"
  ),
  ("socket=/x", "unknown name socket in [Daemon]: \(daemonNamesAllowed)"),
  ("Socket=run/s.sock", "Socket=run/s.sock is not an absolute path: it must start with '/'"),
  ("VarlinkSocket=v", "VarlinkSocket=v is not an absolute path: it must start with '/'"),
  (
    "Socket=/\(String(repeating: "s", count: 107))",
    "Socket= is 108 bytes long: a Unix socket path is at most 107 bytes"
  ),
  ("Database=x.db", "Database=x.db is not an absolute path: it must start with '/'"),
  ("SocketMode=0778", "SocketMode=0778 is not a file mode: \(modeAllowed)"),
  ("SocketMode=01000", "SocketMode=01000 is not a file mode: \(modeAllowed)"),
  ("SocketMode=rw", "SocketMode=rw is not a file mode: \(modeAllowed)"),
  ("SocketMode=", "SocketMode= is not a file mode: \(modeAllowed)"),
  ("MaxFrameBytes=1023", "MaxFrameBytes=1023 is out of range: \(number(1024, 67_108_864))"),
  ("MaxFrameBytes=67108865", "MaxFrameBytes=67108865 is out of range: \(number(1024, 67_108_864))"),
  ("MaxFrameBytes=1M", "MaxFrameBytes=1M is not a number: \(number(1024, 67_108_864))"),
  ("MaxConnections=0", "MaxConnections=0 is out of range: \(number(1, 1_000_000))"),
  ("MaxConnections=1000001", "MaxConnections=1000001 is out of range: \(number(1, 1_000_000))"),
  ("MaxConnections=-5", "MaxConnections=-5 is not a number: \(number(1, 1_000_000))"),
  ("MaxConnectionsPerUser=0", "MaxConnectionsPerUser=0 is out of range: \(number(1, 65_536))"),
  (
    "MaxConnectionsPerUser=65537",
    "MaxConnectionsPerUser=65537 is out of range: \(number(1, 65_536))"
  ),
  ("MaxQueuedBytes=4095", "MaxQueuedBytes=4095 is out of range: \(number(4096, 1_073_741_824))"),
  (
    "MaxQueuedBytes=1073741825",
    "MaxQueuedBytes=1073741825 is out of range: \(number(4096, 1_073_741_824))"
  ),
  ("MaxWatchesPerConnection=0", "MaxWatchesPerConnection=0 is out of range: \(number(1, 10_000))"),
  (
    "MaxWatchesPerConnection=10001",
    "MaxWatchesPerConnection=10001 is out of range: \(number(1, 10_000))"
  ),
  ("MaxHistoryPage=0", "MaxHistoryPage=0 is out of range: \(number(1, 1000))"),
  ("MaxHistoryPage=1001", "MaxHistoryPage=1001 is out of range: \(number(1, 1000))"),
  ("MaxNestingDepth=1", "MaxNestingDepth=1 is out of range: \(number(2, 512))"),
  ("MaxNestingDepth=513", "MaxNestingDepth=513 is out of range: \(number(2, 512))"),
  ("HistoryRetention=0", "HistoryRetention=0 is out of range: \(number(1, 100_000_000))"),
  (
    "HistoryRetention=100000001",
    "HistoryRetention=100000001 is out of range: \(number(1, 100_000_000))"
  ),
  (
    "HistoryRetention=99999999999999999999999999",
    "HistoryRetention=99999999999999999999999999 is out of range: \(number(1, 100_000_000))"
  ),
  ("HistoryRetention=1_000", "HistoryRetention=1_000 is not a number: \(number(1, 100_000_000))"),
  ("HistoryRetention=+5", "HistoryRetention=+5 is not a number: \(number(1, 100_000_000))"),
  ("HistoryRetention=", "HistoryRetention= is not a number: \(number(1, 100_000_000))"),
  ("HistoryRetention=1e3", "HistoryRetention=1e3 is not a number: \(number(1, 100_000_000))"),
  ("LogLevel=verbose", "LogLevel=verbose is not a log level: \(levelsAllowed)"),
  ("LogLevel=", "LogLevel= is not a log level: \(levelsAllowed)"),
]

struct CatalogBuilderTests {
  @Test func theDocumentedExampleBuildsCleanly() throws {
    let daemon = """
      [Daemon]
      Socket=/run/switchd/switchd.sock
      Database=/var/lib/switchd/switches.db
      # Members may lock/unlock/disable/enable; uid 0 always may.
      AdminGroup=switchd-admin
      #Writers=
      SocketMode=0666
      MaxFrameBytes=1048576
      MaxConnections=4096
      MaxQueuedBytes=1048576
      HistoryRetention=100000
      """
    let switches = """
      [wifi]
      Label=Wi-Fi
      Description=Connect to wireless networks.
      Default=off
      CheckedIcon=wifi
      UncheckedIcon=wifi_off

      [email.marketing]
      Label=Marketing emails
      Description=Receive emails about new products.
      Default=on

      [bluetooth]
      Label=Bluetooth
      """
    let policy = """
      # 50-corp.conf, placed by the fleet's configuration management
      [bluetooth]
      ReadOnly=yes
      Checked=off
      Reason=Bluetooth is turned off by your organisation.

      [email.marketing]
      Disabled=yes
      Reason=Marketing email is not offered on managed devices.
      """
    let result = build(daemon: daemon, switches: [(base, switches)], policies: [(corp, policy)])
    #expect(result.diagnostics.isEmpty)
    let catalog = try #require(result.catalog)
    #expect(
      catalog.settings
        == settings {
          $0.socket = "/run/switchd/switchd.sock"
          $0.database = "/var/lib/switchd/switches.db"
        })
    #expect(catalog.sortedKeys == ["bluetooth", "email.marketing", "wifi"])
    #expect(
      catalog.switches["wifi"]
        == SwitchDefinition(
          key: "wifi", label: "Wi-Fi", description: "Connect to wireless networks.",
          defaultChecked: false, checkedIcon: "wifi", uncheckedIcon: "wifi_off",
          source: at(base, 1)))
    #expect(
      catalog.switches["email.marketing"]
        == SwitchDefinition(
          key: "email.marketing", label: "Marketing emails",
          description: "Receive emails about new products.", defaultChecked: true, order: 1,
          source: at(base, 8)))
    #expect(
      catalog.switches["bluetooth"]
        == SwitchDefinition(
          key: "bluetooth", label: "Bluetooth", defaultChecked: false, order: 2,
          source: at(base, 13)))
    #expect(
      catalog.policies["bluetooth"]
        == PolicyRule(
          key: "bluetooth", readOnly: true, checked: false,
          reason: "Bluetooth is turned off by your organisation.", readOnlySource: at(corp, 2)))
    #expect(
      catalog.policies["email.marketing"]
        == PolicyRule(
          key: "email.marketing", disabled: true,
          reason: "Marketing email is not offered on managed devices.",
          disabledSource: at(corp, 7)))
    #expect(catalog.policyCount == 2)
    #expect(catalog.warnings.isEmpty)
  }

  @Test func anEmptyDirectoryIsAValidEmptyConfiguration() throws {
    let result = build()
    #expect(result.diagnostics.isEmpty)
    let catalog = try #require(result.catalog)
    #expect(catalog.settings == DaemonSettings())
    #expect(catalog.switches.isEmpty)
    #expect(catalog.policies.isEmpty)
  }

  @Test func errorsPreventACatalogButAllAreReported() {
    let result = build(
      daemon: "[Daemon]\nMaxConnections=0",
      switches: [(base, "[wifi]\nLabel=Wi-Fi\nColour=blue")],
      policies: [(corp, "[wifi]\nReadOnly=maybe")])
    #expect(result.catalog == nil)
    #expect(
      result.diagnostics.map(\.description) == [
        "switchd.conf:2: MaxConnections=0 is out of range: it must be a whole number from 1 to "
          + "1000000",
        "switches.d/10-base.conf:3: unknown name Colour in [wifi]: allowed are Label, "
          + "Description, Default, CheckedIcon, UncheckedIcon, Group, Scope, Requires, Conflicts, "
          + "ExecApply, ApplyTimeoutSec, ExecCheck, ExecWatch, CheckIntervalSec, OnDrift, "
          + "DriftLimit",
        "policy.d/50-corp.conf:2: ReadOnly=maybe is not a boolean: use on/off, yes/no, "
          + "true/false or 1/0",
      ])
  }

  @Test func keyFileSyntaxErrorsReachTheBuildDiagnostics() {
    let result = build(
      daemon: "Socket=/x", switches: [(base, "[wifi\nLabel=Wi-Fi")],
      policies: [(corp, "[wifi]\nReadOnly")])
    #expect(result.catalog == nil)
    #expect(
      result.diagnostics.map(\.description) == [
        "switchd.conf:1: Socket= is outside any section: put it under a [section] header",
        "switches.d/10-base.conf:1: section header has no closing ']'",
        "switches.d/10-base.conf:2: Label= is outside any section: put it under a [section] "
          + "header",
        // The broken header declared nothing, so the policy's key is undeclared.
        "policy.d/50-corp.conf:1: policy for undeclared switch wifi: ignored on this machine",
        "policy.d/50-corp.conf:2: expected Name=value, a [section] header or a comment, "
          + "found \"ReadOnly\"",
      ])
  }

  @Test func diagnosticsComeInFileOrderEvenWhenFoundLater() {
    // The Checked= warning can only be judged after every policy file is
    // merged, yet it belongs before the error in the later file.
    let result = build(
      switches: [schema("wifi", "sync"), ("switches.d/20-more.conf", "[gps]")],
      policies: [(corp, "[wifi]\nChecked=on"), (local, "[sync]\nBogus=1")])
    #expect(
      result.diagnostics.map(\.description) == [
        "switches.d/20-more.conf:1: switch gps has no Label: always pair a switch with a label",
        "policy.d/50-corp.conf:2: Checked= has no effect without ReadOnly=yes",
        "policy.d/90-local.conf:2: unknown name Bogus in [sync]: allowed are ReadOnly, "
          + "Disabled, Checked, Reason, Schedule",
      ])
  }

  @Test(arguments: [
    ("on", true), ("off", false), ("yes", true), ("no", false), ("true", true),
    ("false", false), ("1", true), ("0", false), ("ON", true), ("Off", false),
    ("YES", true), ("No", false), ("True", true), ("FALSE", false),
  ])
  func booleanWordsAcceptTheDocumentedWords(word: String, value: Bool) {
    #expect(BooleanWord.parse(word) == value)
  }

  @Test(arguments: ["", "y", "n", "2", "-1", "enabled", "onn", " on", "on ", "t", "nope", "01"])
  func booleanWordsRejectEverythingElse(word: String) {
    #expect(BooleanWord.parse(word) == nil)
  }
}

struct DaemonConfTests {
  @Test func absentFileMeansDefaults() throws {
    let catalog = try #require(build(daemon: nil).catalog)
    #expect(catalog.settings == DaemonSettings())
    #expect(catalog.settings.adminGroup == "switchd-admin")
  }

  /// One `[Daemon]` line and the settings it gives.
  @Test(arguments: goodDaemonLines)
  func eachNameSetsItsField(line: String, expected: DaemonSettings) throws {
    let result = build(daemon: "[Daemon]\n\(line)")
    #expect(result.diagnostics.isEmpty)
    #expect(try #require(result.catalog).settings == expected)
  }

  /// One bad `[Daemon]` line (line 2) and its message.
  @Test(arguments: badDaemonLines)
  func badValuesAreErrorsThatSayWhatIsAllowed(line: String, message: String) {
    let result = build(daemon: "[Daemon]\n\(line)")
    #expect(result.catalog == nil)
    #expect(result.diagnostics.map(\.description) == ["switchd.conf:2: \(message)"])
    #expect(result.diagnostics.first?.severity == .error)
  }

  @Test func otherSectionsAreErrorsAndTheirEntriesAreNotRead() {
    let result = build(daemon: "[Daemon]\nMaxHistoryPage=5\n[daemon]\nPort=1\n[Server]")
    #expect(result.catalog == nil)
    #expect(
      result.diagnostics.map(\.description) == [
        "switchd.conf:3: unknown section [daemon]: switchd.conf has only [Daemon]",
        "switchd.conf:5: unknown section [Server]: switchd.conf has only [Daemon]",
      ])
  }

  @Test func aRepeatedNameOrSectionIsAnErrorNotASilentOverride() {
    let text =
      "[Daemon]\nMaxHistoryPage=5\nLogLevel=debug\nMaxHistoryPage=7\n[Daemon]\nSocketMode=0600"
    let result = build(daemon: text)
    #expect(result.catalog == nil)
    #expect(
      result.diagnostics.map(\.description) == [
        "switchd.conf:4: MaxHistoryPage= is set twice in [Daemon] (first at switchd.conf:2): "
          + "keep one",
        "switchd.conf:5: section [Daemon] appears twice in this file (first at switchd.conf:1): "
          + "write each section once",
      ])
  }

  @Test func anEmptyFileMeansDefaults() throws {
    let catalog = try #require(build(daemon: "# nothing to change\n").catalog)
    #expect(catalog.settings == DaemonSettings())
  }
}

struct SchemaTests {
  @Test func absentDefaultIsOffWithoutAWarning() throws {
    let result = build(switches: [(base, "[wifi]\nLabel=Wi-Fi")])
    #expect(result.diagnostics.isEmpty)
    let wifi = try #require(result.catalog?.switches["wifi"])
    #expect(wifi.defaultChecked == false)
    #expect(wifi.description == "")
    #expect(wifi.checkedIcon == "")
    #expect(wifi.uncheckedIcon == "")
  }

  @Test func groupAndOrderComeFromTheSchema() throws {
    let later = "switches.d/20-more.conf"
    let result = build(switches: [
      (base, "[wifi]\nLabel=Wi-Fi\nGroup=Connectivity\n[airplane-mode]\nLabel=Airplane mode"),
      (later, "[bluetooth]\nLabel=Bluetooth\nGroup=Connectivity"),
    ])
    let catalog = try #require(result.catalog)
    // Files in the order given (lexical), sections in file order; not by key.
    #expect(catalog.switches["wifi"]?.order == 0)
    #expect(catalog.switches["airplane-mode"]?.order == 1)
    #expect(catalog.switches["bluetooth"]?.order == 2)
    #expect(catalog.switches["wifi"]?.group == "Connectivity")
    #expect(catalog.switches["airplane-mode"]?.group == "")
  }

  @Test(arguments: [("on", true), ("off", false), ("YES", true), ("0", false)])
  func defaultTakesABoolean(word: String, value: Bool) throws {
    let result = build(switches: [(base, "[wifi]\nLabel=Wi-Fi\nDefault=\(word)")])
    #expect(try #require(result.catalog).switches["wifi"]?.defaultChecked == value)
  }

  @Test func aNameTwiceInOneSwitchIsAnErrorWithBothLines() {
    let text = "[wifi]\nLabel=Old\nDefault=on\nLabel=Wi-Fi\nDefault=off"
    let result = build(switches: [(base, text)])
    #expect(result.catalog == nil)
    #expect(
      result.diagnostics.map(\.description) == [
        "\(base):4: Label= is set twice in [wifi] (first at \(base):2): keep one",
        "\(base):5: Default= is set twice in [wifi] (first at \(base):3): keep one",
      ])
  }

  @Test(arguments: [
    (
      "[wifi]\nLabel=Wi-Fi\nDefault=maybe", 3,
      "Default=maybe is not a boolean: use on/off, yes/no, true/false or 1/0"
    ),
    (
      "[wifi]\nLabel=Wi-Fi\nDefault=", 3,
      "Default= is not a boolean: use on/off, yes/no, true/false or 1/0"
    ),
    (
      "[wifi]\nLabel=Wi-Fi\nlabel=x", 3,
      "unknown name label in [wifi]: allowed are Label, Description, Default, CheckedIcon, "
        + "UncheckedIcon, Group, Scope, Requires, Conflicts, ExecApply, ApplyTimeoutSec, "
        + "ExecCheck, ExecWatch, CheckIntervalSec, OnDrift, DriftLimit"
    ),
    (
      "[wifi]\nLabel=Wi-Fi\nScope=users", 3,
      "Scope=users of switch wifi is not system or user"
    ),
    (
      "[Wi-Fi]\nLabel=Wi-Fi", 1,
      "invalid switch key \"Wi-Fi\": a switch key starts with a lowercase letter a-z"
    ),
    (
      "[wi fi]\nLabel=Wi-Fi", 1,
      "invalid switch key \"wi fi\": a switch key holds only a-z, 0-9, '.' and '-'"
    ),
    (
      "[wifi.]\nLabel=Wi-Fi", 1,
      "invalid switch key \"wifi.\": a switch key does not end with '.' or '-'"
    ),
    (
      "[wifi]\nLabel=Wi-Fi\n[wifi]\nLabel=Wi-Fi again", 3,
      "switch wifi is declared twice (first at switches.d/10-base.conf:1): one switch, one "
        + "setting"
    ),
  ])
  func schemaErrors(text: String, line: Int, message: String) {
    let result = build(switches: [(base, text)])
    #expect(result.catalog == nil)
    #expect(result.diagnostics.map(\.description) == ["\(base):\(line): \(message)"])
  }

  @Test func aKeyDeclaredInTwoFilesNamesBothPlaces() {
    let result = build(switches: [
      (base, "# base\n[wifi]\nLabel=Wi-Fi"),
      ("switches.d/20-extra.conf", "[gps]\nLabel=Location\n\n[wifi]\nLabel=Wireless"),
    ])
    #expect(result.catalog == nil)
    #expect(
      result.diagnostics.map(\.description) == [
        "switches.d/20-extra.conf:4: switch wifi is declared twice "
          + "(first at switches.d/10-base.conf:2): one switch, one setting"
      ])
  }

  @Test func aThirdDeclarationStillNamesTheFirst() {
    let result = build(switches: [(base, "[a]\nLabel=A\n[a]\nLabel=A\n[a]\nLabel=A")])
    #expect(
      result.diagnostics.map(\.message) == [
        "switch a is declared twice (first at switches.d/10-base.conf:1): one switch, one setting",
        "switch a is declared twice (first at switches.d/10-base.conf:1): one switch, one setting",
      ])
    #expect(result.diagnostics.map(\.location.line) == [3, 5])
  }

  @Test(arguments: ["[wifi]\nDefault=on", "[wifi]\nLabel=\nDefault=on", "[wifi]\nLabel=   "])
  func aMissingOrEmptyLabelIsAWarningAtTheHeader(text: String) throws {
    let result = build(switches: [(base, text)])
    #expect(
      result.diagnostics.map(\.description) == [
        "switches.d/10-base.conf:1: switch wifi has no Label: always pair a switch with a label"
      ])
    #expect(result.diagnostics.first?.severity == .warning)
    let catalog = try #require(result.catalog)
    #expect(catalog.switches["wifi"]?.label == nil)
    #expect(catalog.warnings == result.diagnostics)
  }

  @Test func anActionLabelIsAWarningAtTheLabelLine() throws {
    let result = build(switches: [(base, "[wifi]\nDefault=on\nLabel=Turn on Wi-Fi")])
    #expect(
      result.diagnostics.map(\.description) == [
        "switches.d/10-base.conf:3: label \"Turn on Wi-Fi\" of switch wifi names an action or "
          + "a state: name the setting (\"Wi-Fi\", not \"Turn on Wi-Fi\")"
      ])
    #expect(result.diagnostics.first?.severity == .warning)
    #expect(try #require(result.catalog).switches["wifi"]?.label == "Turn on Wi-Fi")
  }

  @Test(arguments: [
    "Turn on Wi-Fi", "turn off sync", "TURN ON", "Turn  on  lights", "Turn off", "Enable",
    "Enable notifications", "DISABLE tracking", "Disable", "Switch on lights", "Switch Off",
    "Activate", "activate dark mode", "Deactivate", "Deactivate tracking", "On", "off", "ON",
    "Enable\tsync",
  ])
  func labelsThatNameAnActionOrAState(label: String) {
    #expect(CatalogBuilder.labelNamesActionOrState(label))
  }

  @Test(arguments: [
    "Wi-Fi", "Enabled features", "Disabled apps", "Online status", "Offline mode", "Turnover",
    "Turn signals", "Switch sounds", "Activation lock", "On-device processing", "On time",
    "Office", "Bluetooth", "Sync on battery", "Auto turn on", "",
  ])
  func labelsThatNameTheSetting(label: String) {
    #expect(!CatalogBuilder.labelNamesActionOrState(label))
  }
}

struct PolicyTests {
  @Test func aLaterFileOverridesNameByName() throws {
    let result = build(
      switches: [schema("bluetooth")],
      policies: [
        (corp, "[bluetooth]\nReadOnly=yes\nChecked=off\nReason=Corporate policy."),
        (local, "\n[bluetooth]\nReason=Lab machine: no radios."),
      ])
    #expect(result.diagnostics.isEmpty)
    #expect(
      try #require(result.catalog).policies["bluetooth"]
        == PolicyRule(
          key: "bluetooth", readOnly: true, checked: false, reason: "Lab machine: no radios.",
          readOnlySource: at(corp, 1)))
  }

  @Test func aLaterReadOnlyNoLiftsTheHoldAndItsSource() throws {
    let result = build(
      switches: [schema("bluetooth")],
      policies: [
        (corp, "[bluetooth]\nReadOnly=yes\nReason=Held."),
        (local, "[bluetooth]\nReadOnly=no"),
      ])
    #expect(result.diagnostics.isEmpty)
    let rule = try #require(result.catalog?.policies["bluetooth"])
    #expect(rule == PolicyRule(key: "bluetooth", reason: "Held."))
    #expect(rule.readOnlySource == nil)
  }

  @Test func aLaterReadOnlyYesMovesTheSource() throws {
    let result = build(
      switches: [schema("bluetooth")],
      policies: [(corp, "[bluetooth]\nReadOnly=yes"), (local, "# again\n[bluetooth]\nReadOnly=on")])
    let rule = try #require(result.catalog?.policies["bluetooth"])
    #expect(rule.readOnlySource == at(local, 2))
  }

  @Test func readOnlyAndDisabledEachKeepTheirOwnSource() throws {
    let result = build(
      switches: [schema("bluetooth")],
      policies: [
        (corp, "[bluetooth]\nReadOnly=yes\nReason=Held by corp."),
        (local, "\n\n[bluetooth]\nDisabled=yes"),
      ])
    #expect(result.diagnostics.isEmpty)
    #expect(
      try #require(result.catalog).policies["bluetooth"]
        == PolicyRule(
          key: "bluetooth", readOnly: true, disabled: true, reason: "Held by corp.",
          readOnlySource: at(corp, 1), disabledSource: at(local, 3)))
  }

  @Test func aLaterDisabledNoLiftsTheDisable() throws {
    let result = build(
      switches: [schema("sync")],
      policies: [(corp, "[sync]\nDisabled=yes"), (local, "[sync]\nDisabled=false")])
    #expect(
      try #require(result.catalog).policies["sync"] == PolicyRule(key: "sync", disabled: false))
  }

  @Test func theSameKeyOrNameTwiceInOneFileIsAnError() {
    let text = "[sync]\nReadOnly=yes\nReason=First.\nReason=Again.\n\n[sync]\nChecked=on"
    let result = build(switches: [schema("sync")], policies: [(corp, text)])
    #expect(result.catalog == nil)
    #expect(
      result.diagnostics.map(\.description) == [
        "\(corp):4: Reason= is set twice in [sync] (first at \(corp):3): keep one",
        "\(corp):6: section [sync] appears twice in this file (first at \(corp):1): "
          + "write each section once",
      ])
  }

  @Test func anEmptyReasonOrCheckedClearsTheEarlierOne() throws {
    let result = build(
      switches: [schema("sync")],
      policies: [
        (corp, "[sync]\nReadOnly=yes\nChecked=on\nReason=Held."),
        (local, "[sync]\nChecked=\nReason="),
      ])
    #expect(result.diagnostics.isEmpty)
    let rule = try #require(result.catalog?.policies["sync"])
    #expect(rule == PolicyRule(key: "sync", readOnly: true, readOnlySource: at(corp, 1)))
    #expect(!rule.fixesValue)
  }

  @Test func checkedWithReadOnlyFixesTheValue() throws {
    let result = build(
      switches: [schema("sync")], policies: [(corp, "[sync]\nChecked=on\nReadOnly=yes")])
    #expect(result.diagnostics.isEmpty)
    #expect(try #require(result.catalog?.policies["sync"]).fixesValue)
  }

  @Test func checkedWithoutReadOnlyIsAWarningAndHasNoEffect() throws {
    let result = build(
      switches: [schema("sync")], policies: [(corp, "[sync]\nDisabled=yes\nChecked=on")])
    #expect(
      result.diagnostics.map(\.description) == [
        "policy.d/50-corp.conf:3: Checked= has no effect without ReadOnly=yes"
      ])
    #expect(result.diagnostics.first?.severity == .warning)
    let rule = try #require(result.catalog?.policies["sync"])
    #expect(rule.checked == true)
    #expect(!rule.fixesValue)
  }

  @Test func checkedLeftBehindByALiftedReadOnlySaysWhereItWasLifted() throws {
    let result = build(
      switches: [schema("sync")],
      policies: [(corp, "[sync]\nReadOnly=yes\nChecked=on"), (local, "[sync]\nReadOnly=no")])
    #expect(
      result.diagnostics.map(\.description) == [
        "policy.d/50-corp.conf:3: Checked= has no effect without ReadOnly=yes "
          + "(ReadOnly=no at policy.d/90-local.conf:2)"
      ])
    #expect(result.catalog != nil)
  }

  @Test func aPolicyForAnUndeclaredKeyIsAWarningAndIsKept() throws {
    let result = build(
      switches: [schema("wifi")],
      policies: [
        (corp, "[wifi]\nReadOnly=yes\n\n[cellular]\nDisabled=yes"),
        (local, "[cellular]\nReason=No modem."),
      ])
    #expect(
      result.diagnostics.map(\.description) == [
        "policy.d/50-corp.conf:4: policy for undeclared switch cellular: ignored on this machine"
      ])
    #expect(result.diagnostics.first?.severity == .warning)
    let catalog = try #require(result.catalog)
    #expect(
      catalog.policies["cellular"]
        == PolicyRule(
          key: "cellular", disabled: true, reason: "No modem.", disabledSource: at(corp, 4)))
    #expect(catalog.policyCount == 1)
    #expect(catalog.warnings == result.diagnostics)
  }

  @Test(arguments: [
    (
      "[sync]\nReadOnly=sure", 2,
      "ReadOnly=sure is not a boolean: use on/off, yes/no, true/false or 1/0"
    ),
    (
      "[sync]\nDisabled=", 2,
      "Disabled= is not a boolean: use on/off, yes/no, true/false or 1/0"
    ),
    ("[sync]\nChecked=2", 2, "Checked=2 is not a boolean: use on/off, yes/no, true/false or 1/0"),
    (
      "[sync]\nHeldBy=corp", 2,
      "unknown name HeldBy in [sync]: allowed are ReadOnly, Disabled, Checked, Reason, "
        + "Schedule"
    ),
    (
      "[Sync]\nReadOnly=yes", 1,
      "invalid switch key \"Sync\": a switch key starts with a lowercase letter a-z"
    ),
  ])
  func policyErrors(text: String, line: Int, message: String) {
    let result = build(switches: [schema("sync")], policies: [(corp, text)])
    #expect(result.catalog == nil)
    #expect(result.diagnostics.map(\.description) == ["\(corp):\(line): \(message)"])
  }

  @Test func entriesUnderAnInvalidKeyAreStillChecked() {
    let result = build(policies: [(corp, "[bad key]\nReadOnly=perhaps")])
    #expect(
      result.diagnostics.map(\.description) == [
        "policy.d/50-corp.conf:1: invalid switch key \"bad key\": a switch key holds only "
          + "a-z, 0-9, '.' and '-'",
        "policy.d/50-corp.conf:2: ReadOnly=perhaps is not a boolean: use on/off, yes/no, "
          + "true/false or 1/0",
      ])
  }
}

/// Random directories built from valid and broken lines: the result is always
/// consistent with its diagnostics.
struct CatalogBuilderPropertyTests {
  static let lines = [
    "[Daemon]", "[wifi]", "[sync]", "[Bad]", "[", "Label=Wi-Fi", "Label=Turn on", "Default=on",
    "Default=2", "ReadOnly=yes", "ReadOnly=no", "Checked=off", "Disabled=1", "Reason=x #1",
    "MaxHistoryPage=5", "MaxHistoryPage=0", "Bogus=1", "# c", "", "junk", "=x",
  ]

  static func randomText(using generator: inout SplitMix64) -> String {
    let count = Int.random(in: 0...12, using: &generator)
    return (0..<count).map { _ in lines.randomElement(using: &generator)! }
      .joined(separator: "\n")
  }

  @Test func diagnosticsAndCatalogAgree() {
    var generator = SplitMix64(seed: 7)
    for _ in 0..<1000 {
      let files = (0..<5).map { _ in Self.randomText(using: &generator) }
      let switchNames = ["switches.d/a.conf", "switches.d/b.conf"]
      let policyNames = ["policy.d/a.conf", "policy.d/b.conf"]
      let result = CatalogBuilder.build(
        ConfigSources(
          daemonConf: files[0],
          switchFiles: [(switchNames[0], files[1]), (switchNames[1], files[2])],
          policyFiles: [(policyNames[0], files[3]), (policyNames[1], files[4])]))
      let hasError = result.diagnostics.contains { $0.severity == .error }
      #expect((result.catalog == nil) == hasError)
      if let catalog = result.catalog {
        #expect(catalog.warnings == result.diagnostics)
        for rule in catalog.policies.values {
          #expect((rule.readOnlySource != nil) == rule.readOnly)
          #expect((rule.disabledSource != nil) == rule.disabled)
        }
      }
      // File order: switchd.conf, then switches.d, then policy.d, lines ascending.
      let order = ["switchd.conf"] + switchNames + policyNames
      let positions = result.diagnostics.map {
        (order.firstIndex(of: $0.location.file) ?? -1, $0.location.line)
      }
      #expect(!positions.contains { $0.0 < 0 })
      #expect(zip(positions, positions.dropFirst()).allSatisfy { $0 <= $1 })
    }
  }
}
