/// Enough of a long text to recognise it in a message, without flooding a
/// log or a terminal: its first `limit` Unicode scalars and "…"; a text no
/// longer than that, whole. (A bad configuration line, a malformed key on
/// switchctl's command line.)
public func excerpt(_ text: some StringProtocol, limit: Int) -> String {
  let scalars = text.unicodeScalars
  guard scalars.count > limit else { return String(text) }
  var cut = String.UnicodeScalarView()
  cut.append(contentsOf: scalars.prefix(limit))
  return String(cut) + "…"
}
