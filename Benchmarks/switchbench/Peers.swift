import Glibc

// The peers people would otherwise run, started by the benchmark in its
// temp dir when they are installed: Redis over a Unix socket (never TCP:
// --port 0), and gsettings on the dconf backend in a private D-Bus session.

/// A redis-server of our own, on a Unix socket in the temp dir.
final class RedisServer {
  let pid: pid_t
  let socket: String

  private init(pid: pid_t, socket: String) {
    self.pid = pid
    self.socket = socket
  }

  /// Starts redis-server; `durable`: AOF with `appendfsync always` (a
  /// write is answered after fsync), else no persistence at all.
  /// `environment`: nil for ours (the slow-disk figures add a preload).
  /// `launcher`: a command line to run it under (a tool that counts its work).
  static func start(
    binary: String, directory: String, durable: Bool, environment: [String]? = nil,
    launcher: [String] = [], timeout: Double = 20
  ) throws -> RedisServer {
    try makeDirectory(directory)
    let socket = "\(directory)/redis.sock"
    var arguments = [
      "--port", "0", "--unixsocket", socket, "--unixsocketperm", "700", "--save", "",
      "--dir", directory, "--daemonize", "no", "--logfile", "\(directory)/redis.log",
      "--maxclients", "4096",
    ]
    arguments +=
      durable ? ["--appendonly", "yes", "--appendfsync", "always"] : ["--appendonly", "no"]
    let command = launcher + [binary] + arguments
    let pid = try spawn(
      command[0], Array(command.dropFirst()), environment: environment,
      output: .file("\(directory)/redis.out"), name: "redis-server")
    let deadline = nowSeconds() + timeout
    while nowSeconds() < deadline {
      var status: Int32 = 0
      if waitpid(pid, &status, WNOHANG) == pid {
        Children.remove(pid)
        throw BenchError("redis-server exited:\n\(readFile("\(directory)/redis.log") ?? "")")
      }
      if fileExists(socket), let pong = try? exchange(path: socket, "PING\r\n", timeout: 2),
        pong.hasPrefix("+PONG")
      {
        return RedisServer(pid: pid, socket: socket)
      }
      sleepSeconds(0.002)
    }
    stopProcess(pid)
    throw BenchError("redis-server did not start in \(Int(timeout)) s")
  }

  /// Runs one command and returns the reply (one line, or `lines`).
  @discardableResult
  func command(_ parts: [String], lines: Int = 1) throws -> String {
    try exchange(path: socket, String(decoding: resp(parts), as: UTF8.self), lines: lines)
  }

  func stop() { stopProcess(pid) }
}

/// gsettings on the dconf backend, in a private D-Bus session that the
/// benchmark starts (dbus-daemon, by PID) with its own config and runtime dirs.
final class GSettingsSession {
  let gsettings: String
  let schema: String
  let key: String
  let environment: [String]
  private let busPID: pid_t
  private let busSocket: String

  private init(
    gsettings: String, schema: String, key: String, environment: [String], busPID: pid_t,
    busSocket: String
  ) {
    self.gsettings = gsettings
    self.schema = schema
    self.key = key
    self.environment = environment
    self.busPID = busPID
    self.busSocket = busSocket
  }

  /// Why the peer cannot run here, or nil when it can.
  static func missing() -> String? {
    guard findOnPath("gsettings") != nil else { return "gsettings not installed (libglib2.0-bin)" }
    guard findOnPath("dbus-daemon") != nil else { return "dbus-daemon not installed (dbus)" }
    guard dconfModuleInstalled() else {
      return "dconf backend not installed (dconf-gsettings-backend)"
    }
    return nil
  }

