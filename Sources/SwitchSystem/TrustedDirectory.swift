import Glibc

/// Creating the directories that hold switchd's socket and database
/// without trusting one that someone else made first.
///
/// The rule is OpenSSH's `StrictModes` and the XDG base directory
/// specification's: a directory that already exists on the way is used only
/// if it belongs to the user or to root and nobody else may write to it
/// (unless its sticky bit is set, like `/tmp`'s: there nobody else can
/// remove or rename what is ours, and a file someone else made first is
/// refused: `checkOwnFiles`, and `switchd_claim_file` as SQLite creates
/// one). A private directory (the
/// `/tmp/switchd-UID` fallback for a missing `XDG_RUNTIME_DIR`) must in
/// addition be the user's own, not a symbolic link, and mode 0700.
public enum TrustedDirectory {
  public enum Failure: Error, Equatable, CustomStringConvertible {
    case untrusted(path: String, reason: String)
    case system(SystemError)

    public var description: String {
      switch self {
      case .untrusted(let path, let reason):
        return "refusing to use \(path): \(reason); remove it or fix its owner and mode"
      case .system(let error): return "\(error)"
      }
    }
  }

  /// `mkdir -p` of `directory` for the user `uid`: new directories get
  /// `mode`, existing ones must be trusted. `privateDirectory`, if on the
  /// way, must be `uid`'s own with mode 0700. `directory` itself, where
  /// switchd keeps its files, must be writable by nobody else even when
  /// sticky (CONFIG.md): a sticky bit keeps others from removing switchd's
  /// files, not from planting theirs (a `-journal` that blocked backups
  /// and every restart, or the socket's name taken first). A sticky folder
  /// on the way (`/tmp`) is fine: nobody else can move what is in it.
  public static func create(
    _ directory: String, mode: mode_t, uid: uid_t, privateDirectory: String? = nil
  ) throws(Failure) {
    // Built from "/" up: a relative path would be checked, and made, at the root.
    guard directory.isEmpty || directory.hasPrefix("/") else {
      throw .untrusted(path: directory, reason: "it is not an absolute path")
    }
    var prefix = ""
    let components = directory.split(separator: "/")
    for (index, component) in components.enumerated() {
      prefix += "/" + component
      if mkdir(prefix, mode) == 0 {
        // Ours; mkdir's mode passed through the umask, so set it exactly:
        // under a umask such as 0177 a directory made 0600 could not even
        // be searched by its owner (the database beside it then unreachable).
        if chmod(prefix, prefix == privateDirectory ? 0o700 : mode) != 0 {
          throw .system(.last("chmod \(prefix)"))
        }
      } else if errno != EEXIST {
        throw .system(.last("mkdir \(prefix)"))
      }
      if prefix == privateDirectory {
        try checkPrivate(prefix, uid: uid)
      } else {
        try checkTrusted(prefix, uid: uid, stickyWillDo: index < components.count - 1)
      }
    }
  }

  /// Files in a trusted directory that belong to the daemon (its database,
  /// WAL, journal and lock): each that exists must pass `ownFileProblem`.
  public static func checkOwnFiles(_ paths: [String], uid: uid_t) throws(Failure) {
    for path in paths {
      var st = stat()
      guard lstat(path, &st) == 0 else {
        if errno == ENOENT { continue }
        throw .system(.last("lstat \(path)"))
      }
      if let reason = ownFileProblem(st, uid: uid) { throw .untrusted(path: path, reason: reason) }
    }
  }

  /// Why a file of the daemon's (`st` from lstat, or fstat of what was
  /// opened) is not its own, or nil: it must be a regular file of `uid`'s
  /// or root's, with one name, that others may not write to. One left by
  /// another user (a database made by an earlier run under another
  /// account, or planted in a sticky folder), or a hard link to someone
  /// else's file, would be read or written as switchd's own. (The SQLite
  /// VFS checks the files SQLite opens by the same rule, in C:
  /// ClaimedFiles.c.)
  public static func ownFileProblem(_ st: stat, uid: uid_t) -> String? {
    guard (st.st_mode & S_IFMT) == S_IFREG else {
      return "it is \(TrustedFiles.kind(st.st_mode)), not a regular file"
    }
    guard st.st_uid == uid || st.st_uid == 0 else {
      return "it is owned by \(TrustedFiles.Problem.named(st.st_uid)), not by "
        + "\(TrustedFiles.Problem.named(uid)), the user switchd runs as"
    }
    if st.st_mode & 0o002 != 0 { return "others may write to it (mode \(octal(st.st_mode)))" }
    guard st.st_nlink == 1 else {
      return "it has \(st.st_nlink) names (hard links); switchd's files have one"
    }
    return nil
  }

