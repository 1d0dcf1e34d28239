import Glibc

/// The process's arguments, its name first. Swift finds them next to the
/// environment the kernel laid out; a library preloaded into the process
/// that moves the environment in its constructor leaves it none (libfaketime
/// without its `faketime` wrapper calls setenv there), and a daemon started
/// so would quietly serve /etc/switchd. They are read from /proc/self/cmdline
/// then.
public func processArguments() -> [String] {
  let arguments = CommandLine.arguments
  if !arguments.isEmpty { return arguments }
  return commandLineFromProc().map { String(decoding: $0, as: UTF8.self) }
}

/// The place (1: the first after the program's name) of the first argument
/// that is not valid UTF-8, or nil; from the same bytes `processArguments`
/// read. Swift's strings repair such bytes into U+FFFD: a path so given
/// names another file (`switchctl backup $'\xff.db'` wrote `\u{FFFD}.db` and
/// said it had written the file asked for), so both programs refuse it.
public func firstArgumentNotUTF8() -> Int? {
  if CommandLine.argc > 0 {
    for place in 1..<Int(CommandLine.argc) {
      guard let argument = CommandLine.unsafeArgv[place] else { continue }
      if String(validatingCString: argument) == nil { return place }
    }
    return nil
  }
  let arguments = commandLineFromProc()
  return arguments.indices.dropFirst().first {
    String(validating: arguments[$0], as: UTF8.self) == nil
  }
}

/// What `switchctl` and `switchd` say of an argument `firstArgumentNotUTF8` found.
public func argumentNotUTF8Sentence(_ place: Int) -> String {
  "argument \(place) is not valid UTF-8: arguments (keys, users, paths) must be UTF-8"
}

/// The arguments as /proc/self/cmdline holds them, the program first.
private func commandLineFromProc() -> [ArraySlice<UInt8>] {
  let fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC)
  guard fd >= 0 else { return [] }
  defer { close(fd) }
  var bytes: [UInt8] = []
  var chunk = [UInt8](repeating: 0, count: 4096)
  while true {
    let n = read(fd, &chunk, chunk.count)
    if n < 0 && errno == EINTR { continue }
    if n <= 0 { break }
    bytes += chunk[..<n]
  }
  if bytes.last == 0 { bytes.removeLast() }
  return bytes.split(separator: 0, omittingEmptySubsequences: false)
}
