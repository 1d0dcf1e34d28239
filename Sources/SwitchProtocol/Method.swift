import Glibc
import SwitchCore

/// The methods of the API (docs/protocol.md, "Methods").
public enum Method: String, CaseIterable, Sendable {
  case get, list, set, toggle, reset, watch, unwatch, history
  case lock, unlock, disable, enable, reload, status, apply
  /// Keep or undo a tried change (SEMANTICS.md rule 20).
  case confirm, revert
  /// A copy of the database, handed to the caller as an open descriptor.
  case backup

  /// What a refusal says the caller may not do: `toggle wifi`, `reload`,
  /// `call history for wifi` (a method whose name is not a verb).
  public func refusedAction(key: String?) -> String {
    switch self {
    case .history, .status, .backup, .unwatch:
      return "call \(rawValue)" + (key.map { " for \($0)" } ?? "")
    default:
      return rawValue + (key.map { " \($0)" } ?? "")
    }
  }

  /// What a call that names no switch does, for the sentence polkit's
  /// agent shows (`PolkitQuestion.administering`'s `purpose`); nil for the
  /// others.
  public var purposeOnNoSwitch: String? {
    switch self {
    case .reload: return "reload switchd's configuration"
    case .backup: return "back up switchd's database"
    default: return nil
    }
  }

  /// Methods that may change state: the daemon answers them only after
  /// their transaction commits, and a later read waits for them.
  public var isWrite: Bool {
    switch self {
    case .set, .toggle, .reset, .lock, .unlock, .disable, .enable, .reload, .apply, .confirm,
      .revert:
      return true
    default: return false
    }
  }

  /// What the caller must be (SwitchCore's table: a write method needs what
  /// its change's cause needs; `reload` applies the policy files, so it needs
  /// what a policy change needs; `backup` is an administrator's; the rest is
  /// for anyone).
  public var privilege: Privilege {
    // A switch over the cases, not `Cause(wireName: rawValue)`: every
    // request asks this, and the string look-up was 1,700 instructions of
    // a `get` (callgrind).
    switch self {
    case .set: return Cause.set.privilege
    case .toggle: return Cause.toggle.privilege
    case .reset: return Cause.reset.privilege
    case .lock: return Cause.lock.privilege
    case .unlock: return Cause.unlock.privilege
    case .disable: return Cause.disable.privilege
    case .enable: return Cause.enable.privilege
    case .apply: return Cause.apply.privilege
    case .confirm: return Cause.confirm.privilege
    case .revert: return Cause.revert.privilege
    case .reload: return Cause.policy.privilege
    // The copy holds every user's values and who changed what: the
    // configuration's owners only.
    case .backup: return .administrator
    case .get, .list, .watch, .unwatch, .history, .status: return .anyone
    }
  }
}

/// Limits on params that a client controls.
public struct ParamLimits: Sendable {
  /// `history.limit` at most (1000 by default).
  public var maxHistoryPage: Int
  /// Reason texts at most, in bytes.
  public var maxReasonBytes: Int
  /// Patterns in one `watch` at most.
  public var maxPatterns: Int

  public init(maxHistoryPage: Int = 1000, maxReasonBytes: Int = 1024, maxPatterns: Int = 256) {
    self.maxHistoryPage = maxHistoryPage
    self.maxReasonBytes = maxReasonBytes
    self.maxPatterns = maxPatterns
  }
}

/// A request's method with its params decoded and checked.
public enum Call: Equatable, Sendable {
  /// `user` (here and below): the `user` param, nil when absent (the caller).
  case get(key: String, user: Viewpoint?)
  case list(prefix: String?, user: Viewpoint?)
  /// set, toggle, reset, lock, unlock, disable, enable, apply; only the first
  /// three take a `user`.
  /// `lasting`: the `for` or `until` of a timed value or hold (rules 21–22).
  case write(key: String, Operation, user: UInt32?, lasting: Lasting? = nil)
  case watch(patterns: [KeyPattern]?, since: Int64?, user: Viewpoint?)
  case unwatch(id: String)
  case history(key: String?, limit: Int, before: Int64?, user: Viewpoint?)
  case reload
  case status
  case backup

