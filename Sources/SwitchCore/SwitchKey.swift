/// Validation of switch keys: `^[a-z][a-z0-9]*([.-][a-z0-9]+)*$`, at most 128 bytes.
public enum SwitchKey {
  public static let maxBytes = 128

  /// Why `key` is not a valid switch key, or nil when it is.
  public static func problem(_ key: String) -> String? {
    // Checked in place (this runs for every request): no copy of the bytes.
    var key = key
    return key.withUTF8 { problem(bytes: $0) }
  }

  /// Whether `bytes` are a valid key, before any String is made of them
  /// (the request decoder's fast path).
  public static func isValid(bytes: UnsafeBufferPointer<UInt8>) -> Bool {
    problem(bytes: bytes) == nil
  }

  /// The length of the valid key at the start of `bytes` that the first
  /// `terminator` ends (a string's closing quote), found and checked in
  /// one pass: the request decoder's fast path found the quote, then
  /// checked the key in a second pass (~26 instructions a byte, callgrind).
  /// Nil when no terminator comes or the bytes before it are not a valid
  /// key (`problem` then says why). Agrees with `isValid` (tests).
  public static func validLength(
    _ bytes: UnsafeBufferPointer<UInt8>, endingAt terminator: UInt8
  ) -> Int? {
    guard let base = bytes.baseAddress, bytes.count > 0, isLower(base[0]) else { return nil }
    // A pointer walk: an index into the buffer cost ~19 instructions a byte.
    let end = base + bytes.count
    var cursor = base + 1
    var separatorLast = false
    while cursor < end {
      let b = cursor.pointee
      if isLower(b) || isDigit(b) {
        separatorLast = false
      } else if b == UInt8(ascii: ".") || b == UInt8(ascii: "-") {
        if separatorLast { return nil }
        separatorLast = true
      } else {
        let length = cursor - base
        return b == terminator && !separatorLast && length <= maxBytes ? length : nil
      }
      cursor += 1
    }
    return nil
  }

  private static func problem(bytes: UnsafeBufferPointer<UInt8>) -> String? {
    if bytes.isEmpty { return "a switch key cannot be empty" }
    if bytes.count > maxBytes { return "a switch key is at most \(maxBytes) bytes" }
    guard isLower(bytes[0]) else { return "a switch key starts with a lowercase letter a-z" }
    var previousWasSeparator = false
    for b in bytes {
      if isLower(b) || isDigit(b) {
        previousWasSeparator = false
      } else if b == UInt8(ascii: ".") || b == UInt8(ascii: "-") {
        if previousWasSeparator { return "a switch key has no two separators in a row" }
        previousWasSeparator = true
      } else {
        return "a switch key holds only a-z, 0-9, '.' and '-'"
      }
    }
    if previousWasSeparator { return "a switch key does not end with '.' or '-'" }
    return nil
  }

  public static func isValid(_ key: String) -> Bool { problem(key) == nil }

  /// Whether `prefix` begins some valid key (or is empty, which every key
  /// does): a `watch` pattern `PREFIX*` that no key can match is a typo,
  /// refused as an exact key of the same spelling is, not a watch that
  /// stays silent for ever.
  public static func isValidPrefix(_ prefix: String) -> Bool {
    if prefix.isEmpty || isValid(prefix) { return true }
    // Or a key's beginning up to a separator (`notifications.`), with room
    // for one more byte after it.
    guard let last = prefix.utf8.last, last == UInt8(ascii: ".") || last == UInt8(ascii: "-"),
      prefix.utf8.count < maxBytes
    else { return false }
    return isValid(String(prefix.dropLast()))
  }

  private static func isLower(_ b: UInt8) -> Bool { b &- UInt8(ascii: "a") < 26 }
  private static func isDigit(_ b: UInt8) -> Bool { b &- UInt8(ascii: "0") < 10 }
}

/// A `watch` pattern: an exact key, or a prefix ending in `*`.
public enum KeyPattern: Hashable, Sendable {
  case exact(String)
  case prefix(String)

  /// Parses a pattern, or returns why it is not one.
  public static func parse(_ text: String) -> Result<KeyPattern, PatternError> {
    if text.hasSuffix("*") {
      let prefix = String(text.dropLast())
      if prefix.contains("*") { return .failure(PatternError(pattern: text)) }
      guard SwitchKey.isValidPrefix(prefix) else {
        return .failure(PatternError(pattern: text))
      }
      return .success(.prefix(prefix))
    }
    if SwitchKey.isValid(text) { return .success(.exact(text)) }
    return .failure(PatternError(pattern: text))
  }

  public func matches(_ key: String) -> Bool {
    switch self {
    case .exact(let k): return k == key
    case .prefix(let p): return key.hasPrefix(p)
    }
  }
}

public struct PatternError: Error, Equatable, Sendable {
  public let pattern: String
}
