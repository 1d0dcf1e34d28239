import Glibc

/// A fresh directory under /tmp, removed with everything in it at the end.
func withTemporaryDirectory(_ body: (String) throws -> Void) rethrows {
  var template = Array("/tmp/switchsystem-test-XXXXXX".utf8CString)
  let path = String(cString: mkdtemp(&template)!)
  defer { removeTree(path) }
  try body(path)
}

private func removeTree(_ path: String) {
  var st = stat()
  guard lstat(path, &st) == 0 else { return }
  if (st.st_mode & S_IFMT) == S_IFDIR {
    chmod(path, 0o700)
    if let dir = opendir(path) {
      var names: [String] = []
      while let entry = readdir(dir) {
        let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
          String(cString: raw.bindMemory(to: CChar.self).baseAddress!)
        }
        if name != "." && name != ".." { names.append(name) }
      }
      closedir(dir)
      for name in names { removeTree(path + "/" + name) }
    }
    rmdir(path)
  } else {
    unlink(path)
  }
}

func mode(of path: String) -> mode_t {
  var st = stat()
  precondition(lstat(path, &st) == 0, "lstat \(path)")
  return st.st_mode & 0o7777
}
