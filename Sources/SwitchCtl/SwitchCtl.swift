// SwitchCtl: switchctl as a library, so tests drive it in-process.
//
// Layers, each a file: `Arguments` turns the command line into an
// `Invocation` (pure); `Commands` is the table of commands, options and help
// texts the parser reads; `Environment` finds the socket; `Runner` makes the
// call through `DaemonClient` (a blocking Unix-socket client) and prints
// through `Output` (pure text rendering) to a `Console`; `Watcher` is the
// long-running `watch` with its reconnects; `ExitCode` maps every failure to
// one sentence and one exit status.
//
// Start-up matters: scripts call switchctl in loops. So it imports only the
// Swift standard library and Glibc (Foundation would add ~3 ms a call),
// reads only the environment variables it needs, and makes one blocking
// round trip on the main thread: no threads, no event loop.

import Glibc
import SwitchSystem

/// The `switchctl` command.
public enum SwitchCtl {
  /// Runs switchctl with `arguments` (without the program name) in this
  /// process, printing to stdout and stderr; returns the exit status.
  /// `argumentNotUTF8`: the place of the first argument that is not valid
  /// UTF-8 (`firstArgumentNotUTF8`), which `arguments` holds repaired.
  public static func main(_ arguments: [String], argumentNotUTF8: Int? = nil) -> Int32 {
    // A daemon that closes the socket must not kill us silently (exit 141).
    signal(SIGPIPE, SIG_IGN)
    let console = StandardConsole()
    let status = run(
      arguments, environment: .current(), console: console, argumentNotUTF8: argumentNotUTF8,
      handlesSignals: true)
    return finished(status, console: console).rawValue
  }

  /// `status`, unless standard output failed: then what was printed is
  /// lost (`switchctl --json list > file` on a full disk), which is a
  /// failure (1) however the call went.
  static func finished(_ status: ExitCode, console: Console) -> ExitCode {
    guard let why = console.outputFailure else { return status }
    console.err("switchctl: cannot write to standard output: " + why)
    return status == .success ? .failure : status
  }

  /// Runs switchctl against the given environment and console. Tests call
  /// this; `handlesSignals` is for the real process only.
  static func run(
    _ arguments: [String], environment: Environment, console: Console,
    argumentNotUTF8: Int? = nil, handlesSignals: Bool = false
  ) -> ExitCode {
    func refuse(_ error: UsageError) -> ExitCode {
      let failure = Failure.usage(error)
      // A script that asked for JSON reads the error object on stdout, as
      // for every other failure, also when the rest did not parse.
      if error.json { console.out(Output.json(failure.jsonObject)) }
      console.err(failure.lines)
      return failure.exitCode
    }
    let invocation: Invocation
    switch ArgumentParser.parse(arguments) {
    case .success(let parsed): invocation = parsed
    case .failure(let error):
      // Said before what the rest of the line got wrong, as below.
      guard let place = argumentNotUTF8 else { return refuse(error) }
      return refuse(UsageError(message: argumentNotUTF8Sentence(place), json: error.json))
    }
    // An argument that is not UTF-8 came repaired (U+FFFD): a path so given
    // would name another file. And so does a variable the socket is found from.
    if let place = argumentNotUTF8 {
      return refuse(UsageError(message: argumentNotUTF8Sentence(place), json: invocation.json))
    }
    let socket = environment.socket(flag: invocation.socket)
    if let notUTF8 = socket.notUTF8, invocation.command.talksToSwitchd {
      return refuse(UsageError(message: notUTF8, json: invocation.json))
    }
    if handlesSignals, case .watch = invocation.command { exitQuietlyOnInterrupt() }
    if let passedOver = socket.passedOver {
      console.err("switchctl: " + Output.printable(passedOver))
    }
    var runner = Runner(invocation: invocation, socketPath: socket.path, console: console)
    // As systemctl: on a terminal, polkit may ask the person (root never is asked).
    if invocation.askPassword && environment.isTerminal && environment.uid != 0 {
      runner.polkitAgent = PolkitAgent()
    }
    return runner.run()
  }

  /// Interrupting a watch is how it ends, not a failure: SIGINT and SIGTERM
  /// exit 0. Every line is already written (no buffer), so exiting at once
  /// loses nothing. A signal the parent set to be ignored stays ignored (a
  /// shell does that to background jobs), and both are unblocked, since a
  /// parent's blocked mask is inherited and would make `watch` unstoppable.
  private static func exitQuietlyOnInterrupt() {
    var unblock = sigset_t()
    sigemptyset(&unblock)
    for signalNumber in [SIGINT, SIGTERM] {
      let previous = signal(signalNumber) { _ in _exit(0) }
      if unsafeBitCast(previous, to: Int.self) == unsafeBitCast(SIG_IGN, to: Int.self) {
        signal(signalNumber, SIG_IGN)
      }
      sigaddset(&unblock, signalNumber)
    }
    sigprocmask(SIG_UNBLOCK, &unblock, nil)
  }
}
