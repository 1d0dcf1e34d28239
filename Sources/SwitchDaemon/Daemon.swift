import CShim
import Glibc
import SwitchCore
import SwitchStore

/// The `switchd` command: flags, configuration, start-up, and the loop.
public enum Daemon {
  typealias Options = DaemonArguments.Options

  /// Runs switchd with `arguments` (without the program name); returns the exit status.
  public static func main(_ arguments: [String]) -> Int32 {
    let command: DaemonArguments.Command
    do {
      command = try DaemonArguments.parse(arguments)
    } catch {
      return usageError(error.message)
    }
    switch command {
    case .help:
      print(DaemonArguments.usage)
      return 0
    case .version:
      print("switchd \(SwitchdVersion.current)")
      return 0
    case .checkConfig(let directory):
      return checkConfig(directory)
    case .serve(let options):
      return serve(options, log: Log())
    }
  }

  private static func usageError(_ message: String) -> Int32 {
    printError("switchd: \(message)\nTry 'switchd --help'.")
    return 2
  }

  /// `--check-config`: every problem with file and line, like `nginx -t`.
  static func checkConfig(_ directory: String) -> Int32 {
    let loaded = ConfigLoader.load(directory: directory)
    for diagnostic in loaded.diagnostics {
      let kind = diagnostic.severity == .error ? "error" : "warning"
      printError("\(diagnostic.location): \(kind): \(diagnostic.message)")
    }
    let reported = Set(loaded.diagnostics.filter { $0.severity == .error }.map(\.description))
    for error in loaded.errors where !reported.contains(error) {
      printError("\(error)")
    }
    guard let catalog = loaded.catalog else {
      print("\(directory): \(loaded.errors.count) errors")
      return 1
    }
    print(
      "\(directory): ok, \(catalog.switches.count) switches, \(catalog.policyCount) policies, "
        + "\(catalog.warnings.count) warnings")
    return 0
  }

  static func environment() -> [String: String] {
    var env: [String: String] = [:]
    var p = environ
    while let entry = p.pointee {
      let text = String(cString: entry)
      if let eq = text.firstIndex(of: "=") {
        env[String(text[..<eq])] = String(text[text.index(after: eq)...])
      }
      p += 1
    }
    return env
  }

  static func serve(_ options: Options, log: Log) -> Int32 {
    signal(SIGPIPE, SIG_IGN)
    _ = shim_raise_nofile_limit()
    // Block the signals before any thread starts, so all of them inherit
    // the mask and the loop alone reads them from its signalfd.
    let signalFD = shim_signalfd_termination_and_reload()
    let env = environment()
    let uid = getuid()

    let loaded = ConfigLoader.load(directory: options.configDirectory)
    for diagnostic in loaded.diagnostics where diagnostic.severity == .warning {
      log.warning("\(diagnostic)")
    }
    guard let catalog = loaded.catalog else {
      for error in loaded.errors { log.error("\(error)") }
      log.error("the configuration in \(options.configDirectory) is invalid; not starting")
      return 1
    }
    log.setLevel(catalog.settings.logLevel)
    let socketPath =
      options.socket ?? catalog.settings.socket ?? DefaultPaths.socket(uid: uid, environment: env)
    let databasePath =
      options.database ?? catalog.settings.database
      ?? DefaultPaths.database(uid: uid, environment: env)

    do {
      try makeParentDirectory(of: databasePath)
    } catch {
      log.error("cannot create the directory for \(databasePath): \(error)")
      return 1
    }
    let writer: Writer
    let started: WriterOutput
    do {
      (writer, started) = try Writer.start(
        databasePath: databasePath, configDirectory: options.configDirectory, catalog: catalog,
        log: log)
    } catch {
      log.error("cannot open the database: \(error)")
      return 1
    }
    let listener: Listener
    if let activated = Listener.activated(environment: env, path: socketPath) {
      listener = activated
    } else {
      do {
        listener = try Listener.bind(path: socketPath, mode: catalog.settings.socketMode)
      } catch {
        log.error("cannot listen on \(socketPath): \(error)")
        return 1
      }
    }

    let jobs = BlockingQueue<WriterJob>()
    let outputs = BlockingQueue<WriterOutput>()
    let wakeFD = shim_eventfd()
    let notifier = Notifier(environment: env)
    let server: Server
    do {
      server = try Server(
        listener: listener, databasePath: databasePath, catalog: catalog,
        groups: started.catalog?.groups ?? GroupIDs.resolve(catalog.settings, log: log),
        writerSnapshot: writer.snapshot, jobs: jobs, outputs: outputs, wakeFD: wakeFD,
        signalFD: signalFD, notifier: notifier, log: log)
    } catch {
      log.error("cannot start: \(error)")
      listener.close()
      return 1
    }
    server.listenerPath = listener.path
    startThread {
      writer.run(jobs: jobs) { output in
        outputs.push(output)
        var one: UInt64 = 1
        _ = write(wakeFD, &one, 8)
      }
    }
    log.info(
      "switchd \(SwitchdVersion.current) serving \(listener.path)"
        + "\(listener.activated ? " (socket-activated)" : ""), database \(databasePath), "
        + "\(catalog.switches.count) switches, \(catalog.policyCount) policies, "
        + "revision \(writer.snapshot.revision)")
    notifier.send("READY=1")
    notifier.send(server.statusLine)
    server.run()
    return 0
  }
}

/// Writes a line to stderr (for the command-line paths, not the log).
func printError(_ line: String) {
  let bytes = Array((line + "\n").utf8)
  _ = bytes.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
}
