import Glibc

/// The tools that count a server's work over its whole life, every thread:
/// callgrind (instructions) and strace (system calls). The server runs under
/// the tool from its start; the count is read from the tool's file after the
/// server has exited.
enum CountingTool: String {
  case callgrind
  case strace

  /// The program to run, and the Debian package that has it.
  var program: String { self == .callgrind ? "valgrind" : "strace" }

  /// Why the tool cannot run here, or nil when it can.
  var missing: String? {
    findOnPath(program) == nil ? "\(program) not installed (apt-get install \(program))" : nil
  }

  /// The command line to put before the server's own; the tool writes its
  /// count to `output` (callgrind with `threads`: one file per thread,
  /// `output-01`, `output-02`, … in the order the threads started).
  func launcher(output: String, threads: Bool = false) -> [String] {
    let path = findOnPath(program) ?? program
    switch self {
    case .callgrind:
      return [
        path, "--tool=callgrind", "--trace-children=no", "--dump-instr=no",
        "--collect-atstart=yes", "--separate-threads=\(threads ? "yes" : "no")",
        "--callgrind-out-file=\(output)",
      ]
    case .strace:
      return [path, "-c", "-f", "-o", output]
    }
  }

  /// The process to send SIGTERM to so the server ends by itself and the
  /// tool sees it to its end: valgrind runs the server in its own process;
  /// strace runs it as its child.
  func server(launched pid: pid_t) -> pid_t {
    self == .strace ? childrenOf(pid).first ?? pid : pid
  }

  /// The whole count in `output`: callgrind's `totals:` (or `summary:`)
  /// line, of every thread's file when they are apart, or the calls column
  /// of strace's `total` line.
  func total(output: String) throws -> Int {
    if self == .callgrind, !fileExists(output) || readFile(output) == "" {
      let files = threadFiles(output)
      guard !files.isEmpty else { throw BenchError("callgrind: no output in \(output)") }
      return try files.map { try total(file: $0) }.reduce(0, +)
    }
    return try total(file: output)
  }

  private func total(file output: String) throws -> Int {
    guard let text = readFile(output), !text.isEmpty else {
      throw BenchError("\(self): no output in \(output)")
    }
    for line in text.split(separator: "\n").reversed() {
      let fields = line.split(separator: " ")
      switch self {
      case .callgrind:
        if let first = fields.first, first == "totals:" || first == "summary:",
          fields.count > 1, let count = Int(fields[1])
        {
          return count
        }
      case .strace:
        // "100.00    0.012345     1     12345      67 total" (errors may be blank)
        if fields.last == "total", fields.count >= 5, let count = Int(fields[3]) {
          return count
        }
      }
    }
    throw BenchError("\(self): no total in \(output)")
  }
}

/// callgrind's files for each thread of `output`, by thread number.
func threadFiles(_ output: String) -> [String] {
  Array((1..<1000).lazy.map { "\(output)-\($0 < 10 ? "0" : "")\($0)" }.prefix(while: fileExists))
}

/// Ends a server that runs under `tool` (started as `pid`): SIGTERM to the
/// server, then up to `grace` seconds for the tool to write its count and
/// exit (callgrind slows the server's shutdown too); SIGKILL after that.
func stopCounted(_ pid: pid_t, tool: CountingTool, grace: Double = 300) {
  kill(tool.server(launched: pid), SIGTERM)
  var status: Int32 = 0
  let deadline = nowSeconds() + grace
  while nowSeconds() < deadline {
    if waitpid(pid, &status, WNOHANG) == pid {
      Children.remove(pid)
      return
    }
    sleepSeconds(0.01)
  }
  stopProcess(pid)
}
