import Glibc
import SwitchSystem

/// Passing descriptors to the peer with an answer (SCM_RIGHTS): `backup`
/// hands over its copy this way. A descriptor belongs to its answer's
/// slot until the slot goes into the output queue, then to the position of
/// the line's first byte there (`descriptorsToSend`); the send that starts
/// at that position carries it, and the peer receives it with that line.
/// Responses keep their order and flow control, as any other answer.
///
/// Nothing is ever received: the loop reads with `recv`, which takes no
/// descriptors, so whatever a client sends is closed by the kernel.
extension Connection {
  /// Fills a single answer whose line passes `descriptor`; the connection
  /// owns it from now on (passed, or closed with the connection).
  func fill(slot seq: UInt64, part: Int, with bytes: [UInt8], passing descriptor: Int32) {
    guard let first = slots.first, seq >= first.seq, Int(seq - first.seq) < slots.count else {
      close(descriptor)
      return
    }
    slots[Int(seq - first.seq)].descriptors.append(descriptor)
    fill(slot: seq, part: part, with: bytes)
  }

  /// Sends from `outStart`, where descriptors wait, passing them: up to
  /// the next position that has descriptors of its own, at most `budget`
  /// bytes. Once any byte went out the peer holds its copies, and ours are
  /// closed. Returns the bytes sent, or -1 with errno.
  func sendPassingDescriptors(budget: Int) -> Int {
    let here = descriptorsToSend.prefix { $0.at == outStart }
    let passed = min(here.count, DescriptorPassing.maxPerMessage)
    // More than one message holds: the rest go with the next byte.
    let more = here.count > passed
    let end =
      more ? outStart + 1 : descriptorsToSend.first { $0.at > outStart }?.at ?? out.count
    let n = out.withUnsafeBytes { raw in
      DescriptorPassing.send(
        fd,
        UnsafeRawBufferPointer(rebasing: raw[outStart..<outStart + min(end - outStart, budget)]),
        passing: here.prefix(passed).map { $0.fd }, flags: Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT)
      )
    }
    guard n > 0 else { return n }
    for descriptor in descriptorsToSend.prefix(passed) { close(descriptor.fd) }
    descriptorsToSend.removeFirst(passed)
    if more {
      for i in 0..<(here.count - passed) { descriptorsToSend[i].at += 1 }
    }
    return n
  }

  /// Closes the descriptors not yet passed: the connection is closing.
  func closeUnsentDescriptors() {
    for descriptor in descriptorsToSend { close(descriptor.fd) }
    descriptorsToSend.removeAll()
    for index in slots.indices {
      for descriptor in slots[index].descriptors { close(descriptor) }
      slots[index].descriptors.removeAll()
    }
  }
}