  /// Decodes params for `method` strictly: missing, unknown or mistyped
  /// params are `InvalidParams` (`"checked": 1` is mistyped).
  public static func decode(
    _ method: Method, params: JSONValue?, limits: ParamLimits = ParamLimits()
  ) -> Result<Call, RPCError> {
    var p: Params
    switch Params.open(params) {
    case .success(let opened): p = opened
    case .failure(let error): return .failure(error)
    }
    do throws(RPCError) {
      let call: Call
      switch method {
      case .get:
        call = .get(key: try p.key(), user: try p.optionalUser(everyone: false))
      case .list:
        var prefix = try p.optionalString("prefix", maxBytes: 256)
        if let text = prefix, text.hasSuffix("*") { prefix = String(text.dropLast()) }
        call = .list(prefix: prefix, user: try p.optionalUser(everyone: false))
      case .set:
        let key = try p.key()
        let checked = try p.requiredBool("checked")
        call = .write(
          key: key, .set(checked: checked, ifRevision: try p.optionalRevision("ifRevision")),
          user: try p.optionalUser(everyone: false)?.uid,
          lasting: try p.optionalLasting(mayTry: true))
      case .toggle:
        let key = try p.key()
        call = .write(
          key: key, .toggle(ifRevision: try p.optionalRevision("ifRevision")),
          user: try p.optionalUser(everyone: false)?.uid,
          lasting: try p.optionalLasting(mayTry: true))
      case .confirm, .revert:
        call = .write(
          key: try p.key(), method == .confirm ? .confirm : .revert,
          user: try p.optionalUser(everyone: false)?.uid)
      case .reset:
        call = .write(key: try p.key(), .reset, user: try p.optionalUser(everyone: false)?.uid)
      case .lock:
        let key = try p.key()
        let reason = try p.optionalString("reason", maxBytes: limits.maxReasonBytes)
        let checked = try p.optionalBool("checked")
        call = .write(
          key: key, .lock(reason: reason, checked: checked), user: nil,
          lasting: try p.optionalLasting())
      case .unlock:
        call = .write(key: try p.key(), .unlock, user: nil)
      case .disable:
        let key = try p.key()
        call = .write(
          key: key,
          .disable(reason: try p.optionalString("reason", maxBytes: limits.maxReasonBytes)),
          user: nil, lasting: try p.optionalLasting())
      case .enable:
        call = .write(key: try p.key(), .enable, user: nil)
      case .apply:
        call = .write(key: try p.key(), .apply, user: nil)
      case .watch:
        let patterns = try p.optionalPatterns("keys", max: limits.maxPatterns)
        call = .watch(
          patterns: patterns, since: try p.optionalRevision("since"),
          user: try p.optionalUser(everyone: true))
      case .unwatch:
        guard let id = try p.optionalString("watch", maxBytes: 64) else {
          throw p.error("\"watch\" is required: the id that watch returned", param: "watch")
        }
        call = .unwatch(id: id)
      case .history:
        let key = try p.optionalKey("key")
        let limit = try p.optionalInt("limit", in: 1...Int64(limits.maxHistoryPage)) ?? 100
        let before = try p.optionalRevision("before")
        call = .history(
          key: key, limit: Int(min(limit, Int64(limits.maxHistoryPage))), before: before,
          user: try p.optionalUser(everyone: true))
      case .reload:
        call = .reload
      case .status:
        call = .status
      case .backup:
        call = .backup
      }
      // Taken by every method, read by those that need a right (it matters
      // only under Authorization=polkit): checked here, read by
      // `allowsInteractiveAuthentication`.
      _ = try p.optionalBool(WireField.allowInteractiveAuthentication)
      try p.rejectUnknown()
      return .success(call)
    } catch {
      return .failure(error)
    }
  }
}

extension Call {
  /// What `decode` gives for params of `key` (a valid one) and `checked`
  /// alone, when that is a Call: nil when `method` needs more or refuses
  /// one of them (then `decode` says why). The fast path's way around the
  /// params object (RequestFastPath.keyCall); KeyCallTests holds it to
  /// `decode` for every method.
  public static func keyCall(_ method: Method, key: String, checked: Bool?) -> Call? {
    switch (method, checked) {
    case (.get, nil): return .get(key: key, user: nil)
    case (.set, let checked?):
      return .write(key: key, .set(checked: checked, ifRevision: nil), user: nil)
    case (.toggle, nil): return .write(key: key, .toggle(ifRevision: nil), user: nil)
    case (.reset, nil): return .write(key: key, .reset, user: nil)
    case (.confirm, nil): return .write(key: key, .confirm, user: nil)
    case (.revert, nil): return .write(key: key, .revert, user: nil)
    case (.lock, _): return .write(key: key, .lock(reason: nil, checked: checked), user: nil)
    case (.unlock, nil): return .write(key: key, .unlock, user: nil)
    case (.disable, nil): return .write(key: key, .disable(reason: nil), user: nil)
    case (.enable, nil): return .write(key: key, .enable, user: nil)
    case (.apply, nil): return .write(key: key, .apply, user: nil)
    default: return nil
    }
  }

  /// Whether the params let polkit ask the person
  /// (`"allowInteractiveAuthentication": true`); `decode` refuses the param
  /// when it is not a bool.
  public static func allowsInteractiveAuthentication(_ params: JSONValue?) -> Bool {
    params?.objectMembers?.first { $0.name == WireField.allowInteractiveAuthentication }?
      .value.boolValue == true
  }
}

