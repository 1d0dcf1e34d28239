import Glibc
import SwitchSystem

/// The machine's `/etc/passwd` and `/etc/group`, which two kinds of tests
/// share. Some change them (`groupadd`, `useradd`, `usermod` each write a
/// new file and rename it over the old); a `PolkitWorld` bind-mounts the
/// test's copies over them in polkitd's mount namespace. Linux drops a
/// mount whose file is renamed over, in every namespace (since 3.18):
/// polkitd then read the machine's files, where the test's user is in no
/// group, and a rule granting the group did not apply (a CI run: a write
/// refused with "only after authentication"). A change waits until no
/// world is up, and a world waits while a change runs or waits.
public enum SystemAccounts {
  private struct State {
    var worlds = 0
    var changing = false
    var waitingChanges = 0
  }
  private static let state = ThreadLock(State())

  /// Runs `argv`, a command that changes the user or group database,
  /// while no polkit world is up.
  public static func change(_ argv: [String]) -> ProcessResult {
    state.withLock { $0.waitingChanges += 1 }
    waitUntil { state in
      guard state.worlds == 0, !state.changing else { return false }
      state.changing = true
      state.waitingChanges -= 1
      return true
    }
    defer { state.withLock { $0.changing = false } }
    return runProcess(argv)
  }

  /// A polkit world comes up: waits while a change runs or waits.
  static func worldStarts() {
    waitUntil { state in
      guard !state.changing, state.waitingChanges == 0 else { return false }
      state.worlds += 1
      return true
    }
  }

  /// Changes waiting for the worlds to end (for the gate's own test).
  static var waitingChanges: Int { state.withLock { $0.waitingChanges } }

  static func worldEnds() {
    state.withLock { $0.worlds -= 1 }
  }

  /// Polls (10 ms) until `take` succeeds under the lock: the holders are
  /// other tests, which release it from whichever thread they end on.
  private static func waitUntil(_ take: (inout State) -> Bool) {
    while !state.withLock({ take(&$0) }) { usleep(10_000) }
  }
}
