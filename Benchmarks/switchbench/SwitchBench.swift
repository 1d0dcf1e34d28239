import Glibc

/// switchbench: measures a release switchd against floors and peers in one
/// run and prints each figure with its ratio and the target of issue 6.
@main
struct SwitchBench {
  static func main() {
    let arguments = Array(CommandLine.arguments.dropFirst())
    if arguments.first == "--serve-echo" { exit(EchoFloor.serve(Array(arguments.dropFirst()))) }
    if arguments.first == "--serve-floor" {
      exit(LoadResult.serveFloor(Array(arguments.dropFirst())))
    }
    let options: Options
    switch Options.parse(Array(CommandLine.arguments.dropFirst())) {
    case .success(let parsed): options = parsed
    case .failure(let message):
      let help = CommandLine.arguments.contains("--help") || CommandLine.arguments.contains("-h")
      if help {
        print(message.description)
        exit(0)
      }
      printError("switchbench: \(message)")
      exit(2)
    }
    Children.installSignalHandling()
    exit(run(options))
  }

  static func run(_ options: Options) -> Int32 {
    let here = executableDirectory()
    let switchd = options.switchd ?? "\(here)/switchd"
    let switchctl = options.switchctl ?? "\(here)/switchctl"
    for binary in [switchd, switchctl] where !isExecutable(binary) {
      printError(
        "switchbench: \(binary) not found; build it first: swift build -c release "
          + "(or pass --switchd/--switchctl)")
      return 2
    }
    let files = raiseFileLimit()
    if files < options.watchers * 3 + 64 {
      printError("switchbench: RLIMIT_NOFILE is \(files); \(options.watchers) watchers need more")
      return 2
    }
    let directory: String
    do {
      directory = try makeTemporaryDirectory()
    } catch {
      printError("switchbench: \(error)")
      return 1
    }
    Children.setTemporaryDirectory(options.keep ? nil : directory)
    let bench = Bench(
      options: options, directory: directory, switchd: switchd, switchctl: switchctl)
    let started = nowSeconds()
    let loadBefore = loadAverage()
    var status: Int32 = 0
    do {
      try runAll(bench)
    } catch {
      printError("switchbench: \(error)")
      status = 1
    }
    bench.cleanUp()
    if options.keep {
      printError("switchbench: kept \(directory)")
    } else {
      removeTree(directory)
    }
    let header = [
      "switchbench (\(options.mode.rawValue)): \(fixed(options.seconds, 1)) s per figure after "
        + "\(fixed(options.warmup, 1)) s warm-up; closed-loop clients over Unix sockets",
      "machine: \(sysconf(Int32(_SC_NPROCESSORS_ONLN))) CPUs, \(kernel()); load average "
        + "\(loadBefore) at start, \(loadAverage()) at end; run took "
        + "\(fixed(nowSeconds() - started, 0)) s",
      "switchd: \(switchd) (built \(age(switchd)) ago); switchctl: \(switchctl) (built "
        + "\(age(switchctl)) ago)",
      "ratio = switchd / floor-or-peer (throughput: higher is better; time, memory: lower)",
      "",
    ]
    if options.json {
      printJSON(
        bench.rows,
        meta: [
          ("mode", options.mode.rawValue), ("seconds", fixed(options.seconds, 2)),
          ("loadBefore", loadBefore), ("loadAfter", loadAverage()), ("kernel", kernel()),
          ("switchd", switchd), ("switchctl", switchctl),
        ])
    } else {
      printTable(bench.rows, header: header)
    }
    return status
  }

  /// The sections in order: the main daemon (1,000 switches) first, then
  /// start-up and fan-out (10,000), then the large side of cost growth.
  static func runAll(_ bench: Bench) throws {
    let options = bench.options
    bench.startPeers()
    if options.runs("get") || options.runs("toggle") || options.runs("varlink")
      || options.runs("mixed") || options.runs("ctl")
    {
      let mainConfig = "\(bench.directory)/conf-main"
      try Configs.write(mainConfig, total: 1000)
      bench.progress("starting switchd with 1,000 switches")
      let main = try bench.startDaemon("main", config: mainConfig)
      try bench.learnAnswerSize(main)
      if options.runs("get") { try bench.measureGet(main) }
      if options.runs("toggle") { try bench.measureToggle(main, config: mainConfig) }
      if options.runs("varlink") { try bench.measureVarlink(main) }
      if options.runs("mixed") { try bench.measureMixed(main) }
      if options.runs("ctl") { try bench.measureCommandLine(main) }
      bench.stopDaemon(main)
    }
    if options.runs("fanout") {
      if bench.echo == nil {
        bench.echo = try EchoFloor(
          path: "\(bench.directory)/echo.sock", replyBytes: 356, eventBytes: 470)
      }
      try bench.measureWatchers()
    }
    if options.runs("growth") { try bench.measureGrowth() }
    if options.runs("history") { try bench.measureHistoryIsolation() }
    if options.runs("fairness") { try bench.measureWriteFairness() }
    if options.runs("apply") { try bench.measureApplyStall() }
    if options.runs("users") { try bench.measureUserValues() }
    if options.runs("polkit") { try bench.measurePolkit() }
    if options.runs("drift") { try bench.measureDrift() }
    if options.runs("timers") { try bench.measureTimers() }
    if options.runs("instructions") { try bench.measureInstructions() }
  }

  /// How long ago `path` was written ("3 min"), to catch a stale binary.
  static func age(_ path: String) -> String {
    var st = stat()
    guard stat(path, &st) == 0 else { return "?" }
    var now = timespec()
    clock_gettime(CLOCK_REALTIME, &now)
    let seconds = max(0, now.tv_sec - st.st_mtim.tv_sec)
    if seconds < 120 { return "\(seconds) s" }
    if seconds < 7200 { return "\(seconds / 60) min" }
    return "\(seconds / 3600) h"
  }

  static func loadAverage() -> String {
    let text = readFile("/proc/loadavg") ?? ""
    return text.split(separator: " ").prefix(3).joined(separator: " ")
  }

  static func kernel() -> String {
    var name = utsname()
    uname(&name)
    let release = withUnsafeBytes(of: name.release) { raw in
      String(cString: raw.bindMemory(to: CChar.self).baseAddress!)
    }
    return "Linux \(release)"
  }
}
