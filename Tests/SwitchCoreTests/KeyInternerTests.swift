import Testing

@testable import SwitchCore

/// A declared long key is one String that the catalog, the tables and a
/// decoded request share (`KeyInterner`, issue 26): the interner must find
/// exactly the declared keys, by their bytes, and hand out their Strings.
@Suite struct KeyInternerTests {
  /// A String made at run time: its own storage, unlike a literal's.
  static func fresh(_ text: String) -> String { String(decoding: Array(text.utf8), as: UTF8.self) }

  /// Where a native String's bytes are: equal for two Strings that share storage.
  static func storage(_ text: String) -> UnsafeRawPointer? {
    text.utf8.withContiguousStorageIfAvailable { UnsafeRawPointer($0.baseAddress) } ?? nil
  }

  static func find(_ keys: KeyInterner, _ text: String) -> String? {
    Array(text.utf8).withUnsafeBufferPointer { keys.key($0) }
  }

  @Test func findsADeclaredLongKeyByItsBytesAndGivesItsString() {
    let declared = (0..<1000).map { Self.fresh("org.example.devices.toggle.c\($0)") }
    let keys = KeyInterner(declared + ["wifi", "email.marketing"])
    for key in declared {
      let found = Self.find(keys, key)
      #expect(found == key)
      #expect(Self.storage(found ?? "") == Self.storage(key), "\(key) is not the declared String")
    }
    // Short keys are small Strings, with nothing to share; unknown, longer,
    // shorter and one-byte-off keys are not found.
    #expect(!keys.isEmpty)
    #expect(Self.find(keys, "wifi") == nil)
    #expect(Self.find(keys, "org.example.devices.toggle.c1000") == nil)
    #expect(Self.find(keys, "org.example.devices.toggle.c1") != nil)
    #expect(Self.find(keys, "org.example.devices.toggle.c") == nil)
    #expect(Self.find(keys, "org.example.devices.toggle.c10 ") == nil)
    #expect(Self.find(keys, "org.example.devices.toggle.d10") == nil)
    #expect(Self.find(KeyInterner(), "org.example.devices.toggle.c1") == nil)
    #expect(KeyInterner(["wifi", "bluetooth"]).isEmpty)
  }

  @Test func sharedGivesTheDeclaredStringOrTheKeyItself() {
    let declared = Self.fresh("notifications.chat")
    let keys = KeyInterner([declared])
    let loaded = Self.fresh("notifications.chat")
    #expect(Self.storage(loaded) != Self.storage(declared))
    #expect(Self.storage(keys.shared(loaded)) == Self.storage(declared))
    #expect(Self.storage(keys.shared(HashedKey(loaded)).string) == Self.storage(declared))
    let other = Self.fresh("notifications.mail")
    #expect(Self.storage(keys.shared(other)) == Self.storage(other))
    #expect(keys.shared(HashedKey(other)) == HashedKey(other))
  }

  @Test func aCatalogSharesItsKeysWithItsPoliciesDependenciesAndTheNextCatalog() {
    func definitions() -> [SwitchDefinition] {
      [
        SwitchDefinition(
          key: Self.fresh("notifications.chat"), label: "Chat", defaultChecked: true,
          requires: [Self.fresh("notifications.all.enabled")]),
        SwitchDefinition(
          key: Self.fresh("notifications.all.enabled"), label: "All", defaultChecked: true),
        SwitchDefinition(key: "wifi", label: "Wi-Fi", defaultChecked: true),
      ]
    }
    let old = Catalog(
      switches: definitions(),
      policies: [PolicyRule(key: Self.fresh("notifications.chat"), readOnly: true)])
    let chat = try! #require(old.switches["notifications.chat"]).key
    #expect(
      Self.storage(old.sharedKeys.shared(Self.fresh("notifications.chat"))) == Self.storage(chat))
    let policyKey = try! #require(old.policies.keys.first)
    #expect(Self.storage(policyKey) == Self.storage(chat))
    // The same files read again: new Strings, until they share the old ones.
    var settings = DaemonSettings()
    settings.database = "/var/lib/switchd/other.db"
    let warning = ConfigDiagnostic(.warning, SourceLocation(file: "x.conf", line: 3), "careful")
    let read = Catalog(
      settings: settings, switches: definitions(),
      policies: [
        PolicyRule(key: Self.fresh("notifications.chat"), disabled: true, reason: "exam"),
        PolicyRule(key: Self.fresh("an.undeclared.switch.key"), readOnly: true),
      ],
      warnings: [warning])
    #expect(
      Self.storage(try! #require(read.switches["notifications.chat"]).key) != Self.storage(chat))
    let next = read.sharingKeys(with: old)
    #expect(
      Self.storage(try! #require(next.switches["notifications.chat"]).key) == Self.storage(chat))
    #expect(
      Self.storage(try! #require(next.sortedKeys.last { $0.hasPrefix("notifications.chat") }))
        == Self.storage(chat))
    let all = try! #require(old.switches["notifications.all.enabled"]).key
    #expect(
      Self.storage(try! #require(next.switches["notifications.chat"]).requires[0])
        == Self.storage(all))
    // Everything else as read: the definitions, the policies (of an
    // undeclared key too, the declared one's with the old String), the
    // settings and the warnings.
    #expect(next.switches == read.switches)
    #expect(next.sortedKeys == read.sortedKeys)
    #expect(next.policies == read.policies)
    #expect(next.policies["an.undeclared.switch.key"]?.readOnly == true)
    let nextPolicyKey = try! #require(next.policies.keys.first { $0 == "notifications.chat" })
    #expect(Self.storage(nextPolicyKey) == Self.storage(chat))
    #expect(next.settings == settings)
    #expect(next.warnings == [warning])
  }
}