/// A params object being read: remembers which names were used, so that
/// unknown names can be refused.
private struct Params {
  var members: [JSONMember]
  /// Which members were read, by index: params objects are small, so a
  /// linear scan and a bit mask beat hashing on every request.
  var used: UInt64 = 0

  /// The request's key once read, for the `data.key` of a later error.
  var keyRead: String?

  /// What `data.param` says when the params as a whole are wrong.
  static let wholeParams = "params"

  static func open(_ params: JSONValue?) -> Result<Params, RPCError> {
    guard let params, !params.isNull else { return .success(Params(members: [])) }
    guard let members = params.objectMembers else {
      return .failure(
        .invalidParams("params must be an object of named params", param: wholeParams))
    }
    if members.count > 16 {
      return .failure(.invalidParams("params has too many members", param: wholeParams))
    }
    for i in members.indices {
      for j in members.indices where j > i && members[j].name == members[i].name {
        return .failure(
          .invalidParams("\"\(members[i].name)\" is given twice", param: members[i].name))
      }
    }
    return .success(Params(members: members))
  }

  /// An `InvalidParams` error naming `param`, and the key when one was read.
  func error(_ why: String, param: String) -> RPCError {
    .invalidParams(why, param: param, key: keyRead)
  }

  mutating func take(_ name: String) -> JSONValue? {
    guard let index = members.firstIndex(where: { $0.name == name }) else { return nil }
    used |= 1 << UInt64(index)
    return members[index].value
  }

  func rejectUnknown() throws(RPCError) {
    for (i, m) in members.enumerated() where used & (1 << UInt64(i)) == 0 {
      throw error("unknown param \"\(m.name)\"", param: m.name)
    }
  }

  mutating func key() throws(RPCError) -> String {
    guard let key = try optionalKey("key") else {
      throw error("\"key\" is required", param: "key")
    }
    keyRead = key
    return key
  }

  mutating func optionalKey(_ name: String) throws(RPCError) -> String? {
    guard let value = take(name) else { return nil }
    guard let key = value.stringValue else {
      throw error("\"\(name)\" must be a string", param: name)
    }
    if let problem = SwitchKey.problem(key) {
      throw error("\"\(name)\" is not a switch key: \(problem)", param: name)
    }
    keyRead = key
    return key
  }

  mutating func requiredBool(_ name: String) throws(RPCError) -> Bool {
    guard let value = try optionalBool(name) else {
      throw error("\"\(name)\" is required: true or false", param: name)
    }
    return value
  }

  mutating func optionalBool(_ name: String) throws(RPCError) -> Bool? {
    guard let value = take(name) else { return nil }
    guard let bool = value.boolValue else {
      throw error("\"\(name)\" must be true or false, not \(value.jsonTextForError)", param: name)
    }
    return bool
  }

  mutating func optionalString(_ name: String, maxBytes: Int) throws(RPCError) -> String? {
    guard let value = take(name) else { return nil }
    guard let text = value.stringValue else {
      throw error("\"\(name)\" must be a string", param: name)
    }
    if text.utf8.count > maxBytes {
      throw error("\"\(name)\" is longer than \(maxBytes) bytes", param: name)
    }
    // Stored and sent on: a U+0000 broke every varlink client built on
    // systemd's JSON code, which cannot hold one in a string (an audit).
    if text.utf8.contains(0) {
      throw error("\"\(name)\" must not contain U+0000", param: name)
    }
    return text
  }

  mutating func optionalInt(_ name: String, in range: ClosedRange<Int64>) throws(RPCError) -> Int64?
  {
    guard let value = take(name) else { return nil }
    guard let number = value.int64Value, range.contains(number) else {
      throw error(
        "\"\(name)\" must be a whole number from \(range.lowerBound) to \(range.upperBound)",
        param: name)
    }
    return number
  }

  /// `for` (seconds) or `until` (a time in the future, at most a year
  /// ahead), which exclude each other (PROTOCOL.md, "Time parameters").
  /// With `mayTry`, `confirmWithin` (1–3600 seconds) and
  /// `revertOnDisconnect` (only with it, default true), which exclude both.
  mutating func optionalLasting(mayTry: Bool = false) throws(RPCError) -> Lasting? {
    let trial =
      mayTry ? try optionalInt(WireField.confirmWithin, in: 1...Lasting.longestTrialSeconds) : nil
    let onDisconnect = mayTry ? try optionalBool(WireField.revertOnDisconnect) : nil
    if onDisconnect != nil && trial == nil {
      throw error(
        "\"revertOnDisconnect\" goes only with \"confirmWithin\"",
        param: WireField.revertOnDisconnect)
    }
    let lasting = try optionalTimedLasting()
    guard let trial else { return lasting }
    if lasting != nil {
      throw error(
        "\"confirmWithin\" excludes \"for\" and \"until\": give one",
        param: WireField.confirmWithin)
    }
    return .confirmWithin(seconds: trial, revertOnDisconnect: onDisconnect ?? true)
  }

