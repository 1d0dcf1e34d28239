import Glibc
import SwitchProtocol
import SwitchTestSupport
import Testing

@testable import SwitchCtl

/// A console that keeps what switchctl prints, and can stop `watch` after
/// a number of lines.
final class CapturedConsole: Console {
  var outLines: [String] = []
  var errLines: [String] = []
  /// `watch` stops once this many lines are out; nil never stops it.
  var stopAfter: Int?

  init(stopAfter: Int? = nil) {
    self.stopAfter = stopAfter
  }

  var wantsMore: Bool { stopAfter.map { outLines.count < $0 } ?? true }
  func out(_ lines: [String]) { outLines += lines }
  func err(_ lines: [String]) { errLines += lines }
}

/// Runs switchctl in-process with a captured console.
func runCtl(
  _ arguments: [String], environment: Environment = Environment.fixed([:]),
  stopAfter: Int? = nil
) -> (code: ExitCode, out: [String], err: [String]) {
  let console = CapturedConsole(stopAfter: stopAfter)
  let code = SwitchCtl.run(arguments, environment: environment, console: console)
  return (code, console.outLines, console.errLines)
}

extension Environment {
  /// An environment with exactly these variables, uid 1000, and no files.
  static func fixed(
    _ variables: [String: String], uid: UInt32 = 1000, files: Set<String> = []
  ) -> Environment {
    Environment(variables: variables, uid: uid, fileExists: { files.contains($0) })
  }
}

/// Parses JSON text that a test wrote, trapping on a typo in the test.
func json(_ text: String) -> JSONValue {
  try! JSONParser.parse(text, maxDepth: 64)
}

extension DaemonFixture {
  /// One RPC call, straight to the daemon, for comparing with switchctl.
  func call(_ method: SwitchProtocol.Method, _ params: [JSONMember]) throws -> JSONValue {
    let client = try DaemonClient.connect(to: socketPath, receiveTimeout: 30)
    return try client.call(method, params).get()
  }
}

/// A Unix socket listening at `path`, as a fake daemon's (a test plays
/// whatever answers at the socket).
func listeningSocket(at path: String) throws -> Int32 {
  let listener = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
  var address = sockaddr_un()
  address.sun_family = sa_family_t(AF_UNIX)
  withUnsafeMutableBytes(of: &address.sun_path) { raw in
    for (index, byte) in path.utf8.enumerated() { raw[index] = byte }
  }
  let bound = withUnsafePointer(to: &address) {
    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
      bind(listener, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
    }
  }
  try #require(bound == 0 && listen(listener, 8) == 0)
  return listener
}
