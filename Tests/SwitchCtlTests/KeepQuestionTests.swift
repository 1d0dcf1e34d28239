import Glibc
import SwitchSystem
import Testing

@testable import SwitchCtl

/// The question after `--confirm` on a terminal, driven through a pipe.
@Suite struct KeepQuestionTests {
  /// What the question draws and answers when `typed` is what the person typed.
  static func asked(_ typed: String) -> (kept: Bool, drawn: String) {
    var fds: [Int32] = [0, 0]
    guard pipe(&fds) == 0 else { return (false, "") }
    defer { close(fds[0]) }
    let bytes = Array(typed.utf8)
    _ = write(fds[1], bytes, bytes.count)
    close(fds[1])
    var drawn = ""
    let question = KeepQuestion(until: wallClockMilliseconds() + 30_000)
    let kept = question.ask(input: fds[0]) { drawn += $0 }
    return (kept, drawn)
  }

  /// The question is drawn once, not again after each key typed (a
  /// second prompt after the answer's letter).
  @Test func theQuestionIsNotDrawnAgainAfterTheAnswer() {
    for (typed, kept) in [("y\n", true), ("yes\n", true), ("n\n", false), ("\n", false)] {
      let asked = Self.asked(typed)
      #expect(asked.kept == kept, "\(typed)")
      let prompts = asked.drawn.split(separator: "\r").filter { $0.hasPrefix("Keep this change?") }
      #expect(prompts.count == 1, "\(typed): \(asked.drawn)")
    }
    // End of input without an answer reverts.
    #expect(Self.asked("").kept == false)
  }

  /// ^C (its signalfd readable, here a pipe) answers no at once, with the
  /// question's line ended, while nothing was typed.
  @Test func anInterruptAnswersNo() {
    var input: [Int32] = [0, 0]
    var interrupt: [Int32] = [0, 0]
    guard pipe(&input) == 0, pipe(&interrupt) == 0 else {
      Issue.record("no pipe")
      return
    }
    defer { for fd in input + interrupt { close(fd) } }
    var byte: UInt8 = 3
    _ = write(interrupt[1], &byte, 1)
    // A "yes" typed too: the ^C came first and wins (without looking at
    // it, the question would keep the change, a failure rather than a hang).
    _ = write(input[1], "y\n", 2)
    var drawn = ""
    let question = KeepQuestion(until: wallClockMilliseconds() + 30_000)
    let kept = question.ask(input: input[0], interrupt: interrupt[0]) { drawn += $0 }
    #expect(!kept)
    #expect(drawn.hasPrefix("\rKeep this change? [y/N]"))
    #expect(drawn.hasSuffix("\n"))
  }

  /// An answer ended with Enter ends its line on the terminal: no blank
  /// line after it. A question that ends otherwise ends its own line.
  @Test func anAnswerLeavesNoBlankLine() {
    #expect(!Self.asked("y\n").drawn.hasSuffix("\n"))
    #expect(Self.asked("").drawn.hasSuffix("\n"))
  }
}
