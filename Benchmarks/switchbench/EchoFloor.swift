import Glibc
import SwitchSystem

/// The machine's floor for a request/response over a Unix socket: a minimal
/// single-threaded poll loop that answers every line with a canned line of
/// the same size as switchd's answer. It runs as a separate process (this
/// executable with `--serve-echo`), like switchd and Redis, so a round trip
/// crosses processes for all three. Lines starting with `S` subscribe the
/// connection, lines starting with `P` send an event line to every
/// subscriber (the floor for fan-out).
final class EchoFloor {
  let path: String
  let pid: pid_t

  init(path: String, replyBytes: Int, eventBytes: Int) throws {
    self.path = path
    unlink(path)
    pid = try spawn(
      executablePath(), ["--serve-echo", path, "\(replyBytes)", "\(eventBytes)"],
      name: "echo floor")
    let deadline = nowSeconds() + 10
    while nowSeconds() < deadline {
      let fd = connectUnix(path)
      if fd >= 0 {
        close(fd)
        return
      }
      sleepSeconds(0.001)
    }
    stopProcess(pid)
    throw BenchError("the echo floor did not start")
  }

  func stop() {
    stopProcess(pid)
    unlink(path)
  }

  /// The `--serve-echo PATH REPLY EVENT` mode: serves until killed.
  static func serve(_ arguments: [String]) -> Int32 {
    guard arguments.count == 3, let replyBytes = Int(arguments[1]),
      let eventBytes = Int(arguments[2])
    else {
      printError("usage: switchbench --serve-echo PATH REPLY-BYTES EVENT-BYTES")
      return 2
    }
    signal(SIGPIPE, SIG_IGN)
    raiseFileLimit()
    do {
      let listener = try listenUnix(arguments[0])
      setNonBlocking(listener)
      var loop = EchoLoop(
        listener: listener, reply: echoReply(replyBytes),
        event: fillerLine(eventBytes, tag: "event"))
      loop.run()
      return 0
    } catch {
      printError("switchbench --serve-echo: \(error)")
      return 1
    }
  }
}

/// A JSON-RPC answer line of exactly `bytes` bytes (with its newline).
func echoReply(_ bytes: Int) -> [UInt8] {
  let head = "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"filler\":\""
  let tail = "\"}}"
  let pad = max(0, bytes - 1 - head.utf8.count - tail.utf8.count)
  return Array((head + String(repeating: "x", count: pad) + tail + "\n").utf8)
}

private struct EchoLoop {
  struct Peer {
    var fd: Int32
    var out: [UInt8] = []
    var outStart = 0
    var subscribed = false
    var partial = false
  }

  let listener: Int32
  let reply: [UInt8]
  let event: [UInt8]
  var peers: [Peer] = []
  var buffer = [UInt8](repeating: 0, count: 65_536)

  init(listener: Int32, reply: [UInt8], event: [UInt8]) {
    self.listener = listener
    self.reply = reply
    self.event = event
  }

  /// Serves until the process is killed.
  mutating func run() {
    var fds: [pollfd] = []
    while true {
      fds.removeAll(keepingCapacity: true)
      fds.append(pollfd(fd: listener, events: Int16(POLLIN), revents: 0))
      for peer in peers {
        let events = peer.outStart < peer.out.count ? POLLIN | POLLOUT : POLLIN
        fds.append(pollfd(fd: peer.fd, events: Int16(events), revents: 0))
      }
      let n = retryingEINTR { poll(&fds, nfds_t(fds.count), 1000) }
      if n < 0 { break }
      if fds[0].revents != 0 { acceptAll() }
      var closed: [Int] = []
      for index in 0..<(fds.count - 1) where fds[index + 1].revents != 0 {
        if !serve(index) { closed.append(index) }
      }
      for index in closed.reversed() {
        close(peers[index].fd)
        peers.remove(at: index)
      }
    }
    for peer in peers { close(peer.fd) }
  }

  private mutating func acceptAll() {
    for _ in 0..<256 {
      let fd = accept(listener, nil, nil)
      if fd < 0 { return }
      setNonBlocking(fd)
      peers.append(Peer(fd: fd))
    }
  }

  /// Reads what is there, answers each complete line; false when the peer is gone.
  private mutating func serve(_ index: Int) -> Bool {
    for _ in 0..<4 {
      let n = buffer.withUnsafeMutableBytes { raw in
        retryingEINTR { recv(peers[index].fd, raw.baseAddress, raw.count, Int32(MSG_DONTWAIT)) }
      }
      if n == 0 { return false }
      if n < 0 {
        if errno == EAGAIN || errno == EWOULDBLOCK { break }
        return false
      }
      var lineStart = !peers[index].partial
      for i in 0..<n {
        let byte = buffer[i]
        if lineStart {
          lineStart = false
          if byte == UInt8(ascii: "S") {
            peers[index].subscribed = true
          } else if byte == UInt8(ascii: "P") {
            broadcast()
          }
        }
        if byte == 0x0A {
          peers[index].out.append(contentsOf: reply)
          lineStart = true
        }
      }
      peers[index].partial = !lineStart
      if n < buffer.count { break }
    }
    return flush(index)
  }

  private mutating func broadcast() {
    for index in peers.indices where peers[index].subscribed {
      peers[index].out.append(contentsOf: event)
      _ = flush(index)
    }
  }

  private mutating func flush(_ index: Int) -> Bool {
    while peers[index].outStart < peers[index].out.count {
      let fd = peers[index].fd
      let start = peers[index].outStart
      let n = peers[index].out.withUnsafeBytes { raw in
        retryingEINTR {
          send(
            fd, raw.baseAddress! + start, raw.count - start,
            Int32(MSG_NOSIGNAL | MSG_DONTWAIT))
        }
      }
      if n < 0 { return errno == EAGAIN || errno == EWOULDBLOCK }
      peers[index].outStart += n
    }
    peers[index].out.removeAll(keepingCapacity: true)
    peers[index].outStart = 0
    return true
  }
}