  /// The folder that holds `path`'s name: "/" for a name at the root, "."
  /// for a bare name.
  public static func folder(of path: String) -> String {
    guard let slash = path.lastIndex(of: "/") else { return "." }
    return slash == path.startIndex ? "/" : String(path[..<slash])
  }

  /// Why `path` is not a private directory of `uid`'s (`checkPrivate`), or
  /// nil when it is. switchctl asks it of the folder of the user's own
  /// socket in `/tmp` before talking to whatever listens there.
  public static func privateDirectoryProblem(_ path: String, uid: uid_t) -> String? {
    do throws(Failure) {
      try checkPrivate(path, uid: uid)
      return nil
    } catch {
      return "\(error)"
    }
  }

  /// Why the existing directory `path` could be changed by someone but
  /// `uid` and root (`checkTrusted`), or nil when it cannot (or is gone).
  public static func folderProblem(_ path: String, uid: uid_t) -> String? {
    do throws(Failure) {
      try checkTrusted(path, uid: uid)
      return nil
    } catch .untrusted(_, let reason) {
      return reason
    } catch {
      return nil
    }
  }

  /// An existing directory (or a link to one) that the user or root owns
  /// and nobody else may write to, unless it is sticky and `stickyWillDo`.
  static func checkTrusted(
    _ path: String, uid: uid_t, stickyWillDo: Bool = true
  ) throws(Failure) {
    var st = try status(path, following: false)
    if (st.st_mode & S_IFMT) == S_IFLNK {
      guard st.st_uid == uid || st.st_uid == 0 else {
        throw .untrusted(path: path, reason: "it is a symbolic link owned by uid \(st.st_uid)")
      }
      st = try status(path, following: true)
    }
    guard (st.st_mode & S_IFMT) == S_IFDIR else {
      throw .untrusted(path: path, reason: "it is not a directory")
    }
    guard st.st_uid == uid || st.st_uid == 0 else {
      throw .untrusted(path: path, reason: "it is owned by uid \(st.st_uid), not \(uid)")
    }
    if st.st_mode & 0o022 != 0 && (st.st_mode & S_ISVTX == 0 || !stickyWillDo) {
      let writers = st.st_mode & 0o002 != 0 ? "others" : "its group"
      throw .untrusted(
        path: path,
        reason: st.st_mode & S_ISVTX == 0
          ? "\(writers) may write to it (mode \(octal(st.st_mode))) and it is not sticky"
          : "\(writers) may write to it (mode \(octal(st.st_mode))): a sticky bit keeps them "
            + "from removing switchd's files there, not from planting their own; use a folder "
            + "of its own")
    }
  }

  /// The XDG runtime directory rules: the user's own directory, not a
  /// link, mode 0700.
  static func checkPrivate(_ path: String, uid: uid_t) throws(Failure) {
    let st = try status(path, following: false)
    guard (st.st_mode & S_IFMT) == S_IFDIR else {
      let what = (st.st_mode & S_IFMT) == S_IFLNK ? "a symbolic link" : "not a directory"
      throw .untrusted(path: path, reason: "it is \(what)")
    }
    guard st.st_uid == uid else {
      throw .untrusted(path: path, reason: "it is owned by uid \(st.st_uid), not \(uid)")
    }
    guard st.st_mode & 0o777 == 0o700 else {
      throw .untrusted(path: path, reason: "its mode is \(octal(st.st_mode)), not 0700")
    }
  }

  private static func status(_ path: String, following: Bool) throws(Failure) -> stat {
    var st = stat()
    let rc = following ? stat(path, &st) : lstat(path, &st)
    guard rc == 0 else { throw .system(.last(following ? "stat \(path)" : "lstat \(path)")) }
    return st
  }
}
