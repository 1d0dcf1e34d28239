/// The human accounts of `/etc/login.defs`: uids from `UID_MIN` to
/// `UID_MAX`, the range `useradd` gives people (system accounts such as
/// `www-data` or `nobody` lie outside it). Without `Writers=`, only these
/// accounts (and administrators) write system switches.
///
/// The file is the machine's, read by the daemon at start and at reload;
/// this is only its parser. Lines are `NAME VALUE` separated by white space,
/// `#` starts a comment line, the last occurrence of a name wins, and a value
/// may be quoted, decimal, octal (`0…`) or hexadecimal (`0x…`), as shadow's
/// `getdef` reads them. A missing or unreadable value takes its default, as
/// `useradd` does; a file whose `UID_MIN` is above its `UID_MAX` is not
/// trusted at all.
public enum LoginDefs {
  /// Where the machine keeps it.
  public static let path = "/etc/login.defs"
  /// Debian's and useradd's defaults.
  public static let defaultHumanUIDs: ClosedRange<UInt32> = 1000...60000

  /// The human uid range `bytes` (the file; nil when it is missing) describes.
  public static func humanUIDs(_ bytes: [UInt8]?) -> ClosedRange<UInt32> {
    guard let bytes else { return defaultHumanUIDs }
    var low = defaultHumanUIDs.lowerBound
    var high = defaultHumanUIDs.upperBound
    for line in bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: true) {
      let words = line.split(whereSeparator: { $0 == 0x20 || $0 == 0x09 || $0 == 0x0D })
      guard words.count >= 2, words[0].first != UInt8(ascii: "#") else { continue }
      let name = String(decoding: words[0], as: UTF8.self)
      guard name == "UID_MIN" || name == "UID_MAX" else { continue }
      let value = number(Array(words[1]))
      if name == "UID_MIN" {
        low = value ?? defaultHumanUIDs.lowerBound
      } else {
        high = value ?? defaultHumanUIDs.upperBound
      }
    }
    return low <= high ? low...high : defaultHumanUIDs
  }

  /// A uid as `strtoul(…, 0)` reads a whole word: decimal, `0` octal or `0x`
  /// hexadecimal, optionally in double quotes; nil for anything else or
  /// anything that does not fit a uid.
  static func number(_ word: [UInt8]) -> UInt32? {
    var digits = word[...]
    if digits.count >= 2, digits.first == UInt8(ascii: "\""), digits.last == UInt8(ascii: "\"") {
      digits = digits.dropFirst().dropLast()
    }
    var radix: UInt32 = 10
    if digits.count > 2,
      digits.starts(with: Array("0x".utf8)) || digits.starts(with: Array("0X".utf8))
    {
      radix = 16
      digits = digits.dropFirst(2)
    } else if digits.count > 1, digits.first == UInt8(ascii: "0") {
      radix = 8
      digits = digits.dropFirst()
    }
    guard !digits.isEmpty else { return nil }
    var value: UInt64 = 0
    for byte in digits {
      let digit: UInt32
      switch byte {
      case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt32(byte - UInt8(ascii: "0"))
      case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt32(byte - UInt8(ascii: "a")) + 10
      case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = UInt32(byte - UInt8(ascii: "A")) + 10
      default: return nil
      }
      guard digit < radix else { return nil }
      value = value * UInt64(radix) + UInt64(digit)
      guard value <= UInt64(UInt32.max) else { return nil }
    }
    return UInt32(value)
  }
}
