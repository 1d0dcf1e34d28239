import SwitchCore
import SwitchProtocol

// Per-user reads: whose world a request sees (its `user` param), and the
// Switch objects of user-scope switches as one user reads them. Who sees
// what is SwitchCore's (`Visibility`); this file only carries it.

extension Server {
  /// The viewpoint of a read by `caller`; nil when the read was refused
  /// (answered here) or, under Authorization=polkit, parked to ask polkit
  /// whether the caller may read as the user it names: granted, the read
  /// runs again as an administrator for this call only.
  func viewpointOrAsk(
    _ named: Viewpoint?, _ pending: PendingRequest, on connection: Connection, caller: Caller,
    key: String?
  ) -> Viewpoint? {
    switch Rules.viewpoint(named, caller: caller, key: key) {
    case .success(let viewpoint):
      return viewpoint
    case .failure(let refusal):
      // A read sent as a notification has nobody to answer, and changes
      // nothing: it is neither asked about (polkit might ask the person)
      // nor refused.
      guard pending.answer != nil else { return nil }
      if caller.asksPolkit,
        let question = PolkitQuestion.reading(
          method: pending.method?.rawValue ?? "", key: key, named: named, caller: caller)
      {
        askPolkit(question, pending, on: connection, caller: caller)
      } else {
        fail(pending, on: connection, RPCError(refusal))
      }
      return nil
    }
  }

  /// Writes the Switch object at `position` as `viewpoint` reads it, with
  /// `writable` and `writableReason` for `caller`. A system switch's object
  /// is the cached one; a user-scope switch's is written from the loop's
  /// copy (no SQLite), as cheaply: its schema and switch-level members are
  /// encoded once.
  ///
  /// `keeping`: whether a system switch's object, and its schema members,
  /// are kept once encoded. A list of many switches (`SwitchLists`) keeps
  /// its own array of them, which kept objects would double: 5.3 MB more
  /// with 10,000 switches, and their templates ~3 MB.
  func writeSwitchAsSeen(
    _ w: inout JSONWriter, at position: Int, for caller: Caller, viewpoint: Viewpoint,
    keeping: Bool = true
  ) {
    let key = catalog.sortedKeys[position]
    guard encodings.isUserScoped(at: position), case .user(let uid) = viewpoint,
      case let hashed = HashedKey(key), let record = records[hashed],
      let template = encodings.template(at: position, definition: { catalog.switches[key] })
    else {
      let scope: Scope = encodings.isUserScoped(at: position) ? .user : .system
      guard let bytes = keeping ? encodedSwitch(at: position) : encodings.bytes(at: position)
      else {
        if !keeping { writeUnkeptSwitch(&w, at: position, for: caller, scope: scope) }
        return
      }
      // The State the object was encoded from: no look-up of the record.
      let writable =
        encodings.state(at: position).map { writability(key, state: $0, for: caller, scope: scope) }
        ?? writability(key, for: caller, scope: scope)
      WireEncoding.writeSwitch(&w, encoded: bytes, writable: writable)
      return
    }
    let state = record.state
    // Read in place: `userValues[key]` copied the key's table of users out.
    let own = userValues.index(forKey: hashed).flatMap { userValues[slot: $0][uid] }
    let seen = Visibility.value(record, own: own, defaultChecked: template.defaultChecked)
    let policy = policy(of: key, holding: state)
    // The members between `checked` and `effective` do not depend on
    // `checked`, and are every user's alike but a user's own timer.
    let middle: [UInt8]
    if let own, own.expiresAt != nil || own.pendingUntil != nil {
      var timed = state
      timed.expiresAt = own.expiresAt
      timed.pendingUntil = own.pendingUntil
      middle = WireEncoding.switchMiddle(
        template: template, state: timed,
        policySource: Rules.policySource(state: state, rule: policy))
    } else {
      middle = encodings.middle(at: position, template: template, state: state) {
        Rules.policySource(state: state, rule: policy)
      }
    }
    // The viewpoint was allowed, so `writable` is the caller's own.
    WireEncoding.writeSwitch(
      &w, template: template, checked: seen.checked, middle: middle,
      effective: seen.checked && !state.disabled, user: uid, revision: seen.revision,
      // A user-scope switch has no apply command, so nothing is read back.
      changedAt: seen.changedAt, observed: nil,
      writable: Rules.writability(
        key: key, state: state, policy: policy, caller: caller, scope: .user))
  }

  /// A user-scope switch as user `uid` reads it (`seen`), with `writable`
  /// and `writableReason` for `caller` acting as that user, encoded here
  /// whole: a write's answer, whose state need not be the loop's copy.
  func writeUserSwitch(
    _ w: inout JSONWriter, definition: SwitchDefinition, at position: Int?,
    seen: borrowing SwitchRecord, user uid: UInt32, for caller: borrowing Caller
  ) {
    let policy = policy(of: definition.key, holding: seen.state)
    // The caller as is for their own value (nearly every write): acting as
    // themselves made a copy of it, and destroyed it (callgrind).
    let writable =
      uid == caller.subject
      ? Rules.writability(
        key: definition.key, state: seen.state, policy: policy, caller: caller, scope: .user)
      : Rules.writability(
        key: definition.key, state: seen.state, policy: policy, caller: caller.acting(as: uid),
        scope: .user)
    WireEncoding.writeSwitch(
      &w, template: template(of: definition, at: position), record: seen,
      policySource: Rules.policySource(state: seen.state, rule: policy), user: uid,
      writable: writable)
  }

  /// The viewer's own values of user-scope switches, for the log reader to
  /// show them as of each change (`ReaderView`).
  func readerView(_ viewpoint: Viewpoint) -> ReaderView {
    guard case .user(let uid) = viewpoint else { return ReaderView(viewpoint: viewpoint) }
    var own: [String: UserValue] = [:]
    for (key, users) in userValues where catalog.switches[key]?.scope == .user {
      if let value = users[uid] { own[key] = value }
    }
    return ReaderView(viewpoint: viewpoint, own: own)
  }
}
