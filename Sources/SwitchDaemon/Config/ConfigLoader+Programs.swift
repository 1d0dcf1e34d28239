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

  /// Why someone else could change the program at `path` (a link is
  /// followed), or nil when only root or the daemon's user can.
  static func programProblem(_ path: String, trust: TrustedFiles) -> String? {
    var status = stat()
    guard stat(path, &status) == 0 else { return nil }
    if !trust.trusts(status) {
      return "it is owned by \(TrustedFiles.Problem.named(status.st_uid)) with mode "
        + octal(status.st_mode)
    }
    guard let real = realpath(path, nil) else { return nil }
    defer { free(real) }
    let resolved = String(cString: real)
    let folder = resolved.lastIndex(of: "/").map { String(resolved[..<$0]) } ?? "."
    var folderStatus = stat()
    guard stat(folder.isEmpty ? "/" : folder, &folderStatus) == 0 else { return nil }
    let othersMayRename = folderStatus.st_mode & 0o022 != 0 && folderStatus.st_mode & S_ISVTX == 0
    if !trust.owners.contains(folderStatus.st_uid) || othersMayRename {
      return "its folder \(folder.isEmpty ? "/" : folder) is owned by "
        + "\(TrustedFiles.Problem.named(folderStatus.st_uid)) with mode \(octal(folderStatus.st_mode))"
    }
    return nil
  }
}
