import Glibc
import SwitchCore
import SwitchSystem

extension ConfigLoader {
  /// A warning for each program the configuration runs as the daemon's
  /// user (`ExecApply=`, `ExecCheck=`, `ExecWatch=`) that someone else
  /// could change: not owned by root or that user, writable by its group or
  /// others, or in a folder others may write to (and not sticky). Whoever
  /// may rewrite the program runs code as switchd, as surely as one who may
  /// write `switches.d`. A warning, not an error: CONFIG.md's trust rule is
  /// for the configuration's own files, and a program may be installed
  /// after the configuration that names it (a missing one is not warned of).
  static func programWarnings(_ catalog: Catalog, trust: TrustedFiles) -> [ConfigDiagnostic] {
    var warned: Set<String> = []
    var warnings: [ConfigDiagnostic] = []
    for key in catalog.sortedKeys {
      guard let definition = catalog.switches[key] else { continue }
      let programs = [
        ("ExecApply", definition.apply?.path),
        ("ExecCheck", definition.readBack?.check?.first),
        ("ExecWatch", definition.readBack?.watch?.first),
      ]
      for case (let setting, let path?) in programs where !warned.contains(path) {
        guard let problem = programProblem(path, trust: trust) else { continue }
        warned.insert(path)
        warnings.append(
          ConfigDiagnostic(
            .warning, definition.source,
            "\(setting)= of [\(key)] runs \(path), but \(problem): whoever may change it "
              + "runs code as \(TrustedFiles.Problem.named(getuid()))"))
      }
    }
    return warnings
  }

  /// Why someone else could change the program at `path`, or nil when
  /// only root or the daemon's user can: the program (a link followed) and
  /// the folders that hold its name as given and as resolved. (Folders
  /// further up are not looked at.)
  static func programProblem(_ path: String, trust: TrustedFiles) -> String? {
    var status = stat()
    guard stat(path, &status) == 0 else { return nil }
    if !trust.owners.contains(status.st_uid) {
      return "it is owned by \(TrustedFiles.Problem.named(status.st_uid))"
    }
    if status.st_mode & 0o022 != 0 {
      let writers = status.st_mode & 0o002 != 0 ? "others" : "its group"
      return "\(writers) may write to it (mode \(octal(status.st_mode)))"
    }
    var folders = [TrustedDirectory.folder(of: path)]
    if let real = realpath(path, nil) {
      folders.append(TrustedDirectory.folder(of: String(cString: real)))
      free(real)
    }
    for folder in folders {
      if let reason = TrustedDirectory.folderProblem(folder, uid: getuid()) {
        return "its folder \(folder) is not safe: \(reason)"
      }
    }
    return nil
  }
}