  private mutating func optionalTimedLasting() throws(RPCError) -> Lasting? {
    let seconds = try optionalInt(WireField.for, in: 1...Lasting.longestSeconds)
    guard let value = take(WireField.until) else { return seconds.map { .seconds($0) } }
    if seconds != nil {
      throw error("\"for\" and \"until\" exclude each other: give one", param: WireField.until)
    }
    guard let text = value.stringValue, let time = Timestamp.milliseconds(rfc3339: text) else {
      throw error(
        "\"until\" must be an RFC 3339 time like \"2026-12-02T16:00:00.000Z\" or"
          + " \"2026-12-02T17:00:00+01:00\"", param: WireField.until)
    }
    let now = wallClockNow()
    guard time > now else { throw error("\"until\" is not in the future", param: WireField.until) }
    guard time - now <= Lasting.longestSeconds * 1000 else {
      throw error("\"until\" is more than a year ahead", param: WireField.until)
    }
    return .until(time)
  }

  mutating func optionalRevision(_ name: String) throws(RPCError) -> Int64? {
    try optionalInt(name, in: 0...Int64.max)
  }

  /// `user`: a uid, or `"*"` (every user) where `everyone` allows it.
  mutating func optionalUser(everyone: Bool) throws(RPCError) -> Viewpoint? {
    guard let value = take(WireField.user) else { return nil }
    if everyone, value.stringValue == WireField.everyUser { return .everyone }
    // 4294967295 is (uid_t)-1, which the kernel reserves for "no uid"
    // (setresuid leaves an id unchanged when given it): no user has it.
    guard let number = value.int64Value, let uid = UInt32(exactly: number), uid != .max else {
      let uids = "a uid (a whole number from 0 to 4294967294)"
      let choices = everyone ? uids + " or \"*\"" : uids
      throw error("\"user\" must be \(choices)", param: WireField.user)
    }
    return .user(uid)
  }

  mutating func optionalPatterns(_ name: String, max: Int) throws(RPCError) -> [KeyPattern]? {
    guard let value = take(name) else { return nil }
    guard let items = value.arrayValue else {
      throw error("\"\(name)\" must be an array of key patterns", param: name)
    }
    if items.isEmpty {
      throw error("\"\(name)\" is empty: leave it out to watch every switch", param: name)
    }
    if items.count > max { throw error("\"\(name)\" has more than \(max) patterns", param: name) }
    var patterns: [KeyPattern] = []
    for item in items {
      guard let text = item.stringValue else {
        throw error("\"\(name)\" must hold strings", param: name)
      }
      switch KeyPattern.parse(text) {
      case .success(let pattern): patterns.append(pattern)
      case .failure:
        throw error(
          "\"\(text)\" is not a key pattern: give a key or a prefix ending in *", param: name)
      }
    }
    return patterns
  }
}

extension JSONValue {
  /// A short rendering for error messages, cut at 40 bytes.
  fileprivate var jsonTextForError: String {
    let text = jsonText
    return text.utf8.count > 40
      ? String(decoding: Array(text.utf8.prefix(40)), as: UTF8.self) + "…" : text
  }
}

/// Milliseconds since the epoch on the wall clock, for checking an `until`.
private func wallClockNow() -> Int64 {
  var ts = timespec()
  clock_gettime(CLOCK_REALTIME, &ts)
  return Int64(ts.tv_sec) * 1000 + Int64(ts.tv_nsec) / 1_000_000
}

extension Method {
  /// The method named `name` on the wire, nil for none (every request
  /// asks; `init(rawValue:)` is a string switch, ~1k instructions).
  public static func named(_ name: String) -> Method? {
    var name = name
    return name.withUTF8 { named(bytes: $0) }
  }

  /// The method whose name is `bytes` (UTF-8), nil for none, without a
  /// String made or hashed for it (~150 instructions; a String made and
  /// hashed into a table was ~550).
  public static func named(bytes: UnsafeBufferPointer<UInt8>) -> Method? {
    guard let first = bytes.first else { return nil }
    for (name, method) in spelled where name.count == bytes.count && name[0] == first {
      if name.withUnsafeBufferPointer({ memcmp($0.baseAddress!, bytes.baseAddress!, name.count) })
        == 0
      {
        return method
      }
    }
    return nil
  }

  private static let spelled: [([UInt8], Method)] = allCases.map { (Array($0.rawValue.utf8), $0) }
}
