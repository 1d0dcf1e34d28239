import CShim
import Glibc
import SwitchCore
import SwitchProtocol
import SwitchStore
import SwitchSystem

// The loop's turns, its timers, signals and the shutdown sequence.
extension Server {
  // MARK: The loop

  /// Serves until SIGTERM or SIGINT, then finishes the writes received,
  /// answers them, and returns.
  func run() {
    if let interval = notifier.watchdogInterval { nextWatchdog = monotonicSeconds() + interval }
    while !finished { turn(timeoutMilliseconds: loopTimeoutMilliseconds()) }
    finishShutdown()
  }

  /// Whether the loop is done: stopping and the writer has ended, or epoll failed.
  var finished: Bool { (writerStopped && stopping) || epollFailed }

  /// One turn of the loop: waits for events (at most `timeoutMilliseconds`)
  /// and serves them. Tests drive the loop with it from their own thread.
  func turn(timeoutMilliseconds: Int32) {
    let n = shim_epoll_wait(epoll, &events, &tokens, 256, timeoutMilliseconds)
    if n < 0 && errno != EINTR {
      log.error("epoll_wait failed: \(SystemError.last("epoll_wait"))")
      epollFailed = true
      return
    }
    for i in 0..<max(0, Int(n)) {
      switch tokens[i] {
      case Self.listenerToken: acceptConnections(.jsonRPC)
      case Self.varlinkListenerToken: acceptConnections(.varlink)
      case Self.wakeToken:
        drainWriterOutputs()
        drainReaderOutputs()
        drainBackups()
        drainPolkitAnswers()
      case Self.signalToken: handleSignals()
      case Self.folderWatchToken: drainFolderWatch()
      default: connectionEvent(tokens[i], events[i])
      }
    }
    resumeHeldForBacklog()
    handOverWrites()
    tick()
  }

  /// Something happened in the database's folder: noted for the writer's
  /// next commit, in this turn, before the turn's writes are handed over
  /// (`FolderWatch`). A watch the kernel dropped is no longer polled.
  func drainFolderWatch() {
    guard let folderWatch, !folderWatch.drain() else { return }
    _ = shim_epoll_ctl(epoll, Int32(SHIM_EPOLL_DEL), folderWatch.descriptor, 0, 0)
  }

  func loopTimeoutMilliseconds() -> Int32 {
    var timeout = 1000.0
    let now = monotonicSeconds()
    if notifier.watchdogInterval != nil { timeout = min(timeout, max(0, nextWatchdog - now)) }
    if acceptPausedUntil > now { timeout = min(timeout, acceptPausedUntil - now) }
    if stopping { timeout = min(timeout, 0.05) }
    return Int32(timeout * 1000) + 1
  }

  /// Timers: the watchdog ping (only a loop that turns pings), resuming
  /// accept after EMFILE, and the shutdown sequence.
  func tick() {
    let now = monotonicSeconds()
    if let interval = notifier.watchdogInterval, now >= nextWatchdog {
      notifier.send("WATCHDOG=1")
      nextWatchdog = now + interval
    }
    if acceptPausedUntil != 0, now >= acceptPausedUntil, !stopping {
      acceptPausedUntil = 0
      for (listener, token) in [
        (listener, Self.listenerToken), (varlinkListener, Self.varlinkListenerToken),
      ] {
        guard let listener else { continue }
        _ = shim_epoll_ctl(epoll, Int32(SHIM_EPOLL_MOD), listener.fd, UInt32(SHIM_EPOLLIN), token)
      }
    }
    if stopping && !stopSentToReader {
      let busy = connections.values.contains {
        $0.writesInFlight > 0 || $0.barriersInFlight > 0 || $0.hasPending
      }
      if !busy || now >= stopDeadline {
        readerJobs.push(.stop)
        stopSentToReader = true
        refuseParkedPolkitCalls()
      }
    }
    // The read-only connection closes first, so that the writer's close is
    // the last one and SQLite checkpoints and removes the WAL.
    if stopSentToReader && readerStopped && !stopSentToWriter {
      jobs.push(.stop)
      stopSentToWriter = true
      configReader.stop()
    }
  }

  // MARK: Signals and shutdown

  func handleSignals() {
    while true {
      let signal = shim_signalfd_read(signalFD)
      if signal < 0 { return }
      if signal == SIGHUP {
        notifier.send("RELOADING=1")
        log.info("SIGHUP: reloading the configuration")
        configReader.reload(nil)
      } else if signal == SIGTERM || signal == SIGINT {
        beginShutdown(signal == SIGTERM ? "SIGTERM" : "SIGINT")
      }
    }
  }

  /// Stops accepting and reading; what was received still runs and is answered.
  func beginShutdown(_ why: String) {
    guard !stopping else { return }
    stopping = true
    stopDeadline = monotonicSeconds() + 10
    notifier.send("STOPPING=1")
    log.notice("\(why): stopping; finishing the writes received")
    for listener in [listener, varlinkListener] {
      guard let listener else { continue }
      _ = shim_epoll_ctl(epoll, Int32(SHIM_EPOLL_DEL), listener.fd, 0, 0)
      listener.close()
    }
    listener = nil
    varlinkListener = nil
    for connection in Array(connections.values) { pump(connection) }
  }

  /// After the writer has stopped: flush what is queued (bounded), close all.
  func finishShutdown() {
    let deadline = monotonicSeconds() + 2
    var waiting = connections.values.filter { $0.unsentCount > 0 }
    while !waiting.isEmpty && monotonicSeconds() < deadline {
      waiting = waiting.filter { $0.sendQueued() == .wouldBlock }
      if !waiting.isEmpty { usleep(1000) }
    }
    for connection in Array(connections.values) { closeConnection(connection, why: nil) }
    close(epoll)
    if writerStopped, let writerThread { pthread_join(writerThread, nil) }
    log.notice("stopped at revision \(revision)")
  }
}
