import Testing

@testable import SwitchCore

/// `Requires=`, `Conflicts=` and `Scope=` in switches.d (CONFIG.md): what
/// they give the catalog, and each mistake as an error with file and line.
@Suite struct DependencyConfigTests {
  static let base = "switches.d/10-base.conf"
  static let extra = "switches.d/20-extra.conf"

  static func build(_ files: [(String, String)]) -> (catalog: Catalog?, errors: [String]) {
    let result = CatalogBuilder.build(
      ConfigSources(
        daemonConf: nil, switchFiles: files.map { (name: $0.0, text: $0.1) }, policyFiles: []))
    return (result.catalog, result.diagnostics.filter { $0.severity == .error }.map(\.description))
  }

  static let radios = radios(wifiConflicts: "airplane-mode")

  static func radios(wifiConflicts: String) -> String {
    """
    [airplane-mode]
    Label=Airplane mode

    [wifi]
    Label=Wi-Fi
    Conflicts=\(wifiConflicts)

    [hotspot]
    Label=Hotspot
    Requires=wifi\tvpn
    Conflicts= airplane-mode

    [vpn]
    Label=VPN

    [email.marketing]
    Label=Marketing emails
    Scope=user
    """
  }

  @Test func requiresConflictsAndScopeReachTheCatalog() throws {
    let result = Self.build([(Self.base, Self.radios)])
    #expect(result.errors == [])
    let catalog = try #require(result.catalog)
    #expect(catalog.switches["wifi"]?.conflicts == ["airplane-mode"])
    #expect(catalog.switches["hotspot"]?.requires == ["wifi", "vpn"])
    #expect(catalog.switches["hotspot"]?.conflicts == ["airplane-mode"])
    #expect(catalog.switches["email.marketing"]?.scope == .user)
    #expect(catalog.switches["wifi"]?.scope == .system)
    let on = SwitchState(checked: true)
    #expect(catalog.dependencies.blocker(of: "wifi") { _ in on } == "Airplane mode is on")
  }

  @Test func aChangedDependencyIsASchemaUpdate() throws {
    let before = try #require(Self.build([(Self.base, Self.radios)]).catalog)
    let edited = Self.radios(wifiConflicts: "")
    let after = try #require(Self.build([(Self.base, edited)]).catalog)
    #expect(SchemaChanges(from: before, to: after).updated == ["wifi"])
  }

  @Test(arguments: [
    (
      "[wifi]\nLabel=Wi-Fi\nConflicts=airplane-mode", 3,
      "Conflicts=airplane-mode: no switch has the key airplane-mode"
    ),
    (
      "[wifi]\nLabel=Wi-Fi\nRequires=wifi", 3,
      "Requires=wifi: switch wifi cannot depend on itself"
    ),
    (
      "[a]\nLabel=A\n[wifi]\nLabel=Wi-Fi\nRequires=a a", 5,
      "Requires=a: wifi lists a twice"
    ),
    (
      "[a]\nLabel=A\n[wifi]\nLabel=Wi-Fi\nRequires=a\nConflicts=a", 6,
      "Conflicts=a: wifi lists a in both Requires= and Conflicts="
    ),
    (
      "[mail]\nLabel=Mail\nScope=user\n[wifi]\nLabel=Wi-Fi\nRequires=mail", 6,
      "Requires=mail: mail is a user-scope switch; dependencies are between system switches"
    ),
    (
      "[wifi]\nLabel=Wi-Fi\n[mail]\nLabel=Mail\nScope=user\nConflicts=wifi", 6,
      "Conflicts= on mail, a user-scope switch: dependencies are between system switches"
    ),
    (
      "[wifi]\nLabel=Wi-Fi\nScope=machine", 3,
      "Scope=machine of switch wifi is not system or user"
    ),
  ])
  func mistakesAreErrorsAtTheirLine(text: String, line: Int, message: String) {
    let result = Self.build([(Self.base, text)])
    #expect(result.catalog == nil)
    #expect(result.errors == ["\(Self.base):\(line): \(message)"])
  }

