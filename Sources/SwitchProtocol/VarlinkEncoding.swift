import SwitchCore

/// How a varlink reply is wrapped: a JSON-RPC result that is a Switch is
/// `{"switch": Switch}` (`get`), and a `Watch`'s replies all continue.
public struct VarlinkReply: Equatable, Sendable {
  public var wrapsSwitch: Bool
  public var continues: Bool

  public init(wrapsSwitch: Bool = false, continues: Bool = false) {
    self.wrapsSwitch = wrapsSwitch
    self.continues = continues
  }

  /// The reply to a call of `method`.
  public init(for method: Method) {
    self.init(wrapsSwitch: method == .get, continues: method == .watch)
  }
}

/// Writes varlink replies (PROTOCOL.md "varlink"), without their NUL: the
/// loop ends each message, as it ends each JSON-RPC line.
public enum VarlinkEncoding {
  /// The byte after every message.
  public static let terminator: UInt8 = 0

  /// `{"parameters":` — the caller writes the result object, then `endReply`.
  public static func beginReply(_ w: inout JSONWriter, _ reply: VarlinkReply) {
    w.raw("{\"parameters\":")
    if reply.wrapsSwitch { w.firstMember(WireField.switch) }
  }

  public static func endReply(_ w: inout JSONWriter, _ reply: VarlinkReply) {
    if reply.wrapsSwitch { w.raw("}") }
    w.raw(reply.continues ? ",\"continues\":true}" : "}")
  }

  /// The varlink name of an error: the service interface's for what it
  /// names (bad parameters, unknown methods and interfaces, `ExpectedMore`),
  /// io.switchd.Switches's own for the rest (one per JSON-RPC `data.name`;
  /// a message that is not JSON is an InvalidRequest here).
  public static func errorName(_ code: RPCErrorCode) -> String {
    switch code {
    case .invalidParams: return "org.varlink.service.InvalidParameter"
    case .methodNotFound: return "org.varlink.service.MethodNotFound"
    case .varlinkInterfaceNotFound: return "org.varlink.service.InterfaceNotFound"
    case .varlinkExpectedMore: return "org.varlink.service.ExpectedMore"
    case .parseError: return "io.switchd.Switches.InvalidRequest"
    default: return "io.switchd.Switches." + code.name
    }
  }

  /// An error reply: its parameters are the JSON-RPC `data` members but
  /// `name` (InvalidParameter's is `parameter`, as the service interface
  /// says). `switchObject`: a Conflict's current switch, already encoded.
  public static func writeError(
    _ w: inout JSONWriter, _ error: RPCError, switchObject: [UInt8]? = nil
  ) {
    w.raw("{\"error\":")
    w.string(errorName(error.code))
    w.raw(",\"parameters\":")
    var members = error.data
    if error.code == .invalidParams {
      let param = members.first { $0.name == WireField.param }?.value ?? .string("parameters")
      members = [JSONMember("parameter", param)]
    }
    w.value(.object(members))
    if let switchObject {
      w.removeLast()
      if !members.isEmpty { w.raw(",") }
      w.name(WireField.switch)
      w.raw(switchObject)
      w.raw("}")
    }
    w.raw("}")
  }

  /// `Watch`'s first reply: `{"revision":R,"switches":[Switch…]}`, or with
  /// `since` (`withSwitches` false) `{"revision":R}`.
  public static func writeWatch(
    _ w: inout JSONWriter, revision: Int64, withSwitches: Bool,
    switches: ResultEncoding.Switches
  ) {
    w.raw("{\"revision\":")
    w.int(revision)
    if withSwitches {
      w.raw(",\"switches\":")
      switches(&w)
    }
    w.raw("}")
  }

  /// Every event reply to a watch starts with these bytes; then the
  /// change's members (`WireEncoding.writeChangeMembers`) and `eventEnd`.
  public static let eventHead = Array(#"{"continues":true,"parameters":{"event":{"#.utf8)
  public static let eventEnd: [UInt8] = Array("}}}".utf8) + [terminator]

  /// A watch's reply after a reload that touched its switches:
  /// `{"continues":true,"parameters":{"schemaChanged":{"added":…}}}` and NUL.
  public static func writeSchemaChanged(_ w: inout JSONWriter, _ changes: SchemaChanges) {
    w.raw(#"{"continues":true,"parameters":{"schemaChanged":{"added":"#)
    WireEncoding.writeSchemaChangeLists(&w, changes)
    w.raw("}}}")
    w.raw([terminator])
  }

  /// `org.varlink.service.GetInfo`'s reply parameters.
  public static func writeInfo(_ w: inout JSONWriter, version: String) {
    w.raw("{\"vendor\":\"switchd\",\"product\":\"switchd\",\"version\":")
    w.string(version)
    w.raw(",\"url\":\"man:switchd(8)\",\"interfaces\":")
    w.strings([VarlinkInterface.service, VarlinkInterface.name])
    w.raw("}")
  }

  /// `org.varlink.service.GetInterfaceDescription`'s reply parameters.
  public static func writeDescription(_ w: inout JSONWriter, _ text: String) {
    w.raw("{\"description\":")
    w.string(text)
    w.raw("}")
  }
}
