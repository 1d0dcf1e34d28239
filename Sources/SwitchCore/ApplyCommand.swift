/// The program that makes a switch's value real (`ExecApply=`, CONFIG.md):
/// an absolute path and its arguments, and how long it may run.
public struct ApplyCommand: Equatable, Hashable, Sendable {
  /// The program's absolute path first, then its arguments, exactly as passed.
  public var arguments: [String]
  /// `ApplyTimeoutSec=` in milliseconds (default 10 s).
  public var timeoutMilliseconds: Int

  public static let defaultTimeoutMilliseconds = 10_000

  public init(arguments: [String], timeoutMilliseconds: Int = defaultTimeoutMilliseconds) {
    self.arguments = arguments
    self.timeoutMilliseconds = timeoutMilliseconds
  }

  /// The program's path.
  public var path: String { arguments.first ?? "" }

  /// The reason a command that ran too long fails with: `timed out after 5s`.
  public var timeoutReason: String { "timed out after \(Self.seconds(timeoutMilliseconds))s" }

  /// Milliseconds as seconds without needless digits: 5000 → "5", 1500 → "1.5".
  public static func seconds(_ milliseconds: Int) -> String {
    let whole = milliseconds / 1000
    let fraction = milliseconds % 1000
    if fraction == 0 { return "\(whole)" }
    var digits = String(fraction + 1000).dropFirst()  // three digits, leading zeros kept
    while digits.hasSuffix("0") { digits = digits.dropLast() }
    return "\(whole).\(digits)"
  }

  /// Splits an `ExecApply=` value into words: white space separates,
  /// `"double quotes"` group (and are removed), nothing else is special —
  /// no `$VAR`, `%`, `;`, backslash or single quotes. `"a"b` is one word `ab`;
  /// `""` is an empty word.
  /// - Returns: the words, or what is wrong (an unclosed quote, nothing at all).
  public static func split(_ text: String) -> Result<[String], SplitProblem> {
    var words: [String] = []
    var current: [UInt8] = []
    var inWord = false
    var quoted = false
    for byte in text.utf8 {
      if quoted {
        if byte == UInt8(ascii: "\"") {
          quoted = false
        } else {
          current.append(byte)
        }
      } else if byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") {
        if inWord {
          words.append(String(decoding: current, as: UTF8.self))
          current.removeAll(keepingCapacity: true)
          inWord = false
        }
      } else if byte == UInt8(ascii: "\"") {
        quoted = true
        inWord = true
      } else {
        current.append(byte)
        inWord = true
      }
    }
    if quoted { return .failure(.unclosedQuote) }
    if inWord { words.append(String(decoding: current, as: UTF8.self)) }
    if words.isEmpty { return .failure(.empty) }
    return .success(words)
  }

  /// Why an `ExecApply=` value cannot be split.
  public enum SplitProblem: Error, Equatable, Sendable {
    case empty
    case unclosedQuote
  }

  /// Parses `ApplyTimeoutSec=`: a positive number of seconds, with at most
  /// three decimals (`5`, `0.5`), up to a day. Nil when it is not one.
  public static func parseTimeout(_ text: String) -> Int? {
    let parts = text.split(separator: ".", omittingEmptySubsequences: false)
    guard parts.count <= 2, let wholeText = parts.first, !wholeText.isEmpty,
      wholeText.utf8.count <= 6, wholeText.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }),
      let whole = Int(wholeText)
    else { return nil }
    var milliseconds = whole * 1000
    if parts.count == 2 {
      let fraction = parts[1]
      guard !fraction.isEmpty, fraction.utf8.count <= 3,
        fraction.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }), let digits = Int(fraction)
      else { return nil }
      var scaled = digits
      for _ in fraction.utf8.count..<3 { scaled *= 10 }
      milliseconds += scaled
    }
    guard milliseconds > 0, milliseconds <= 86_400_000 else { return nil }
    return milliseconds
  }
}