  @Test func aCycleThroughRequiresAndConflictsIsOneErrorAtItsFirstLine() {
    let result = Self.build([
      (Self.base, "[a]\nLabel=A\nRequires=b\n\n[c]\nLabel=C\nRequires=a"),
      (Self.extra, "[b]\nLabel=B\nConflicts=c\n\n[d]\nLabel=D\nRequires=a"),
    ])
    #expect(result.catalog == nil)
    #expect(
      result.errors == [
        "\(Self.base):3: Requires=/Conflicts= make a cycle: a -> b -> c -> a; "
          + "a switch cannot depend on itself"
      ])
  }

  @Test func twoCyclesAreTwoErrorsInFileOrder() {
    let result = Self.build([
      (Self.base, "[x]\nLabel=X\nConflicts=y\n[y]\nLabel=Y\nConflicts=x"),
      (Self.extra, "[p]\nLabel=P\nRequires=q\n[q]\nLabel=Q\nRequires=p"),
    ])
    #expect(
      result.errors == [
        "\(Self.base):3: Requires=/Conflicts= make a cycle: x -> y -> x; "
          + "a switch cannot depend on itself",
        "\(Self.extra):3: Requires=/Conflicts= make a cycle: p -> q -> p; "
          + "a switch cannot depend on itself",
      ])
  }

  /// Two cycles through one switch are both named in one run (the second
  /// was named only once the first was mended).
  @Test func twoCyclesThroughOneSwitchAreTwoErrors() {
    let result = Self.build([
      (Self.base, "[a]\nLabel=A\nRequires=b c\n[b]\nLabel=B\nRequires=a\n[c]\nLabel=C\nConflicts=a")
    ])
    #expect(
      result.errors == [
        "\(Self.base):3: Requires=/Conflicts= make a cycle: a -> b -> a; "
          + "a switch cannot depend on itself",
        "\(Self.base):3: Requires=/Conflicts= make a cycle: a -> c -> a; "
          + "a switch cannot depend on itself",
      ])
  }

  /// A chain far longer than any real schema is settled and checked without
  /// recursion: a thread's stack is no limit on it.
  @Test func aLongChainIsOrderedAndItsClosingCycleFound() throws {
    let count = 3000
    let chain = (0..<count).map { "[s\($0)]\nLabel=S\($0)\nRequires=s\($0 + 1)\n" }.joined()
    let open = chain + "[s\(count)]\nLabel=End\n"
    let catalog = try #require(Self.build([(Self.base, open)]).catalog)
    #expect(catalog.dependencies.order.first == "s\(count)")
    #expect(catalog.dependencies.order.last == "s0")
    let closed = chain + "[s\(count)]\nLabel=End\nConflicts=s0\n"
    let errors = Self.build([(Self.base, closed)]).errors
    #expect(errors.count == 1)
    #expect(
      errors.first?.hasPrefix("\(Self.base):3: Requires=/Conflicts= make a cycle: s0 -> s1") == true
    )
  }

  @Test func aDiamondIsNoCycle() {
    let result = Self.build([
      (Self.base, "[a]\nLabel=A\n[b]\nLabel=B\nRequires=a\n[c]\nLabel=C\nRequires=a\n"),
      (Self.extra, "[d]\nLabel=D\nRequires=b c\nConflicts=a"),
    ])
    #expect(result.errors == [])
    #expect(result.catalog?.dependencies.order.last == "d")
  }

  @Test func aKeyDeclaredInALaterFileMayBeListed() {
    let result = Self.build([
      (Self.base, "[wifi]\nLabel=Wi-Fi\nConflicts=airplane-mode"),
      (Self.extra, "[airplane-mode]\nLabel=Airplane mode"),
    ])
    #expect(result.errors == [])
  }

  @Test func anEmptyListListsNothing() throws {
    let catalog = try #require(Self.build([(Self.base, "[wifi]\nLabel=Wi-Fi\nRequires=")]).catalog)
    #expect(catalog.switches["wifi"]?.requires == [])
  }
}
