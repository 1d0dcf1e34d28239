import SwitchProtocol

/// What `why` says about a switch: the switch, its latest history entry, and
/// the entries in which it became held or disabled by its current holder.
///
/// Built from the switch and its history pages, newest first, so the search
/// is a pure function tests feed with canned JSON.
struct Explanation: Equatable {
  var switchObject: Sent<SwitchObject>
  var lastChange: Sent<EntryObject>?
  var heldSince: Sent<EntryObject>?
  var disabledSince: Sent<EntryObject>?
  /// `status.readBack`'s entry for the switch: its re-applications and its
  /// watch program (nil when it reads nothing back). Not in `--json`.
  var readBack: ReadBackReport?
  /// Whether any entry has been seen; the first one seen is the last change.
  private var sawEntries = false

  init(switchObject: Sent<SwitchObject>) {
    self.switchObject = switchObject
  }

  /// Whether older history could still fill in a hold's "since".
  var needsOlderHistory: Bool {
    let state = switchObject.value.state
    return (state.heldBy != nil && heldSince == nil)
      || (state.disabledBy != nil && disabledSince == nil)
  }

  /// Takes in one page of the switch's history, newer pages first.
  ///
  /// "Since when" is the entry in which the current holder took hold
  /// (`state` names it and `previous` does not), not the latest lock: an
  /// administrator re-locking only to change the reason does not restart it.
  mutating func scan(_ entries: [Sent<EntryObject>]) {
    if !sawEntries, let first = entries.first {
      lastChange = first
      sawEntries = true
    }
    let state = switchObject.value.state
    for entry in entries {
      let (now, before) = (entry.value.state, entry.value.previous)
      if heldSince == nil, let held = state.heldBy, now.heldBy == held, before.heldBy != held {
        heldSince = entry
      }
      if disabledSince == nil, let by = state.disabledBy, now.disabledBy == by,
        before.disabledBy != by
      {
        disabledSince = entry
      }
      if !needsOlderHistory { return }
    }
  }

  /// `why --json`: `{"switch", "lastChange", "heldSince", "disabledSince"}`,
  /// each as the daemon sent it.
  var json: JSONValue {
    .object([
      JSONMember(WireField.switch, switchObject.json),
      JSONMember("lastChange", lastChange?.json ?? .null),
      JSONMember("heldSince", heldSince?.json ?? .null),
      JSONMember("disabledSince", disabledSince?.json ?? .null),
    ])
  }
}
