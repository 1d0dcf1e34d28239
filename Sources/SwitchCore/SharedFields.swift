/// A value type's fields in one shared box, copied on write: a copy of the
/// value is one retain, not one per String, array and table it holds.
/// `SwitchDefinition`, `PolicyRule` and `Catalog` keep theirs in one: they
/// are copied into every write's decision, outcome and answer (issue 26,
/// callgrind).
///
/// The box is changed only while uniquely referenced (`fields`' `_modify`):
/// a box that is shared, across threads too, is never written.
struct SharedFields<Fields>: @unchecked Sendable where Fields: Sendable {
  private final class Box {
    var fields: Fields
    init(_ fields: Fields) { self.fields = fields }
  }

  private var box: Box

  init(_ fields: Fields) { box = Box(fields) }

  /// Read in place (no copy of the whole), written into a box of its own.
  var fields: Fields {
    _read { yield box.fields }
    _modify {
      if !isKnownUniquelyReferenced(&box) { box = Box(box.fields) }
      yield &box.fields
    }
  }

  /// Whether both share one box (then their fields are equal).
  func sharesBox(with other: SharedFields) -> Bool { box === other.box }
}

extension SharedFields: Equatable where Fields: Equatable {
  static func == (a: SharedFields, b: SharedFields) -> Bool {
    a.sharesBox(with: b) || a.fields == b.fields
  }
}
