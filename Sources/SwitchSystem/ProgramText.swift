/// Text a program printed, as switchd keeps and shows it (a reason, a
/// message): bytes that are not UTF-8 and NUL bytes become U+FFFD. A
/// U+0000 in a stored reason broke every varlink client built on systemd's
/// JSON code, which cannot hold one in a string (an audit: `List` failed
/// for all switches, and `History` and `Watch` on the change for good).
public func programText(_ bytes: some Collection<UInt8>) -> String {
  let text = String(decoding: bytes, as: UTF8.self)
  guard text.utf8.contains(0) else { return text }
  var scalars = String.UnicodeScalarView()
  scalars.append(contentsOf: text.unicodeScalars.map { $0 == "\u{0}" ? "\u{FFFD}" : $0 })
  return String(scalars)
}
