/// What polkit is asked before a call runs under `Authorization=polkit`
/// (docs/semantics.md "polkit"), decided here without I/O: the actions in
/// the order they are asked (the first one granted is the caller's right
/// for that call, and for nothing after it), and the details a rule reads
/// with `action.lookup(...)`. nil: the call needs no right, or the caller
/// has it already (root and the daemon's uid are never asked).
public struct PolkitQuestion: Equatable, Sendable {
  public enum Action: String, Sendable, CaseIterable {
    /// set, toggle and reset of a system switch.
    case write = "io.switchd.write"
    /// lock, unlock, disable, enable, apply, reload, backup, writing a
    /// read-only switch, acting as another user. Implies `write` (the
    /// shipped io.switchd.policy says so to polkit).
    case administer = "io.switchd.administer"
  }

  public var actions: [Action]
  /// `key`, `checked`, `user` and `method`, always all four, in that
  /// order; then `polkit.message` for a call the shipped action's message
  /// cannot name (`prompt(key:user:purpose:)`).
  public var details: [(name: String, value: String)]
  /// The switch asked about (nil for a call on none).
  public var key: String?
  /// The value a set, toggle or reset would give: a grant is for that
  /// value only (`Caller.granted(_:checked:)`). nil for the other calls.
  public var checked: Bool?

  public static func == (a: PolkitQuestion, b: PolkitQuestion) -> Bool {
    a.actions == b.actions && a.details.elementsEqual(b.details) { $0 == $1 } && a.key == b.key
      && a.checked == b.checked
  }

  /// The details of every check: the switch (`""` for a call on none), the
  /// value it would have after the call (`"true"`/`"false"`, `""` when the
  /// call names no switch), the uid whose value it is (the caller's own
  /// unless it names another; `*` for a read of every user's), and the
  /// method (`reload` and `backup` both name no switch: a rule tells them
  /// apart by it).
  public static func details(
    key: String?, checked: Bool?, user: String, method: String, prompt: String? = nil
  ) -> [(name: String, value: String)] {
    var details = [
      ("key", key ?? ""), ("checked", checked.map { $0 ? "true" : "false" } ?? ""),
      ("user", user), ("method", method),
    ]
    if let prompt { details.append(("polkit.message", prompt)) }
    return details
  }

  /// The sentence an authentication agent shows for an administering call
  /// that names no switch (`purpose`: what it does, "reload switchd's
  /// configuration"), or a read as another user: the shipped
  /// io.switchd.administer says "administer switches ($(key))", which read
  /// "administer switches ()" for `reload`. polkit shows it in place of the
  /// action's message (it takes details only from a trusted caller: root
  /// or the actions' owner, the `switchd` user, as switchd runs). nil for
  /// the calls that message names well (a switch administered).
  static func prompt(key: String?, user: String?, purpose: String?) -> String? {
    let ask = "Authentication is required to "
    if let user {
      let whose = user == "*" ? "every user's" : "user \(user)'s"
      return ask + "read \(whose) " + (key.map { "value of the switch \($0)." } ?? "switches.")
    }
    guard key == nil else { return nil }
    return ask + (purpose ?? "administer switches") + "."
  }

  /// A method only administrators may call (lock, unlock, disable, enable,
  /// apply, reload, backup), asked before its params are checked, as the
  /// order of checks puts PermissionDenied for the method first. `checked`
  /// informs a rule only: these calls set no value, so the grant is not
  /// bound to one.
  public static func administering(
    method: String, key: String?, checked: Bool?, caller: Caller, purpose: String? = nil
  ) -> PolkitQuestion? {
    if caller.isAdmin { return nil }
    return PolkitQuestion(
      actions: [.administer],
      details: details(
        key: key, checked: checked, user: "\(caller.subject)", method: method,
        prompt: prompt(key: key, user: nil, purpose: purpose)),
      key: key, checked: nil)
  }

  /// A read (get, list, watch, history) naming another user, or every user
  /// (`"*"`): acting as another user is administering (docs/semantics.md
  /// "polkit"), asked where the builtin rules would refuse it (after
  /// UnknownSwitch). A read of the caller's own world never asks. The
  /// `user` detail is the uid named, or `*`.
  public static func reading(
    method: String, key: String?, named: Viewpoint?, caller: Caller
  ) -> PolkitQuestion? {
    guard !caller.isAdmin, let named else { return nil }
    let user: String
    switch named {
    case .user(let uid):
      if uid == caller.uid { return nil }
      user = "\(uid)"
    case .everyone:
      user = "*"
    }
    return PolkitQuestion(
      actions: [.administer],
      details: details(
        key: key, checked: nil, user: user, method: method,
        prompt: prompt(key: key, user: user, purpose: nil)),
      key: key, checked: nil)
  }

  /// set, toggle or reset of a declared switch, asked after UnknownSwitch
  /// and before Disabled and ReadOnly (the order of checks).
  /// - Parameters:
  ///   - state: the switch's state as the loop last saw it committed.
  ///   - current: the value being changed (the named user's, for a user-scope switch).
  ///   - caller: the caller acting as the request's `user`.
  public static func changing(
    _ operation: Operation, key: String, scope: Scope, state: SwitchState, current: Bool,
    defaultChecked: Bool, caller: Caller
  ) -> PolkitQuestion? {
    if caller.isAdmin { return nil }
    let after: Bool
    switch operation {
    case .set(let checked, _): after = checked
    case .toggle: after = !current
    case .reset: after = defaultChecked
    default:
      return administering(method: operation.verb, key: key, checked: current, caller: caller)
    }
    let actions: [Action]
    if caller.namesAnotherUser {
      actions = [.administer]  // acting as another user is an administrator's
    } else if scope == .user {
      return nil  // everyone writes their own value
    } else if caller.mayWrite {
      return nil
    } else if state.readOnly && !state.valueFixed && !state.disabled {
      // An administrator may write under a hold that does not fix the value;
      // one who may only write gets the ReadOnly refusal from the rules.
      actions = [.administer, .write]
    } else {
      actions = [.write]
    }
    return PolkitQuestion(
      actions: actions,
      details: details(
        key: key, checked: after, user: "\(caller.subject)", method: operation.verb),
      key: key, checked: after)
  }
}