  private static func dconfModuleInstalled() -> Bool {
    var candidates = ["/usr/lib/gio/modules/libdconfsettings.so"]
    if let dir = opendir("/usr/lib") {
      while let entry = readdir(dir) {
        let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
          String(cString: raw.bindMemory(to: CChar.self).baseAddress!)
        }
        if name.hasSuffix("-linux-gnu") {
          candidates.append("/usr/lib/\(name)/gio/modules/libdconfsettings.so")
        }
      }
      closedir(dir)
    }
    return candidates.contains(where: fileExists)
  }

  /// Starts the session bus and picks a boolean key: an installed schema's
  /// (org.gnome.desktop.interface clock-show-seconds) or, without one, a
  /// schema compiled into the temp dir. Checks that writes reach dconf.
  static func start(directory: String) throws -> GSettingsSession {
    guard let gsettings = findOnPath("gsettings"), let daemon = findOnPath("dbus-daemon") else {
      throw BenchError("gsettings or dbus-daemon missing")
    }
    for sub in ["", "/config", "/runtime", "/cache"] { try makeDirectory(directory + sub) }
    let busSocket = "\(directory)/bus"
    var changes = [
      "DBUS_SESSION_BUS_ADDRESS": "unix:path=\(busSocket)", "GSETTINGS_BACKEND": "dconf",
      "XDG_CONFIG_HOME": "\(directory)/config", "XDG_RUNTIME_DIR": "\(directory)/runtime",
      "XDG_CACHE_HOME": "\(directory)/cache",
    ]
    // The bus passes its environment to the services it activates: dconf-service
    // must write under the temp dir, never the user's own ~/.config/dconf.
    let busPID = try spawn(
      daemon,
      ["--session", "--nofork", "--nopidfile", "--address=unix:path=\(busSocket)"],
      environment: makeEnvironment(changes), output: .file("\(directory)/dbus.log"),
      name: "dbus-daemon")
    let deadline = nowSeconds() + 10
    while !fileExists(busSocket) && nowSeconds() < deadline { sleepSeconds(0.002) }
    var session = GSettingsSession(
      gsettings: gsettings, schema: "org.gnome.desktop.interface", key: "clock-show-seconds",
      environment: makeEnvironment(changes), busPID: busPID, busSocket: busSocket)
    do {
      guard fileExists(busSocket) else { throw BenchError("dbus-daemon did not start") }
      if try session.run(["get", session.schema, session.key]) != 0 {
        // No desktop schemas: compile our own with one boolean key.
        let schemas = "\(directory)/schemas"
        try makeDirectory(schemas)
        try writeFile(
          "\(schemas)/org.switchbench.gschema.xml",
          """
          <schemalist>
            <schema id="org.switchbench" path="/org/switchbench/">
              <key name="wifi" type="b"><default>true</default></key>
            </schema>
          </schemalist>
          """)
        guard let compiler = findOnPath("glib-compile-schemas"),
          try runTimed(compiler, [schemas]).status == 0
        else { throw BenchError("no boolean GSettings schema, and glib-compile-schemas failed") }
        changes["GSETTINGS_SCHEMA_DIR"] = schemas
        session = GSettingsSession(
          gsettings: gsettings, schema: "org.switchbench", key: "wifi",
          environment: makeEnvironment(changes), busPID: busPID, busSocket: busSocket)
      }
      try session.checkDconfWrite(directory: directory)
      return session
    } catch {
      session.stop()
      throw error
    }
  }

  /// Runs `gsettings ARGS` in the session; returns its exit status.
  func run(_ arguments: [String]) throws -> Int32 {
    try runTimed(gsettings, arguments, environment: environment).status
  }

  /// A `set` must land in dconf's user database (not the memory backend).
  private func checkDconfWrite(directory: String) throws {
    guard try run(["set", schema, key, "true"]) == 0, try run(["set", schema, key, "false"]) == 0
    else { throw BenchError("gsettings set failed") }
    let database = "\(directory)/config/dconf/user"
    let deadline = nowSeconds() + 5
    while !fileExists(database) && nowSeconds() < deadline { sleepSeconds(0.005) }
    guard fileExists(database) else {
      throw BenchError("gsettings set did not reach dconf (\(database) missing)")
    }
  }

  /// Ends the activated services (dconf-service: children of the bus), then the bus.
  func stop() {
    for child in childrenOf(busPID) { stopProcess(child, grace: 3, reap: false) }
    stopProcess(busPID)
  }
}

/// The PIDs whose parent is `parent` (from /proc/PID/stat).
func childrenOf(_ parent: pid_t) -> [pid_t] {
  guard let dir = opendir("/proc") else { return [] }
  defer { closedir(dir) }
  var out: [pid_t] = []
  while let entry = readdir(dir) {
    let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
      String(cString: raw.bindMemory(to: CChar.self).baseAddress!)
    }
    guard let pid = pid_t(name), let stat = readFile("/proc/\(pid)/stat"),
      let close = stat.lastIndex(of: ")")
    else { continue }
    let fields = stat[stat.index(after: close)...].split(separator: " ")
    if fields.count > 1, pid_t(fields[1]) == parent { out.append(pid) }
  }
  return out
}
