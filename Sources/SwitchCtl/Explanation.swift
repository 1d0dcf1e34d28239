import SwitchProtocol

/// What `why` says about a switch: the switch, its latest history entry, and
/// the entries in which it became held or disabled by its current holder.
///
/// Built from the switch and its history pages, newest first, so the search
/// is a pure function tests feed with canned JSON.
struct Explanation: Equatable {
  var switchObject: JSONValue
  var lastChange: JSONValue?
  var heldSince: JSONValue?
  var disabledSince: JSONValue?
  /// Whether any entry has been seen; the first one seen is the last change.
  private var sawEntries = false

  init(switchObject: JSONValue) {
    self.switchObject = switchObject
  }

  /// Whether older history could still fill in a hold's "since".
  var needsOlderHistory: Bool {
    (holder(WireField.heldBy) != nil && heldSince == nil)
      || (holder(WireField.disabledBy) != nil && disabledSince == nil)
  }

  /// Takes in one page of the switch's history, newer pages first.
  ///
  /// "Since when" is the entry in which the current holder took hold
  /// (`state` names it and `previous` does not), not the latest lock: an
  /// administrator re-locking only to change the reason does not restart it.
  mutating func scan(_ entries: [JSONValue]) {
    if !sawEntries, let first = entries.first {
      lastChange = first
      sawEntries = true
    }
    for entry in entries {
      if heldSince == nil, let held = holder(WireField.heldBy),
        tookHold(entry, WireField.heldBy, held)
      {
        heldSince = entry
      }
      if disabledSince == nil, let by = holder(WireField.disabledBy),
        tookHold(entry, WireField.disabledBy, by)
      {
        disabledSince = entry
      }
      if !needsOlderHistory { return }
    }
  }

  /// `why --json`: `{"switch", "lastChange", "heldSince", "disabledSince"}`.
  var json: JSONValue {
    .object([
      JSONMember(WireField.switch, switchObject),
      JSONMember("lastChange", lastChange ?? .null),
      JSONMember("heldSince", heldSince ?? .null),
      JSONMember("disabledSince", disabledSince ?? .null),
    ])
  }

  private func holder(_ field: String) -> JSONValue? {
    guard let value = switchObject[field], !value.isNull else { return nil }
    return value
  }

  private func tookHold(_ entry: JSONValue, _ field: String, _ holder: JSONValue) -> Bool {
    entry[WireField.state]?[field] == holder && entry[WireField.previous]?[field] != holder
  }
}
