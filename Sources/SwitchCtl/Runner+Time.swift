import CShim
import Glibc
import SwitchProtocol
import SwitchSystem

// `--for`, `--until` and `--confirm` (SEMANTICS.md rules 20–22): the params
// they send, and the question a tried change asks on a terminal.
extension Runner {
  /// `for` or `until`, from `--for` or `--until`.
  var lastingParams: [JSONMember] {
    var params: [JSONMember] = []
    let timing = invocation.timing
    if let seconds = timing.forSeconds { params.append(JSONMember(WireField.for, .int(seconds))) }
    if let until = timing.until {
      params.append(JSONMember(WireField.until, .string(Timestamp.iso8601(milliseconds: until))))
    }
    return params
  }

  /// Whether a tried change stays to ask: on a terminal, unless `--no-ask`
  /// or `--json` (a script reads the result and settles it later).
  var asksToKeep: Bool {
    !invocation.timing.noAsk && !invocation.json && isatty(0) == 1 && isatty(1) == 1
  }

  /// set or toggle with its time options. A tried change that asks keeps
  /// its connection open while it asks: the connection is the change's
  /// maker, so a lost session (or a second ^C, once the question is
  /// answered) reverts it (`revertOnDisconnect`); ^C at the question is its
  /// answer no.
  func timedWrite(_ method: SwitchProtocol.Method, key: String, _ params: [JSONMember])
    throws(Failure)
  {
    guard let seconds = invocation.timing.confirmWithin else {
      try write(method, params + lastingParams)
      return
    }
    let asks = asksToKeep
    let tried =
      params + [
        JSONMember(WireField.confirmWithin, .int(seconds)),
        JSONMember(WireField.revertOnDisconnect, .bool(asks)),
      ]
    // A write: polkit may ask the person first, as `call(_:_:)` allows for.
    let client = try connect(receiveTimeout: polkitAgent != nil ? Self.interactiveTimeout : nil)
    let answer = try call(client, method, tried)
    let result = try decode(answer, as: WriteResult.self)
    console.out(invocation.json ? [Output.json(answer)] : [Output.write(result)])
    guard result.changed, let until = result.switchObject.state.pendingUntil else { return }
    guard asks else {
      // With --json the result says it (`pendingUntil`), and stdout is JSON alone.
      if !invocation.json {
        console.out(
          "\(key) reverts at \(Output.localClock(until, seconds: true)) unless confirmed: switchctl confirm \(key)"
        )
      }
      return
    }
    // ^C at the question is its answer "no": the change is reverted and
    // the line says so (killed by the signal, switchctl left the revert to
    // the closed connection, and the person saw nothing of it).
    let interrupt = shim_signalfd_interrupt()
    let keep = KeepQuestion(until: until).ask(interrupt: interrupt)
    if interrupt >= 0 { shim_signalfd_interrupt_end(interrupt) }
    let settling: SwitchProtocol.Method = keep ? .confirm : .revert
    let settled = try settle(settling, key: key, on: client, until: until)
    let outcome = Output.TriedOutcome(keep: keep, tried: result, settled: settled)
    console.out(Output.settled(outcome, settled))
    // Exit status 0 only when the value the try set stays: `switchctl on
    // wifi --confirm 30s && …` goes on only then (an audit).
    if !outcome.stays { throw .local("\(key) was not kept: the change was reverted") }
  }

  /// `confirm` or `revert` of the change tried on `client`. The change
  /// outlives a restart of switchd (rule 20: only its deadline decides
  /// then), so an answer the person gave while switchd restarted is not
  /// lost: on a connection that closed, switchctl connects again until the
  /// change's deadline (`until`) and settles it there; any connection of
  /// the maker's uid may (an audit: the "y" was lost, and the change reverted).
  func settle(
    _ settling: SwitchProtocol.Method, key: String, on client: DaemonClient, until: Int64
  ) throws(Failure) -> WriteResult {
    do throws(Failure) {
      return try decode(try call(client, settling, try keyParam(key)), as: WriteResult.self)
    } catch .client(.closed(let path)) {
      console.err(
        "switchctl: switchd at \(path) closed the connection; connecting again until "
          + Output.localClock(until, seconds: true) + " to \(settling.rawValue) the change")
      while true {
        do throws(Failure) {
          let again = try connect()
          return try decode(try call(again, settling, try keyParam(key)), as: WriteResult.self)
        } catch .client(let error) {
          switch error {
          case .unreachable, .closed: break
          default: throw .client(error)
          }
          // A second past the deadline: by then switchd has reverted it,
          // which the answer then says.
          guard wallClockMilliseconds() < until + 1000 else { throw .client(error) }
          usleep(200_000)
        }
      }
    }
  }
}

/// "Keep this change? [y/N]" with the seconds left, redrawn each second;
/// yes keeps, anything else, no answer in time, end of input or ^C reverts.
struct KeepQuestion {
  var until: Int64

  /// Asks on `input` (standard input), drawing the question with `draw`
  /// (standard output, at once); `interrupt`, when not -1, becomes
  /// readable on ^C (`shim_signalfd_interrupt`), which answers no.
  func ask(
    input: Int32 = 0, interrupt: Int32 = -1, draw: (String) -> Void = FileHandleOut.write
  ) -> Bool {
    var line: [UInt8] = []
    // The line a person ends with Enter is ended on the terminal already.
    var ended = false
    defer { if !ended { draw("\n") } }
    // Redrawn when the seconds left change, not after each key: a redraw
    // after the answer's letter put a second prompt after it.
    var shown: Int64?
    while true {
      let left = KeepQuestion.secondsLeft(until: until, now: wallClockMilliseconds())
      guard left > 0 else { return false }
      if left != shown && line.isEmpty {
        draw("\rKeep this change? [y/N] (\(left) s left) ")
        shown = left
      }
      // A descriptor of -1 is one poll leaves alone.
      var fds = [
        pollfd(fd: input, events: Int16(POLLIN), revents: 0),
        pollfd(fd: interrupt, events: Int16(POLLIN), revents: 0),
      ]
      let ready = poll(&fds, 2, 1000)
      if ready < 0 && errno != EINTR { return false }
      guard ready > 0 else { continue }
      if fds[1].revents != 0 { return false }
      var byte: UInt8 = 0
      let n = read(input, &byte, 1)
      guard n == 1 else { return false }
      if byte == UInt8(ascii: "\n") {
        ended = true
        return KeepQuestion.isYes(line)
      }
      line.append(byte)
    }
  }

  static func secondsLeft(until: Int64, now: Int64) -> Int64 { max(0, (until - now + 999) / 1000) }

  static func isYes(_ answer: [UInt8]) -> Bool {
    let word = String(decoding: answer, as: UTF8.self).lowercased().filter { !$0.isWhitespace }
    return word == "y" || word == "yes"
  }
}

/// Writes to standard output at once (the question has no newline).
enum FileHandleOut {
  static func write(_ text: String) {
    var bytes = Array(text.utf8)
    _ = Glibc.write(1, &bytes, bytes.count)
  }
}
