// How the encoders write member names: always a `WireField` name, through
// `JSONWriter.member`. Hot paths (every change, every request) append bytes
// made once from the same calls (`fixedBytes`), as fast as a literal.

extension JSONWriter {
  /// Appends `,"name":`.
  mutating func member(_ name: String) {
    append(UInt8(ascii: ","))
    self.name(name)
  }

  /// Appends `{"name":`, an object's first member.
  mutating func firstMember(_ name: String) {
    append(UInt8(ascii: "{"))
    self.name(name)
  }

  /// Appends `"name":`, for members whose separator the caller wrote.
  mutating func name(_ name: String) {
    append(UInt8(ascii: "\""))
    append(utf8: name)
    append(UInt8(ascii: "\""))
    append(UInt8(ascii: ":"))
  }
}

/// Bytes made once and kept until the process exits: the fixed parts of
/// the objects. Appending them costs no reference counting, which an array
/// in a `static let` does on every append (callgrind: 4% of the
/// instructions that encoding a write's answer and its event takes).
struct FixedBytes: @unchecked Sendable {
  // Never written after `fixedBytes` fills it, and never freed.
  let buffer: UnsafeBufferPointer<UInt8>
}

/// The bytes `body` writes, as `FixedBytes`.
func fixedBytes(_ body: (inout JSONWriter) -> Void) -> FixedBytes {
  var w = JSONWriter(capacity: 64)
  body(&w)
  let buffer = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: w.count)
  _ = buffer.initialize(from: w.bytes)
  return FixedBytes(buffer: UnsafeBufferPointer(buffer))
}

extension JSONWriter {
  /// Inlined: a call cost ~20 instructions besides the copy, and a Switch
  /// object written from its definition appends ~14 parts (callgrind).
  @inline(__always)
  mutating func raw(_ part: FixedBytes) {
    append(UnsafeRawBufferPointer(part.buffer))
  }
}
