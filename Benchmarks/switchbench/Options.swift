/// What to run and for how long.
struct Options {
  enum Mode: String {
    case quick
    case normal
    case full
  }

  var mode = Mode.normal
  /// Measured seconds per throughput figure, after `warmup`.
  var seconds = 2.0
  var warmup = 0.5
  /// Watcher connections for fan-out and memory.
  var watchers = 1000
  /// Changes timed one at a time for fan-out.
  var rounds = 500
  /// Spawns per CLI figure (switchctl, gsettings).
  var spawns = 200
  /// Switches at start-up and for the memory figure.
  var startupSwitches = 10_000
  /// The large side of the cost-growth figures (switches and log rows).
  var bigSwitches = 100_000
  var bigLogRows = 100_000
  /// Calls in the shorter of the two counted runs of each instructions
  /// figure (the longer makes three times as many), shared among its
  /// connections; callgrind runs the server ~50x slower.
  var countedCalls = 2000
  /// Fan-out changes in the shorter counted run (and rounds for peak RSS).
  var countedRounds = 40
  /// Milliseconds added to every flush for the durable toggle figures (0: the native disk).
  var flushDelays: [Double] = [0, 1, 4]
  var json = false
  /// instructions: list switchd's instructions per call by function and thread.
  var profile = false
  var peers = true
  var keep = false
  var switchd: String?
  var switchctl: String?
  /// Sections to run (nil: all).
  var only: Set<String>?

  static let sections = [
    "get", "toggle", "varlink", "mixed", "ctl", "fanout", "growth", "history", "fairness", "apply",
    "users", "polkit", "drift", "timers",
    "instructions",
  ]

  static let usage = """
    Usage: switchbench [--quick | --full] [--seconds S] [--json] [options]

    Starts a release switchd in a temp dir and measures it against floors
    measured in the same run (a Unix-socket echo, a raw SQLite commit loop)
    and against Redis and gsettings when they are installed. `instructions`
    counts what a call costs both servers under callgrind and strace.

    Options:
      --quick             short run (~35 s, and ~1 min for instructions): 0.5 s per
                          figure, 10,000 for the large side, N = 200 counted calls
      --full              long run: 5 s per figure, 1000 fan-out rounds, 500 spawns,
                          N = 6000 counted calls
      --seconds S         measured seconds per throughput figure (default 2)
      --watchers N        fan-out watchers (default 1000)
      --rounds N          fan-out changes (default 500)
      --spawns N          process runs per CLI figure (default 200)
      --big N             switches and log rows on the large side of cost growth, and the
                          log rows history isolation pages through (default 100000)
      --flush-delays LIST durable toggle with these ms added to every fsync (default 0,1,4)
      --calls N           instructions: calls in the shorter counted run (default 2000;
                          at least 20 a connection; the longer one makes 3N), fan-out
                          rounds N/50
      --profile           instructions: also print (stderr) switchd's inclusive
                          instructions per call by function, per thread (top 15)
      --only LIST         comma list of: \(sections.joined(separator: ","))
      --no-peers          skip Redis and gsettings
      --switchd PATH      the switchd to run (default: beside switchbench)
      --switchctl PATH    the switchctl to time (default: beside switchbench)
      --json              print the figures as JSON instead of a table
      --keep              keep the temp dir (logs, configs, databases)
      --help              print this help
    """

  /// Parses the arguments (without the program name); nil and a message on misuse.
  static func parse(_ arguments: [String]) -> Result<Options, BenchError> {
    var options = Options()
    var rest = arguments[...]
    func number(_ flag: String) -> Result<Double, BenchError> {
      guard let text = rest.popFirst(), let value = Double(text), value > 0 else {
        return .failure(BenchError("\(flag) needs a positive number"))
      }
      return .success(value)
    }
    while let flag = rest.popFirst() {
      switch flag {
      case "--help", "-h": return .failure(BenchError(usage))
      case "--quick":
        options.mode = .quick
        options.seconds = 0.5
        options.warmup = 0.2
        options.rounds = 100
        options.spawns = 50
        options.bigSwitches = 10_000
        options.bigLogRows = 10_000
        options.countedCalls = 200
        options.countedRounds = 4
      case "--full":
        options.mode = .full
        options.seconds = 5
        options.warmup = 1
        options.rounds = 1000
        options.spawns = 500
        options.countedCalls = 6000
        options.countedRounds = 120
      case "--json": options.json = true
      case "--profile": options.profile = true
      case "--no-peers": options.peers = false
      case "--keep": options.keep = true
      case "--seconds":
        switch number(flag) {
        case .success(let v): options.seconds = v
        case .failure(let e): return .failure(e)
        }
      case "--watchers", "--rounds", "--spawns", "--big", "--calls":
        switch number(flag) {
        case .success(let v):
          let n = Int(v)
          if flag == "--watchers" { options.watchers = n }
          if flag == "--rounds" { options.rounds = n }
          if flag == "--spawns" { options.spawns = n }
          if flag == "--calls" {
            options.countedCalls = max(50, n)
            options.countedRounds = max(2, n / 50)
          }
          if flag == "--big" {
            options.bigSwitches = max(1000, n)
            options.bigLogRows = max(1000, n)
          }
        case .failure(let e): return .failure(e)
        }
      case "--switchd", "--switchctl":
        guard let path = rest.popFirst() else {
          return .failure(BenchError("\(flag) needs a path"))
        }
        if flag == "--switchd" { options.switchd = path } else { options.switchctl = path }
      case "--flush-delays":
        let delays = (rest.popFirst() ?? "").split(separator: ",").map { Double($0) }
        guard !delays.isEmpty, delays.allSatisfy({ ($0 ?? -1) >= 0 }) else {
          return .failure(BenchError("--flush-delays needs a comma list of milliseconds (0,1,4)"))
        }
        options.flushDelays = delays.compactMap { $0 }
      case "--only":
        guard let list = rest.popFirst() else { return .failure(BenchError("--only needs a list")) }
        let names = Set(list.split(separator: ",").map(String.init))
        if let bad = names.first(where: { !sections.contains($0) }) {
          return .failure(BenchError("--only: unknown section \(bad)"))
        }
        options.only = names
      default:
        return .failure(BenchError("unknown option \(flag)\n\n\(usage)"))
      }
    }
    return .success(options)
  }

  func runs(_ section: String) -> Bool { only?.contains(section) ?? true }
}
