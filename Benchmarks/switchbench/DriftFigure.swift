import Glibc

/// How fast drift is caught (issue 23): fake radios whose state is a file,
/// an apply script that writes it, and a watch program (a tiny C program
/// built here, blocked in inotify) that prints `on`/`off` when it changes.
/// The benchmark changes a file behind switchd's back and times
/// - held (locked by an administrator): until switchd has re-applied, i.e.
///   the file says the held value again;
/// - free: until the `external` event reaches a watcher;
/// and switchd's CPU while nothing drifts with `ExecWatch=` on ten switches
/// (no polling in switchd: it waits on the watch programs' pipes).
extension Bench {
  /// Free radios (adopted round after round) and held ones (each drifts
  /// once: the first drift is re-applied at once, later ones back off).
  static let driftRadios = 10
  static let heldRadios = 40

  func measureDrift() throws {
    let dir = "\(directory)/drift"
    try makeDirectory(dir)
    let watcher: String
    switch DriftRadio.buildWatcher(in: dir) {
    case .success(let path): watcher = path
    case .failure(let why):
      add(
        Row(
          section: "drift", measure: "drift caught", unit: .microseconds, value: nil,
          note: "not run: \(why)"))
      return
    }
    let apply = "\(dir)/apply.sh"
    try writeFile(
      apply,
      """
      #!/bin/sh
      # Makes the fake radio SWITCH_KEY what switchd says (on/off), atomically.
      printf '%s\\n' "$SWITCH_EFFECTIVE" > "\(dir)/$SWITCH_KEY/tmp" &&
        mv "\(dir)/$SWITCH_KEY/tmp" "\(dir)/$SWITCH_KEY/state"

      """)
    chmod(apply, 0o755)
    let config = "\(dir)/conf"
    try Configs.write(config, total: 100)
    var radios = ""
    for (kind, count) in [("held", Self.heldRadios), ("free", Self.driftRadios)] {
      for index in 0..<count {
        let key = "radio.\(kind)\(index)"
        // A folder each: a radio's watch program wakes for its own file only.
        try makeDirectory("\(dir)/\(key)")
        try writeFile("\(dir)/\(key)/state", "off\n")
        radios += """
          [\(key)]
          Label=Fake radio \(index)
          Default=off
          ExecApply=\(apply)
          ExecWatch=\(watcher) \(dir)/\(key)/state
          DriftLimit=1000

          """
      }
    }
    try writeFile("\(config)/switches.d/50-radios.conf", radios)
    let radioCount = Self.heldRadios + Self.driftRadios
    progress("starting switchd with \(radioCount) fake radios watched")
    let daemon = try startDaemon("drift", config: config)
    defer { stopDaemon(daemon) }
    // Every watch program has reported: each switch's observed is known.
    try waitUntilObserved(daemon, count: radioCount)

    // Idle: nothing drifts, the watch programs wait in inotify. The start's
    // reconcile and its checkpoint are let finish first.
    sleepSeconds(1)
    let cpuBefore = processCPUSeconds(daemon.pid) ?? 0
    let idle = max(1.0, options.seconds)
    sleepSeconds(idle)
    let cpuIdle = (processCPUSeconds(daemon.pid) ?? cpuBefore) - cpuBefore
    add(
      Row(
        section: "drift",
        measure: "switchd CPU while nothing drifts, ExecWatch= on \(radioCount) switches",
        unit: .microseconds, value: cpuIdle * 1e6 / idle, target: .valueAtMost(1000),
        note: "CPU per second of wall time"))

    for index in 0..<Self.heldRadios {
      let key = "radio.held\(index)"
      _ = try exchange(
        path: daemon.socket,
        #"{"jsonrpc":"2.0","id":1,"method":"lock","params":{"key":"\#(key)","checked":false}}"#
          + "\n")
    }
    var held: [UInt64] = []
    for index in 0..<Self.heldRadios {
      let state = "\(dir)/radio.held\(index)/state"
      let start = nowNanoseconds()
      try DriftRadio.write(state, "on")
      // Re-applied: the apply script wrote the held value back.
      guard DriftRadio.waitFor(state, "off", seconds: 30) else {
        throw BenchError("radio.held\(index) was not re-applied")
      }
      held.append(nowNanoseconds() - start)
    }
    addLatencies("held switch, first drift: external change → re-applied", held)
    let rounds = max(2, Int(options.seconds * 5))

    let watch = connectUnix(daemon.socket)
    if watch < 0 { throw BenchError.errno("connect \(daemon.socket)") }
    defer { close(watch) }
    guard
      sendAll(
        watch,
        Array(
          (#"{"jsonrpc":"2.0","id":1,"method":"watch","params":{"keys":["radio.free*"]}}"# + "\n")
            .utf8)),
      readLines(watch, lines: 1, deadline: nowNanoseconds() + 30_000_000_000) != nil
    else { throw BenchError("the watch on radio.free* was not answered") }
    var free: [UInt64] = []
    var value = "off"
    for round in 0..<rounds {
      value = value == "on" ? "off" : "on"
      for index in 0..<Self.driftRadios {
        let start = nowNanoseconds()
        try DriftRadio.write("\(dir)/radio.free\(index)/state", value)
        // Adopted: one `changed` event with cause external.
        guard
          let event = readLines(watch, lines: 1, deadline: nowNanoseconds() + 30_000_000_000),
          String(decoding: event, as: UTF8.self).contains(#""cause":"external""#)
        else { throw BenchError("radio.free\(index) was not adopted in round \(round)") }
        free.append(nowNanoseconds() - start)
      }
    }
    addLatencies("free switch: external change → external event", free)
  }

  private func addLatencies(_ name: String, _ samples: [UInt64]) {
    var result = LoadResult(seconds: 1)
    result.latencies = samples.sorted()
    add(
      Row(
        section: "drift", measure: "\(name): p50", unit: .microseconds, value: result.p50,
        note: "\(samples.count) changes"))
    add(Row(section: "drift", measure: "\(name): p99", unit: .microseconds, value: result.p99))
  }

  private func waitUntilObserved(_ daemon: DaemonProcess, count: Int) throws {
    let deadline = nowSeconds() + 30
    while nowSeconds() < deadline {
      let list = try exchange(
        path: daemon.socket,
        #"{"jsonrpc":"2.0","id":1,"method":"list","params":{"prefix":"radio."}}"# + "\n")
      if list.components(of: #""observed":false"#) + list.components(of: #""observed":true"#)
        >= count
      {
        return
      }
      sleepSeconds(0.01)
    }
    throw BenchError("the watch programs did not report within 30 s")
  }
}

/// The fake radio's files and its watch program.
enum DriftRadio {
  /// `watch-file PATH`: prints the file's `on`/`off` at start and whenever
  /// it changes (inotify on its folder, so a rename into place is seen).
  static let source = """
    #include <limits.h>
    #include <stdio.h>
    #include <string.h>
    #include <sys/inotify.h>
    #include <unistd.h>
    static char last[8] = "";
    static void report(const char *path) {
      char now[8] = "";
      FILE *f = fopen(path, "r");
      if (!f) return;
      if (!fgets(now, sizeof now, f)) now[0] = 0;
      fclose(f);
      now[strcspn(now, "\\n")] = 0;
      if ((strcmp(now, "on") == 0 || strcmp(now, "off") == 0) && strcmp(now, last) != 0) {
        strcpy(last, now);
        printf("%s\\n", now);
        fflush(stdout);
      }
    }
    int main(int argc, char **argv) {
      if (argc != 2) { fprintf(stderr, "usage: watch-file PATH\\n"); return 2; }
      char dir[PATH_MAX];
      strncpy(dir, argv[1], sizeof dir - 1);
      dir[sizeof dir - 1] = 0;
      char *slash = strrchr(dir, '/');
      if (!slash) { fprintf(stderr, "watch-file: PATH must be absolute\\n"); return 2; }
      *slash = 0;
      int fd = inotify_init1(IN_CLOEXEC);
      if (fd < 0 || inotify_add_watch(fd, dir, IN_CLOSE_WRITE | IN_MOVED_TO) < 0) {
        perror("watch-file: inotify"); return 1;
      }
      report(argv[1]);
      char buffer[4096];
      for (;;) {
        if (read(fd, buffer, sizeof buffer) <= 0) { perror("watch-file: read"); return 1; }
        report(argv[1]);
      }
    }

    """

  /// Compiles `watch-file` into `directory`; its path, or why not.
  static func buildWatcher(in directory: String) -> Result<String, BenchError> {
    guard let compiler = ["cc", "clang", "gcc"].lazy.compactMap(findOnPath).first else {
      return .failure(BenchError("no C compiler on PATH"))
    }
    let sourcePath = "\(directory)/watch-file.c"
    let program = "\(directory)/watch-file"
    do {
      try writeFile(sourcePath, source)
      let (status, _) = try runTimed(compiler, ["-O2", "-o", program, sourcePath])
      guard status == 0 else { return .failure(BenchError("\(compiler) failed (\(status))")) }
    } catch {
      return .failure(BenchError("\(compiler): \(error)"))
    }
    return .success(program)
  }

  /// Writes `value` into the radio's file whole (a rename, as the apply does).
  static func write(_ path: String, _ value: String) throws {
    try writeFile(path + ".ext", value + "\n")
    guard rename(path + ".ext", path) == 0 else { throw BenchError.errno("rename \(path)") }
  }

  /// Polls the file (the benchmark's own CPU, 50 µs a look) until it says `value`.
  static func waitFor(_ path: String, _ value: String, seconds: Double) -> Bool {
    let deadline = nowSeconds() + seconds
    while nowSeconds() < deadline {
      if readFile(path) == value + "\n" { return true }
      usleep(50)
    }
    return false
  }
}

extension String {
  /// How many times `needle` occurs.
  fileprivate func components(of needle: String) -> Int {
    var count = 0
    var rest = Substring(self)
    let n = needle.count
    while let first = rest.firstIndex(of: needle.first!) {
      if rest[first...].hasPrefix(needle) {
        count += 1
        rest = rest[rest.index(first, offsetBy: n)...]
      } else {
        rest = rest[rest.index(after: first)...]
      }
    }
    return count
  }
}
