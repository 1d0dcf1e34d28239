import CShim
import Glibc
import SwitchCore
import SwitchStore
import SwitchSystem

/// The `switchd` command: flags, configuration, start-up, and the loop.
public enum Daemon {
  typealias Options = DaemonArguments.Options

  /// Runs switchd with `arguments` (without the program name); returns the exit status.
  /// `argumentNotUTF8`: the place of the first argument that is not
  /// valid UTF-8 (`firstArgumentNotUTF8`), which `arguments` holds repaired:
  /// a path so given would name another file, so it is refused.
  public static func main(_ arguments: [String], argumentNotUTF8: Int? = nil) -> Int32 {
    if let place = argumentNotUTF8 {
      return usageError(argumentNotUTF8Sentence(place))
    }
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
    let (lines, status) = checkConfigReport(directory)
    print(lines.joined(separator: "\n"))
    return status
  }

  /// The lines `--check-config` prints (details, then a summary, all on one
  /// stream so that they arrive in order) and its exit status.
  static func checkConfigReport(_ directory: String) -> (lines: [String], status: Int32) {
    let loaded = ConfigLoader.load(directory: directory)
    // The errors of no line first (a file refused, or not there): what
    // follows may stem from what such a file would have declared.
    let placed = Set(loaded.diagnostics.filter { $0.severity == .error }.map(\.description))
    var lines = loaded.errors.filter { !placed.contains($0) }
    for diagnostic in loaded.diagnostics {
      let kind = diagnostic.severity == .error ? "error" : "warning"
      lines.append("\(diagnostic.location): \(kind): \(diagnostic.message)")
    }
    guard let catalog = loaded.catalog else {
      lines.append("\(directory): \(counted(loaded.errors.count, "error"))")
      return (lines, 1)
    }
    // The group database is the machine's, not the directory's: a group
    // missing here is a warning, as it is in the log at start.
    let groupWarnings = AccessRules.lookUp(catalog.settings).warnings
    lines += groupWarnings.map { "\(CatalogBuilder.daemonConfName): warning: \($0)" }
    lines.append(
      "\(directory): ok, \(counted(catalog.switches.count, "switch", "switches")), "
        + "\(counted(catalog.policyCount, "policy", "policies")), "
        + counted(
          loaded.diagnostics.count { $0.severity == .warning } + groupWarnings.count, "warning"))
    return (lines, 0)
  }

  /// "1 error", "2 errors".
  private static func counted(_ count: Int, _ one: String, _ many: String? = nil) -> String {
    "\(count) \(count == 1 ? one : many ?? one + "s")"
  }

  /// The process's environment (the first of a name, as `getenv`), and
  /// apart, the variables whose value is not UTF-8, decoded with U+FFFD in
  /// place of the bytes it could not read: a path made from one would name
  /// another folder (`String(cString:)` made that path silently).
  static func environment() -> (variables: [String: String], notUTF8: [String: String]) {
    var env: [String: String] = [:]
    var notUTF8: [String: String] = [:]
    var p = environ
    while let entry = p.pointee {
      let bytes = UnsafeBufferPointer(start: entry, count: strlen(entry)).map {
        UInt8(bitPattern: $0)
      }
      if let eq = bytes.firstIndex(of: UInt8(ascii: "=")) {
        let name = String(decoding: bytes[..<eq], as: UTF8.self)
        let value = bytes[(eq + 1)...]
        if env[name] == nil && notUTF8[name] == nil {
          if let text = String(validating: value, as: UTF8.self) {
            env[name] = text
          } else {
            notUTF8[name] = String(decoding: value, as: UTF8.self)
          }
        }
      }
      p += 1
    }
    return (env, notUTF8)
  }

  /// The default path `path` gives, and the variable not UTF-8 whose bytes
  /// it would hold, if any (then it cannot be made). Exact: the path is
  /// made twice, the unreadable bytes standing for U+FFFD and then for
  /// U+FFFC; a variable the path does not take from (a relative
  /// `$XDG_STATE_HOME`, a later part of `$STATE_DIRECTORY`, `$HOME` where
  /// `$XDG_STATE_HOME` decides) gives the same path both times.
  static func defaultPath(
    uid: UInt32, env: [String: String], notUTF8: [String: String],
    _ path: (UInt32, [String: String]) -> String
  ) -> (path: String, unreadable: String?) {
    let readable = env.merging(notUTF8) { valid, _ in valid }
    let chosen = path(uid, readable)
    for (name, decoded) in notUTF8.sorted(by: { $0.key < $1.key }) {
      var other = readable
      var scalars = String.UnicodeScalarView()
      scalars.append(contentsOf: decoded.unicodeScalars.map { $0 == "\u{FFFD}" ? "\u{FFFC}" : $0 })
      other[name] = String(scalars)
      if path(uid, other) != chosen { return (chosen, name) }
    }
    return (chosen, nil)
  }

