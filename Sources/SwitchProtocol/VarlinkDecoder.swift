import SwitchCore

/// One varlink message from a client, decoded (PROTOCOL.md "varlink"): a
/// call `{"method", "parameters"?, "more"?, "oneway"?}` whose method is
/// `io.switchd.Switches.<Method>` becomes the same `Call` a JSON-RPC
/// request does; the service interface's calls and every invalid message
/// are answered from here, since their answers depend on no state.
public struct VarlinkMessage: Equatable, Sendable {
  public enum Body: Equatable, Sendable {
    /// A method of io.switchd.Switches; `call` is its decoded parameters,
    /// or why they are not right.
    case call(Method, Result<Call, RPCError>)
    /// `org.varlink.service.GetInfo`.
    case getInfo
    /// `org.varlink.service.GetInterfaceDescription`: the text of the
    /// interface, or `InterfaceNotFound`.
    case describe(Result<String, RPCError>)
    /// Answered with this error (and the connection stays usable).
    case invalid(RPCError)
  }

  public var body: Body
  /// No reply is wanted.
  public var oneway: Bool
  /// The client takes several replies (`Watch`).
  public var more: Bool
  /// The call's `allowInteractiveAuthentication` parameter.
  public var allowsInteraction = false

  public init(_ body: Body, oneway: Bool = false, more: Bool = false) {
    self.body = body
    self.oneway = oneway
    self.more = more
  }
}

public enum VarlinkDecoder {
  /// Decodes one NUL-terminated message (without its NUL); a declared
  /// long key is `keys`' String (`KeyInterner`).
  public static func decode(
    _ frame: UnsafeBufferPointer<UInt8>, maxDepth: Int, limits: ParamLimits = ParamLimits(),
    keys: KeyInterner = KeyInterner()
  ) -> VarlinkMessage {
    // A Get, Toggle or Set of a key, read straight into its Call; then the
    // other common calls, read without a JSON tree (RequestFastPath.swift).
    if let (method, call) = RequestFastPath.varlinkKeyCall(frame, maxDepth: maxDepth, keys: keys) {
      return VarlinkMessage(.call(method, .success(call)))
    }
    if let call = RequestFastPath.varlinkCall(frame, maxDepth: maxDepth) {
      let body = self.body(call.method, parameters: call.parameters, more: false, limits: limits)
      var message = VarlinkMessage(body)
      message.allowsInteraction = Call.allowsInteractiveAuthentication(call.parameters)
      return message
    }
    return decodeGeneral(frame, maxDepth: maxDepth, limits: limits)
  }

  /// `decode` without its fast path: the reference it is tested against.
  public static func decodeGeneral(
    _ frame: UnsafeBufferPointer<UInt8>, maxDepth: Int, limits: ParamLimits = ParamLimits()
  ) -> VarlinkMessage {
    let value: JSONValue
    do {
      value = try JSONParser.parse(frame, maxDepth: maxDepth)
    } catch {
      return VarlinkMessage(.invalid(.varlinkInvalidRequest(error.message)))
    }
    guard let members = value.objectMembers else {
      return VarlinkMessage(.invalid(.varlinkInvalidRequest("a call is a JSON object")))
    }
    var method: String?
    var parameters: JSONValue?
    var flags = (oneway: false, more: false)
    // Five names are allowed, so a bit each finds duplicates without
    // hashing (this runs for every call).
    var seen: UInt8 = 0
    for m in members {
      let bit: UInt8
      switch m.name {
      case "method": bit = 1
      case "parameters": bit = 2
      case "oneway": bit = 4
      case "more": bit = 8
      case "upgrade": bit = 16
      default: bit = 0
      }
      if seen & bit != 0 {
        return VarlinkMessage(.invalid(.varlinkInvalidRequest("\"\(m.name)\" is given twice")))
      }
      seen |= bit
      switch m.name {
      case "method": method = m.value.stringValue
      case "parameters": parameters = m.value
      case "oneway", "more", "upgrade":
        guard m.value.isNull || m.value.boolValue != nil else {
          return VarlinkMessage(
            .invalid(.varlinkInvalidRequest("\"\(m.name)\" must be true or false")))
        }
        let on = m.value.boolValue ?? false
        if m.name == "oneway" { flags.oneway = on }
        if m.name == "more" { flags.more = on }
        if m.name == "upgrade" && on {
          return VarlinkMessage(
            .invalid(.varlinkInvalidRequest("switchd has no protocol to upgrade to")))
        }
      default:
        return VarlinkMessage(.invalid(.varlinkInvalidRequest("unknown member \"\(m.name)\"")))
      }
    }
    guard let method else {
      return VarlinkMessage(.invalid(.varlinkInvalidRequest("\"method\" must be a string")))
    }
    let body = self.body(method, parameters: parameters, more: flags.more, limits: limits)
    var message = VarlinkMessage(body, oneway: flags.oneway, more: flags.more)
    message.allowsInteraction = Call.allowsInteractiveAuthentication(parameters)
    return message
  }

