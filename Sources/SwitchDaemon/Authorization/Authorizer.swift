import CShim
import Glibc
import SwitchPolkit
import SwitchSystem

/// The thread that asks polkit (`Authorization=polkit`), so that the event
/// loop never waits on D-Bus: the loop hands it checks (`ask`) and takes the
/// answers when it wakes (`answers`). Its checks are asynchronous on one bus
/// connection, so a slow answer (a person typing a password) delays only
/// the call that waits for it. Started on the first check: under
/// `Authorization=builtin` no bus is ever opened. Like the config reader,
/// it is not waited for at exit.
final class Authorizer: @unchecked Sendable {
  struct Question: Sendable {
    /// The loop's id of the waiting call (never 0).
    var id: UInt64
    var check: PolkitCheck
  }

  struct Answer: Sendable {
    var id: UInt64
    var answer: PolkitAnswer
  }

  private let questions = BlockingQueue<Question>()
  private let answers = BlockingQueue<Answer>()
  /// Wakes this thread when a question comes.
  private let eventFD: Int32
  private let loopWakeFD: Int32
  private var started = false

  init(loopWakeFD: Int32) {
    self.loopWakeFD = loopWakeFD
    eventFD = shim_eventfd()
  }

  /// Hands a check to the thread; its answer comes back through `answered()`.
  func ask(_ question: Question) {
    guard eventFD >= 0 else {
      // No way to wake the thread: every check is unanswerable.
      answers.push(
        Answer(id: question.id, answer: .unreachable("no eventfd for the polkit thread")))
      var one: UInt64 = 1
      _ = write(loopWakeFD, &one, 8)
      return
    }
    if !started {
      started = true
      let questions = self.questions
      let answers = self.answers
      let (eventFD, loopWakeFD) = (self.eventFD, self.loopWakeFD)
      startThread(named: "polkit") {
        Self.serve(questions: questions, answers: answers, eventFD: eventFD, loopWakeFD: loopWakeFD)
      }
    }
    questions.push(question)
    var one: UInt64 = 1
    _ = write(eventFD, &one, 8)
  }

  /// The answers that came since the last call.
  func answered() -> [Answer] { answers.drain() }

  /// The thread's loop: send what was asked, read the bus, wait for either.
  private static func serve(
    questions: BlockingQueue<Question>, answers: BlockingQueue<Answer>, eventFD: Int32,
    loopWakeFD: Int32
  ) {
    let authority = PolkitAuthority { id, answer in
      answers.push(Answer(id: id, answer: answer))
      var one: UInt64 = 1
      _ = write(loopWakeFD, &one, 8)
    }
    while true {
      var count: UInt64 = 0
      _ = read(eventFD, &count, 8)
      for question in questions.drain() { authority.send(question.check, id: question.id) }
      authority.process()
      var fds = [pollfd(fd: eventFD, events: Int16(POLLIN), revents: 0)]
      var timeout: Int32 = -1
      if let request = authority.pollRequest {
        fds.append(pollfd(fd: request.fd, events: request.events, revents: 0))
        if request.deadline != .max {
          var now = timespec()
          clock_gettime(CLOCK_MONOTONIC, &now)
          let nowMicroseconds = UInt64(now.tv_sec) * 1_000_000 + UInt64(now.tv_nsec) / 1000
          let wait = request.deadline > nowMicroseconds ? request.deadline - nowMicroseconds : 0
          timeout = Int32(min(wait / 1000 + 1, 60_000))
        }
      }
      _ = poll(&fds, nfds_t(fds.count), timeout)
    }
  }
}
