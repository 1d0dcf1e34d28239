import Glibc

/// A fresh directory `/tmp/NAME-XXXXXX` (mode 0700, as mkdtemp makes it);
/// the caller removes it with `removeTree`. Names stay short: a socket
/// inside must fit sockaddr_un's 107 bytes.
public func makeTemporaryDirectory(_ name: String = "switchd-test") throws -> String {
  var template = Array("/tmp/\(name)-XXXXXX".utf8CString)
  guard let made = mkdtemp(&template) else { throw FixtureError("mkdtemp failed: errno \(errno)") }
  return String(cString: made)
}

/// A fresh directory for `body`, removed with everything in it when it returns.
public func withTemporaryDirectory<T>(
  _ name: String = "switchd-test", _ body: (String) throws -> T
) throws -> T {
  let directory = try makeTemporaryDirectory(name)
  defer { removeTree(directory) }
  return try body(directory)
}

/// Removes `path` and, for a directory, everything below it (opening up
/// directories a test made unreadable); links are removed, never followed.
public func removeTree(_ path: String) {
  var st = stat()
  guard lstat(path, &st) == 0 else { return }
  guard (st.st_mode & S_IFMT) == S_IFDIR else {
    unlink(path)
    return
  }
  chmod(path, 0o700)
  if let directory = opendir(path) {
    var names: [String] = []
    while let entry = readdir(directory) {
      let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
        String(cString: raw.bindMemory(to: CChar.self).baseAddress!)
      }
      if name != "." && name != ".." { names.append(name) }
    }
    closedir(directory)
    for name in names { removeTree(path + "/" + name) }
  }
  rmdir(path)
}
