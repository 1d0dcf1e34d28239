import SwitchProtocol
import SwitchTestSupport
import Testing

/// docs/protocol.md "Schema changes": after a reload that adds, removes or
/// redeclares switches, each watch that matches one of them is told once,
/// with the keys it matches; a reload that changes nothing says nothing.
@Suite struct SchemaChangedEndToEndTests {
  /// Reads until a `schemaChanged` notification (its params), skipping `changed` events.
  static func nextSchemaChange(_ client: RPCClient) throws -> JSONValue {
    if let index = client.notifications.firstIndex(where: {
      $0["method"]?.stringValue == "schemaChanged"
    }) {
      return client.notifications.remove(at: index)["params"] ?? .null
    }
    while true {
      let message = try client.readJSON()
      if message["method"]?.stringValue == "schemaChanged" { return message["params"] ?? .null }
    }
  }

  static func strings(_ value: JSONValue?) -> [String] {
    (value?.arrayValue ?? []).compactMap(\.stringValue)
  }

  @Test func aReloadThatChangesTheSchemaTellsEachMatchingWatch() throws {
    let daemon = try DaemonFixture()
    let everything = try daemon.client()
    let all = try everything.result("watch")["watch"]?.stringValue
    let notifications = try daemon.client()
    let some = try notifications.result("watch", #"{"keys":["notifications.*"]}"#)["watch"]?
      .stringValue
    let email = try daemon.client()
    _ = try email.result("watch", #"{"keys":["email.*"]}"#)

    // A reload that changes nothing: no notification (the next one seen is the later one's).
    #expect(try daemon.client().result("reload")["switches"]?.int64Value == 5)

    // bluetooth removed, notifications.chat relabelled, airplane-mode added at the end.
    let switches = """
      [wifi]
      Label=Wi-Fi
      Description=Connect to wireless networks.
      Default=on
      CheckedIcon=wifi
      UncheckedIcon=wifi_off

      [notifications.chat]
      Label=Chat
      Default=on

      [notifications.mail]
      Label=Mail notifications
      Default=on

      [email.marketing]
      Label=Marketing emails
      Description=Receive emails about new products.
      Default=on

      [airplane-mode]
      Label=Airplane mode
      Default=off
      """
    try daemon.writeFile("switches.d/10-test.conf", switches)
    #expect(try daemon.client().result("reload")["switches"]?.int64Value == 5)

    let told = try Self.nextSchemaChange(everything)
    #expect(told["watch"]?.stringValue == all)
    #expect(Self.strings(told["added"]) == ["airplane-mode"])
    #expect(Self.strings(told["removed"]) == ["bluetooth"])
    // notifications.chat is relabelled; the others below bluetooth moved up one place.
    #expect(Self.strings(told["updated"]).contains("notifications.chat"))
    let part = try Self.nextSchemaChange(notifications)
    #expect(part["watch"]?.stringValue == some)
    #expect(Self.strings(part["added"]) == [])
    #expect(Self.strings(part["removed"]) == [])
    #expect(Self.strings(part["updated"]) == ["notifications.chat", "notifications.mail"])
    // A watch of email.* only: email.marketing moved from place 4 to 3, so it is told too.
    #expect(Self.strings(try Self.nextSchemaChange(email)["updated"]) == ["email.marketing"])
    // And the new schema is what is served.
    let chat = try everything.result("get", #"{"key":"notifications.chat"}"#)
    #expect(chat["label"]?.stringValue == "Chat")
  }
}
