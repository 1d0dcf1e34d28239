import CShim
import Glibc
import SwitchCore
import SwitchSystem
import SwitchTestSupport

@testable import SwitchDaemon

/// A whole `Server` in this process, on a temp socket and database, with its
/// writer thread: the test's thread turns the loop (`Server.turn`) and is
/// the client too, so it decides exactly when the peer reads.
final class LoopHarness {
  let directory: String
  let socketPath: String
  let server: Server
  /// The writer thread's kernel id.
  let writerThreadID: Int32

  /// `switches` gives the schema, from the harness's directory (for appliers).
  init(
    daemonConf: String,
    switches: (_ directory: String) throws -> String = { _ in "[wifi]\nLabel=Wi-Fi\nDefault=on\n" }
  ) throws {
    directory = try makeTemporaryDirectory("switchd-loop")
    socketPath = directory + "/switchd.sock"
    let config = directory + "/config"
    mkdir(config, 0o755)
    mkdir(config + "/switches.d", 0o755)
    try writeWholeFile(config + "/switchd.conf", daemonConf)
    try writeWholeFile(config + "/switches.d/10-test.conf", try switches(directory))
    let loaded = ConfigLoader.load(directory: config)
    guard let catalog = loaded.catalog else { throw FixtureError("config: \(loaded.errors)") }
    let log = Log(level: catalog.settings.logLevel)
    let access = AccessRules.resolve(catalog.settings, log: log)
    let jobs = BlockingQueue<WriterJob>()
    let outputs = BlockingQueue<WriterOutput>()
    let outputSpares = BlockingQueue<WriterOutput.Spare>()
    let wakeFD = shim_eventfd()
    let started = try Writer.startThread(
      databasePath: directory + "/switches.db", configDirectory: config, catalog: catalog,
      access: access, log: log, jobs: jobs, outputs: outputs, outputSpares: outputSpares,
      wakeFD: wakeFD)
    writerThreadID = started.threadID
    let listener = try Listener.bind(path: socketPath, mode: 0o600)
    server = try Server(
      listener: listener, databasePath: directory + "/switches.db", configDirectory: config,
      catalog: catalog, access: access, started: started, jobs: jobs, outputs: outputs,
      outputSpares: outputSpares, wakeFD: wakeFD, signalFD: -1,
      notifier: Notifier(environment: [:]), log: log)
  }

  /// Stops the loop as SIGTERM would and waits for the writer to end.
  func stop() {
    server.beginShutdown("the test ended")
    server.run()
    removeTree(directory)
  }

  /// A non-blocking client connection, accepted by turning the loop.
  func connect() throws -> Int32 {
    let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue | SOCK_CLOEXEC.rawValue), 0)
    let address = try UnixSocketAddress(socketPath)
    let rc = address.withSockaddr { Glibc.connect(fd, $0, $1) }
    guard rc == 0 else { throw FixtureError("connect failed: errno \(errno)") }
    _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
    return fd
  }
}
