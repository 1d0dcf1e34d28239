import Glibc
import SwitchSystem

// An answer line with a large part that many connections share: a `list`
// or `watch` snapshot of every switch is a kept array of Switch objects
// (`SwitchLists`, ~5.3 MB with 10,000 switches) between a small head and
// tail. Copied into each connection's queue, a thousand watchers asking
// for everything at once held a thousand copies (5.4 GB, VmHWM); queued
// by reference, they hold the one the cache holds. The queue is then the
// buffers in `ahead`, each sent from where it lies, then `out`.
extension Connection {
  /// Queues a single request's answer line, `head`, `shared` and `tail`
  /// (its line end included), without copying `shared` when its slot is
  /// the next to go out; else it waits in its slot, joined.
  func queue(head: [UInt8], shared: [UInt8], tail: [UInt8], slot seq: UInt64, part: Int) {
    guard let first = slots.first, first.seq == seq, !first.isBatch,
      // A descriptor's place is counted in `out`, which must stay whole.
      descriptorsToSend.isEmpty
    else {
      var line = head
      line.reserveCapacity(head.count + shared.count + tail.count)
      line.append(contentsOf: shared)
      line.append(contentsOf: tail)
      fill(slot: seq, part: part, with: line, lineEnded: true)
      return
    }
    // What is unsent goes first, as it is; the tail and what follows it
    // go into `out`.
    if outStart < out.count {
      queueAhead(out, from: outStart)
      out = []
    } else {
      out.removeAll(keepingCapacity: true)
    }
    outStart = 0
    queueAhead(head, from: 0)
    queueAhead(shared, from: 0)
    out.append(contentsOf: tail)
    responseBytesQueued += head.count + shared.count + tail.count
    dropSlots(1)
    flushCompletedSlots()
  }

  private func queueAhead(_ bytes: [UInt8], from start: Int) {
    guard start < bytes.count else { return }
    ahead.append((bytes, start))
    aheadUnsent += bytes.count - start
  }

  /// Sends `ahead` in order, counting into `sent` up to `budget`;
  /// `.drained` once all of it went out.
  func sendAhead(budget: Int, sent: inout Int) -> SendResult {
    while let (bytes, start) = ahead.first {
      if sent >= budget { return .budgetSpent }
      let n = bytes.withUnsafeBytes { raw in
        retryingEINTR {
          Glibc.send(
            fd, raw.baseAddress! + start, min(bytes.count - start, budget - sent),
            Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT))
        }
      }
      if n < 0 {
        if errno == EAGAIN || errno == EWOULDBLOCK { return .wouldBlock }
        return .failed
      }
      sent += n
      aheadUnsent -= n
      if start + n == bytes.count {
        ahead.removeFirst()
      } else {
        ahead[0].start += n
      }
    }
    return .drained
  }
}
