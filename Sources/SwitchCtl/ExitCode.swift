import Glibc
import SwitchProtocol

/// switchctl's exit status (docs/protocol.md, "switchctl"). A struct, not an enum,
/// because `is-on` reuses 1 for "off" and an enum cannot name one value twice.
public struct ExitCode: RawRepresentable, Equatable, Sendable {
  public var rawValue: Int32
  public init(rawValue: Int32) { self.rawValue = rawValue }

  public static let success = ExitCode(rawValue: 0)
  /// Failed for a reason no other code names.
  public static let failure = ExitCode(rawValue: 1)
  /// `is-on`: the switch is off, or disabled and so not in effect.
  public static let isOff = ExitCode(rawValue: 1)
  public static let usage = ExitCode(rawValue: 2)
  public static let readOnly = ExitCode(rawValue: 3)
  public static let disabled = ExitCode(rawValue: 4)
  public static let unknownSwitch = ExitCode(rawValue: 5)
  public static let permissionDenied = ExitCode(rawValue: 6)
  public static let unreachable = ExitCode(rawValue: 7)
  public static let conflict = ExitCode(rawValue: 8)

  /// Every status switchctl exits with, once each (`isOff` is `failure`'s
  /// number): the rows of the exit status tables in docs/protocol.md and
  /// switchctl(1), which DocumentedTablesTests compares with this list.
  public static let allCases: [ExitCode] = [
    .success, .failure, .usage, .readOnly, .disabled, .unknownSwitch, .permissionDenied,
    .unreachable, .conflict,
  ]

  /// The status for an error the daemon answered with. Codes this build does
  /// not know (a newer daemon) are plain failures.
  public init(_ code: RPCErrorCode) {
    switch code {
    case .readOnly: self = .readOnly
    case .disabled: self = .disabled
    case .unknownSwitch: self = .unknownSwitch
    case .permissionDenied: self = .permissionDenied
    case .conflict: self = .conflict
    // switchctl only sends params it built from the command line, so a
    // refusal of them means the arguments were wrong (`--since` past the
    // current revision, `--limit` above the daemon's page size).
    case .invalidParams: self = .usage
    default: self = .failure
    }
  }
}

/// Why a command failed: the one place that turns every failure into the
/// sentence on stderr and the exit status.
enum Failure: Error {
  /// The daemon refused the call.
  case remote(RemoteError)
  /// The conversation with the daemon broke down.
  case client(ClientError)
  /// The daemon answered with a result or event that lacks a member
  /// switchctl reads, or has one of another type (docs/protocol.md).
  case undecodable(WireDecodingError)
  /// The command line was wrong.
  case usage(UsageError)
  /// switchctl's own work failed (the file `backup` writes): one sentence,
  /// without the `switchctl: ` prefix.
  case local(String)

  /// The exit status.
  var exitCode: ExitCode {
    switch self {
    case .remote(let error): return ExitCode(error.code)
    case .client(.unreachable), .client(.notASocket): return .unreachable
    // The path came from the caller (--socket, $SWITCHD_SOCKET): no daemon
    // can ever be reached there, so the command line is what is wrong.
    case .client(.pathTooLong), .client(.varlinkSocket): return .usage
    case .client, .undecodable, .local: return .failure
    case .usage: return .usage
    }
  }

  /// The lines for stderr, each without its newline: one sentence, plus a
  /// hint for usage errors and each problem of a refused configuration.
  var lines: [String] {
    switch self {
    case .remote(let error): return Output.refusal(error)
    // Escaped as the daemon's sentences are: these repeat what the command
    // line gave (an unknown command, a user, a path), which may hold a
    // terminal escape or a newline.
    case .client(let error): return ["switchctl: " + Output.printable(error.sentence)]
    case .undecodable(let error): return ["switchctl: " + Self.sentence(error)]
    case .usage(let error):
      return ["switchctl: " + Output.printable(error.message), Output.printable(error.hint)]
    case .local(let sentence): return ["switchctl: " + Output.printable(sentence)]
    }
  }
}

extension Failure {
  /// What `--json` prints on stdout: the daemon's error object as it came
  /// (`{"code","message","data"}`), or one in the same shape for a failure
  /// switchctl found itself (`code` null; `data.name` `Unreachable` when
  /// switchd cannot be reached, `Usage` for a socket path that cannot be
  /// one, else `ClientFailure`).
  var jsonObject: JSONValue {
    switch self {
    case .remote(let error):
      return .object([
        JSONMember("code", .int(Int64(error.code.rawValue))),
        JSONMember("message", .string(error.message)),
        JSONMember("data", error.data),
      ])
    case .client(let error):
      let name =
        switch exitCode {
        case .unreachable: "Unreachable"
        case .usage: "Usage"
        default: "ClientFailure"
        }
      return Self.localObject(error.sentence, name: name)
    case .undecodable(let error):
      return Self.localObject(Self.sentence(error), name: "ClientFailure")
    case .usage(let error):
      return Self.localObject(error.message, name: "Usage")
    case .local(let sentence):
      return Self.localObject(sentence, name: "ClientFailure")
    }
  }

  private static func sentence(_ error: WireDecodingError) -> String {
    "switchd sent a reply switchctl does not understand: \(error)"
  }

  private static func localObject(_ sentence: String, name: String) -> JSONValue {
    .object([
      JSONMember("code", .null), JSONMember("message", .string(sentence)),
      JSONMember("data", .object([JSONMember("name", .string(name))])),
    ])
  }
}

/// `strerror` as a Swift string.
func describeErrno(_ code: Int32) -> String {
  guard let text = strerror(code) else { return "error \(code)" }
  return String(cString: text)
}
