import Glibc

/// A slower disk for the durable-write figures: a tiny C library, built by
/// the benchmark and loaded with LD_PRELOAD into switchd, Redis and the
/// SQLite floor alike, that sleeps a fixed time after every real
/// `fsync`/`fdatasync` (the data still reaches the disk). This VM flushes in
/// ~0.1-0.3 ms; a laptop's SSD without power-loss protection takes 1-5 ms,
/// an SD card 5-20 ms, and there group commit decides everything.
///
/// It also counts each process's flushes in a shared page,
/// `$SWITCHBENCH_FLUSH_COUNTS/<pid>` (`flushCount(of:)`), so that a run can
/// say how many writes one flush carried: the size of a commit group.
enum FlushDelay {
  static let source = """
    #define _GNU_SOURCE
    #include <dlfcn.h>
    #include <errno.h>
    #include <fcntl.h>
    #include <stdio.h>
    #include <stdlib.h>
    #include <sys/mman.h>
    #include <time.h>
    #include <unistd.h>
    static long delay_ns;
    static unsigned long long *flushes;
    static int (*real_fsync)(int);
    static int (*real_fdatasync)(int);
    __attribute__((constructor)) static void init(void) {
      const char *text = getenv("SWITCHBENCH_FSYNC_DELAY_US");
      delay_ns = text ? atol(text) * 1000L : 0;
      real_fsync = (int (*)(int))dlsym(RTLD_NEXT, "fsync");
      real_fdatasync = (int (*)(int))dlsym(RTLD_NEXT, "fdatasync");
      const char *counts = getenv("SWITCHBENCH_FLUSH_COUNTS");
      if (!counts) return;
      char path[4096];
      snprintf(path, sizeof path, "%s/%d", counts, (int)getpid());
      int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
      if (fd < 0) return;
      if (ftruncate(fd, sizeof *flushes) == 0) {
        void *page = mmap(NULL, sizeof *flushes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (page != MAP_FAILED) flushes = page;
      }
      close(fd);
    }
    static void slow_flush(void) {
      if (flushes) __atomic_fetch_add(flushes, 1, __ATOMIC_RELAXED);
      if (delay_ns <= 0) return;
      struct timespec left = {delay_ns / 1000000000L, delay_ns % 1000000000L};
      int saved = errno;
      while (nanosleep(&left, &left) != 0 && errno == EINTR) {}
      errno = saved;
    }
    int fsync(int fd) { int rc = real_fsync(fd); slow_flush(); return rc; }
    int fdatasync(int fd) { int rc = real_fdatasync(fd); slow_flush(); return rc; }

    """

  /// Compiles the library into `directory` with the first C compiler on
  /// PATH (the Swift toolchain ships clang); its path, or why not.
  static func build(in directory: String) -> Result<String, BenchError> {
    guard let compiler = ["cc", "clang", "gcc"].lazy.compactMap(findOnPath).first else {
      return .failure(BenchError("no C compiler on PATH"))
    }
    let sourcePath = "\(directory)/fsync-delay.c"
    let library = "\(directory)/libfsync-delay.so"
    do {
      try writeFile(sourcePath, source)
      let (status, _) = try runTimed(
        compiler, ["-shared", "-fPIC", "-O2", "-o", library, sourcePath, "-ldl"])
      guard status == 0 else { return .failure(BenchError("\(compiler) failed (\(status))")) }
    } catch {
      return .failure(BenchError("\(compiler): \(error)"))
    }
    return .success(library)
  }

  /// Our environment plus the preload and `microseconds` per flush, with
  /// each process's flushes counted in `counts` (a directory).
  static func environment(library: String, microseconds: Int, counts: String) -> [String] {
    makeEnvironment([
      "LD_PRELOAD": library, "SWITCHBENCH_FSYNC_DELAY_US": String(microseconds),
      "SWITCHBENCH_FLUSH_COUNTS": counts,
    ])
  }

  /// How many times process `pid` has flushed so far, if it runs under the
  /// preload with counts in `counts`.
  static func flushCount(of pid: pid_t, counts: String) -> UInt64? {
    let fd = open("\(counts)/\(pid)", O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { return nil }
    defer { close(fd) }
    var count: UInt64 = 0
    return pread(fd, &count, 8, 0) == 8 ? count : nil
  }
}

/// The SQLite floor in a child process (this executable with
/// `--serve-floor`), so that the preload reaches its fdatasync too.
extension Bench {
  func sqliteFloorChild(directory: String, environment: [String]) -> Contender {
    { warmup, seconds in
      try makeDirectory(directory)
      let output = "\(directory)/floor.out"
      unlink(output)
      let pid = try spawn(
        executablePath(),
        ["--serve-floor", directory, String(warmup), String(seconds)],
        environment: environment, output: .file(output), name: "SQLite floor", track: true)
      var status: Int32 = 0
      while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
      Children.remove(pid)
      guard status == 0, let text = readFile(output) else {
        throw BenchError("the SQLite floor failed: \(readFile(output) ?? "no output")")
      }
      return [try LoadResult(floorReport: text, seconds: seconds)]
    }
  }
}

extension LoadResult {
  /// `--serve-floor`'s output: the count, then the latencies in nanoseconds.
  init(floorReport text: String, seconds: Double) throws {
    let numbers = text.split(whereSeparator: { $0 == " " || $0 == "\n" }).compactMap {
      UInt64($0)
    }
    guard let count = numbers.first else { throw BenchError("the SQLite floor printed nothing") }
    self.init(seconds: seconds)
    completed = Int(count)
    latencies = Array(numbers.dropFirst()).sorted()
  }

  /// The `--serve-floor DIR WARMUP SECONDS` mode: one floor window, printed.
  static func serveFloor(_ arguments: [String]) -> Int32 {
    guard arguments.count == 3, let warmup = Double(arguments[1]),
      let seconds = Double(arguments[2])
    else {
      printError("usage: switchbench --serve-floor DIR WARMUP SECONDS")
      return 2
    }
    do {
      let result = try sqliteCommitFloor(
        directory: arguments[0], warmup: warmup, seconds: seconds)
      print(
        ([result.completed] + result.latencies.map(Int.init)).map(String.init).joined(
          separator: " "))
      return 0
    } catch {
      printError("switchbench: \(error)")
      return 1
    }
  }
}