  /// What `interface.Method` with `parameters` asks for.
  static func body(
    _ fullName: String, parameters: JSONValue?, more: Bool, limits: ParamLimits
  ) -> VarlinkMessage.Body {
    guard let dot = fullName.lastIndex(of: ".") else {
      return .invalid(.varlinkInterfaceNotFound(""))
    }
    let interface = String(fullName[..<dot])
    let name = String(fullName[fullName.index(after: dot)...])
    guard parameters == nil || parameters!.isNull || parameters!.objectMembers != nil else {
      let invalid = RPCError.invalidParams("parameters must be an object", param: "parameters")
      // A method of switchd's is called, so its PermissionDenied comes
      // first, as on the JSON-RPC socket (the order of checks).
      if interface == VarlinkInterface.name, let method = VarlinkInterface.method(named: name) {
        return .call(method, .failure(invalid))
      }
      return .invalid(invalid)
    }
    // In varlink a null member is one left out.
    var members = parameters?.objectMembers ?? []
    if members.contains(where: { $0.value.isNull }) { members.removeAll { $0.value.isNull } }
    switch interface {
    case VarlinkInterface.service:
      return serviceBody(name, fullName: fullName, members: members)
    case VarlinkInterface.name:
      guard let method = VarlinkInterface.method(named: name) else {
        return .invalid(.methodNotFound(fullName))
      }
      if method == .watch && !more { return .invalid(.varlinkExpectedMore) }
      // `"user": "*"` (every user) is JSON-RPC's only.
      if let user = members.first(where: { $0.name == WireField.user }),
        user.value.stringValue != nil
      {
        let why = "\"user\" must be a uid (a whole number from 0 to 4294967294)"
        return .call(method, .failure(.invalidParams(why, param: WireField.user)))
      }
      // Declared by every method that may need a right, so not by Status
      // (JSON-RPC takes it everywhere; the interface says what varlink takes).
      if method == .status,
        members.contains(where: { $0.name == WireField.allowInteractiveAuthentication })
      {
        let why = "unknown param \"\(WireField.allowInteractiveAuthentication)\""
        return .call(
          method, .failure(.invalidParams(why, param: WireField.allowInteractiveAuthentication)))
      }
      return .call(method, Call.decode(method, params: .object(members), limits: limits))
    default:
      return .invalid(.varlinkInterfaceNotFound(interface))
    }
  }

  private static func serviceBody(
    _ name: String, fullName: String, members: [JSONMember]
  ) -> VarlinkMessage.Body {
    switch name {
    case "GetInfo":
      if let extra = members.first {
        return .invalid(.invalidParams("unknown param \"\(extra.name)\"", param: extra.name))
      }
      return .getInfo
    case "GetInterfaceDescription":
      guard members.count == 1, members[0].name == "interface",
        let interface = members[0].value.stringValue
      else {
        let wrong = members.first { $0.name != "interface" }?.name ?? "interface"
        return .invalid(.invalidParams("\"interface\" is required: a string", param: wrong))
      }
      return .describe(
        VarlinkInterface.description(of: interface).map { .success($0) }
          ?? .failure(.varlinkInterfaceNotFound(interface)))
    default:
      return .invalid(.methodNotFound(fullName))
    }
  }
}

/// The errors that only varlink has. Their codes are the daemon's own
/// (never sent: a varlink error is a name), outside JSON-RPC's table.
extension RPCErrorCode {
  public static let varlinkInterfaceNotFound = RPCErrorCode(rawValue: -32090)
  public static let varlinkExpectedMore = RPCErrorCode(rawValue: -32091)
}

extension RPCError {
  /// A message that is not JSON or not a varlink call.
  public static func varlinkInvalidRequest(_ why: String) -> RPCError {
    RPCError(.invalidRequest, "The message is not a varlink call: \(why).")
  }

  public static func varlinkInterfaceNotFound(_ interface: String) -> RPCError {
    RPCError(
      .varlinkInterfaceNotFound, "This service has no interface \(interface).",
      data: [JSONMember("interface", .string(interface))])
  }

  public static let varlinkExpectedMore = RPCError(
    .varlinkExpectedMore, "Watch sends several replies: call it with \"more\": true.")
}
