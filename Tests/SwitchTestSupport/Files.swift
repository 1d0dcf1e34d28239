import Glibc

/// Replaces a file's content with `bytes` (created mode 0644 if missing).
public func writeWholeFile(_ path: String, _ bytes: [UInt8]) throws {
  let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
  guard fd >= 0 else { throw FixtureError("cannot open \(path): errno \(errno)") }
  defer { close(fd) }
  var offset = 0
  while offset < bytes.count {
    let n = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + offset, bytes.count - offset) }
    if n <= 0 { throw FixtureError("cannot write \(path): errno \(errno)") }
    offset += n
  }
}

public func writeWholeFile(_ path: String, _ text: String) throws {
  try writeWholeFile(path, Array(text.utf8))
}

/// Overwrites `bytes.count` bytes at `offset` in place.
public func patchFile(_ path: String, at offset: Int, _ bytes: [UInt8]) throws {
  let fd = open(path, O_WRONLY | O_CLOEXEC)
  guard fd >= 0 else { throw FixtureError("cannot open \(path): errno \(errno)") }
  defer { close(fd) }
  let written = bytes.withUnsafeBytes { pwrite(fd, $0.baseAddress!, $0.count, off_t(offset)) }
  guard written == bytes.count else { throw FixtureError("cannot write \(path): errno \(errno)") }
}

public func readWholeFileBytes(_ path: String) throws -> [UInt8] {
  let fd = open(path, O_RDONLY | O_CLOEXEC)
  guard fd >= 0 else { throw FixtureError("cannot read \(path): errno \(errno)") }
  defer { close(fd) }
  var bytes: [UInt8] = []
  var chunk = [UInt8](repeating: 0, count: 65_536)
  while true {
    let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
    if n < 0 { throw FixtureError("cannot read \(path): errno \(errno)") }
    if n == 0 { return bytes }
    bytes += chunk[0..<n]
  }
}

/// A whole file as UTF-8 text.
public func readWholeFile(_ path: String) throws -> String {
  String(decoding: try readWholeFileBytes(path), as: UTF8.self)
}

public func fileExists(_ path: String) -> Bool {
  access(path, F_OK) == 0
}

/// The permission bits of `path` itself (a link is not followed).
public func mode(of path: String) -> mode_t {
  var st = stat()
  precondition(lstat(path, &st) == 0, "lstat \(path)")
  return st.st_mode & 0o7777
}

/// The names in directory `path`, but `.` and `..`.
public func directoryEntries(_ path: String) throws -> [String] {
  guard let directory = opendir(path) else {
    throw FixtureError("cannot list \(path): errno \(errno)")
  }
  defer { closedir(directory) }
  var names: [String] = []
  while let entry = readdir(directory) {
    let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
      String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
    }
    if name != "." && name != ".." { names.append(name) }
  }
  return names
}