  static func serve(_ options: Options, log: Log) -> Int32 {
    // Named whole wherever it is shown (`status`, the log): `--config cfg`
    // said "cfg" to a client that runs elsewhere.
    var options = options
    // Left relative when the working directory's name is not UTF-8: read
    // from it, the files are the same.
    options.configDirectory = absolute(options.configDirectory) ?? options.configDirectory
    signal(SIGPIPE, SIG_IGN)
    _ = shim_raise_nofile_limit()
    shim_fix_malloc_thresholds()
    // Block the signals before any thread starts, so all of them inherit
    // the mask and the loop alone reads them from its signalfd.
    let signalFD = shim_signalfd_termination_and_reload()
    let (env, notUTF8) = environment()
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
    // Relative paths are made absolute against the working directory, so
    // the directories checked and created are the ones bind and SQLite use.
    var paths: [String] = []
    for (what, given, path) in [
      ("socket", options.socket ?? catalog.settings.socket, DefaultPaths.socket),
      ("database", options.database ?? catalog.settings.database, DefaultPaths.database),
    ] {
      if let given {
        guard let path = absolute(given) else {
          log.error(
            "the working directory's name is not UTF-8, so the relative \(what) path \(given) "
              + "cannot be made absolute: pass an absolute --\(what)")
          return 1
        }
        paths.append(path)
        continue
      }
      let made = defaultPath(uid: uid, env: env, notUTF8: notUTF8, path)
      if let name = made.unreadable {
        log.error(
          "$\(name) is not valid UTF-8, and the \(what)'s path comes from it: "
            + "set it in UTF-8, or pass --\(what)")
        return 1
      }
      paths.append(made.path)  // absolute: `DefaultPaths` makes no relative one
    }
    let (socketPath, databasePath) = (paths[0], paths[1])

    // The database's directory first: the lock file lives beside the
    // database, and is taken before SQLite opens it, so a second daemon
    // leaves a live database untouched. Nobody else needs to enter it (0700,
    // as StateDirectoryMode= in the unit); the socket's must be 0755 so
    // that other users can reach the socket.
    let privateDirectory = DefaultPaths.privateRuntimeDirectory(uid: uid)
    do {
      try TrustedDirectory.create(
        TrustedDirectory.folder(of: databasePath), mode: 0o700, uid: uid,
        privateDirectory: privateDirectory)
    } catch {
      log.error("cannot create the directory for \(databasePath): \(error)")
      return 1
    }
    // The database's files must be this user's (or root's), said here with
    // whose they are. One made by someone else after this check (in a sticky
    // folder such as /tmp) is refused as it is opened: the lock file by its
    // descriptor, SQLite's files as SQLite creates them (`switchd_claim_file`).
    do {
      try TrustedDirectory.checkOwnFiles(
        ["", "-wal", "-shm", "-journal", ".lock"].map { databasePath + $0 }, uid: uid)
    } catch {
      log.error("\(error); not starting")
      return 1
    }
    let lock: LockFile
    do {
      lock = try LockFile(path: databasePath + ".lock")
    } catch .held(_, let pid) {
      let holder = pid.map { "process \($0)" } ?? "another process"
      log.error(
        "the database \(databasePath) is in use by \(holder) (another switchd); not starting")
      return 1
    } catch {
      log.error("cannot lock the database \(databasePath): \(error)")
      return 1
    }
    let access = AccessRules.resolve(catalog.settings, log: log)
    let jobs = BlockingQueue<WriterJob>()
    let outputs = BlockingQueue<WriterOutput>()
    let outputSpares = BlockingQueue<WriterOutput.Spare>()
    let wakeFD = shim_eventfd()
    let started: Writer.Started
    do {
      started = try Writer.startThread(
        databasePath: databasePath, configDirectory: options.configDirectory, catalog: catalog,
        access: access, log: log, jobs: jobs, outputs: outputs, outputSpares: outputSpares,
        wakeFD: wakeFD, announced: (lock.announcedRevision, lock.recordedRevision))
    } catch {
      log.error("cannot open the database: \(error)")
      return 1
    }
    // Socket-activated, switchd serves what systemd passed and binds no
    // path (the units decide where sockets are); else it binds both.
    let activated = Listener.activated(environment: env, path: socketPath)
    let varlinkPath = catalog.settings.varlinkSocketPath(besides: socketPath).map {
      absolute($0) ?? $0
    }
    func bound(_ path: String) -> Listener? {
      do {
        try TrustedDirectory.create(
          TrustedDirectory.folder(of: path), mode: 0o755, uid: uid,
          privateDirectory: privateDirectory)
        return try Listener.bind(path: path, mode: catalog.settings.socketMode)
      } catch {
        log.error("cannot listen on \(path): \(error)")
        return nil
      }
    }
    // The varlink socket first: whoever can connect to the JSON-RPC socket
    // (a test, a unit waiting for it) finds the varlink one there too.
    var varlinkListener = activated?.varlink
    if activated == nil, let varlinkPath {
      guard let made = bound(varlinkPath) else { return 1 }
      varlinkListener = made
    }
    guard let listener = activated?.jsonRPC ?? bound(socketPath) else {
      varlinkListener?.close()
      return 1
    }
    if let activated {
      for mismatch in ActivatedSockets.mismatches(
        jsonRPC: ActivatedSockets.seen(activated.jsonRPC),
        varlink: ActivatedSockets.seen(activated.varlink),
        socketMode: catalog.settings.socketMode, varlinkWanted: varlinkPath)
      {
        log.write(mismatch.level, mismatch.text)
      }
    }

    let notifier = Notifier(environment: env)
    let startRevision = started.snapshot.revision
    let server: Server
    do {
      server = try Server(
        listener: listener, databasePath: databasePath,
        configDirectory: options.configDirectory,
        // Scheduled policies as they stand now, as the writer took them.
        catalog: catalog.inEffect(at: wallClockMilliseconds(), in: Writer.localZone).catalog,
        // Consumed: kept here, its switches' table stayed shared with the
        // loop's, and the loop's first change copied it (1.4 MB with
        // 10,000 switches, on top of the loop's and the writer's: massif).
        access: access, started: consume started, jobs: jobs, outputs: outputs,
        outputSpares: outputSpares, wakeFD: wakeFD, signalFD: signalFD,
        notifier: notifier, log: log, varlinkListener: varlinkListener)
    } catch {
      log.error("cannot start: \(error)")
      listener.close()
      varlinkListener?.close()
      return 1
    }
    server.listenerPath = listener.path
    log.info(
      "switchd \(SwitchdVersion.current) serving \(listener.path)"
        + "\(listener.activated ? " (socket-activated)" : "")"
        + (varlinkListener.map { " and varlink on \($0.path)" } ?? "")
        + ", database \(databasePath), "
        + "\(counted(catalog.switches.count, "switch", "switches")), "
        + "\(counted(catalog.policyCount, "policy", "policies")), "
        + "revision \(startRevision)")
    // What start-up freed (the configuration's text and its parse, the
    // writer's load) is given back before serving: left in the threads'
    // malloc arenas it stayed resident for good (~0.5 MB with 10,000
    // switches, VmHWM).
    _ = shim_malloc_trim()
    notifier.send("READY=1")
    notifier.send(server.statusLine)
    server.run()
    _ = consume lock  // held until the writer has stopped and the database is closed
    return 0
  }

  /// `path`, or the working directory joined with it when it is relative;
  /// nil when the working directory's name is not UTF-8 (joined with a
  /// U+FFFD name it named another folder, a review).
  static func absolute(_ path: String) -> String? {
    if path.hasPrefix("/") { return path }
    var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
    guard getcwd(&buffer, buffer.count) != nil else { return path }
    guard
      let directory = String(
        validating: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    else { return nil }
    return directory == "/" ? "/" + path : directory + "/" + path
  }
}

/// Writes a line to stderr (for the command-line paths, not the log).
func printError(_ line: String) {
  let bytes = Array((line + "\n").utf8)
  _ = bytes.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
}
