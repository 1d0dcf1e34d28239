import CSystemd
import Glibc

/// One question for polkit's `CheckAuthorization`: may this process do
/// `action`? The process is named by pid, start time and uid (a
/// `unix-process` subject), so that a pid reused by another process cannot
/// borrow the answer: polkit compares the start time and refuses.
public struct PolkitCheck: Sendable {
  public var pid: UInt32
  /// Field 22 of `/proc/PID/stat`, in clock ticks since boot.
  public var startTime: UInt64
  public var uid: UInt32
  public var action: String
  public var details: [(name: String, value: String)]
  /// polkit may ask the person (through their authentication agent).
  public var allowInteraction: Bool

  public init(
    pid: UInt32, startTime: UInt64, uid: UInt32, action: String,
    details: [(name: String, value: String)], allowInteraction: Bool
  ) {
    self.pid = pid
    self.startTime = startTime
    self.uid = uid
    self.action = action
    self.details = details
    self.allowInteraction = allowInteraction
  }
}

/// What polkit answered.
public enum PolkitAnswer: Equatable, Sendable {
  case authorized
  /// Not now, but authentication would grant it (`is_challenge`).
  case challenge
  case denied
  /// No answer: the bus or polkitd could not be reached, or failed. A
  /// caller treats it as a refusal (fail closed), with this reason.
  case unreachable(String)
}

/// A connection to the system bus that asks polkit, asynchronously: many
/// checks may be out at once (one person typing a password holds up nobody
/// else), and their answers come back through `process()`. One thread owns
/// an instance; nothing here blocks but `sd_bus_open_system` (a local socket).
public final class PolkitAuthority {
  private var bus: OpaquePointer?
  /// sd-bus's functions, from libsystemd.so.0, loaded by the first check
  /// (nil when they cannot be: `switchd_sd_bus_error()` says why). Read
  /// only where `bus` is open, or to open it.
  private lazy var sd: switchd_sd_bus? = switchd_sd_bus_load()?.pointee
  /// Checks sent and not yet answered, by id, each with the context its
  /// callback gets as userdata (retained until answered or dropped).
  private var outstanding: [UInt64: Unmanaged<CallContext>] = [:]

  /// What a reply callback needs: which authority and which check. No
  /// global: two authorities in one process never see each other's answers.
  private final class CallContext {
    weak var authority: PolkitAuthority?
    let id: UInt64
    init(_ authority: PolkitAuthority, id: UInt64) {
      self.authority = authority
      self.id = id
    }
  }
  private let deliver: (UInt64, PolkitAnswer) -> Void
  /// Answers handed out by callbacks during the current `process()`.
  private var answered: [(UInt64, PolkitAnswer)] = []

  /// How long polkit may take: a person at a password prompt needs minutes.
  static let timeoutMicroseconds: UInt64 = 25_000_000
  static let interactiveTimeoutMicroseconds: UInt64 = 300_000_000

  /// `deliver` receives each answer, by the id given to `send`, exactly once.
  public init(deliver: @escaping (UInt64, PolkitAnswer) -> Void) {
    self.deliver = deliver
  }

  deinit { disconnect("switchd is stopping") }

  /// Sends one check; its answer comes later, through `deliver`. `id` must
  /// not be 0.
  public func send(_ check: PolkitCheck, id: UInt64) {
    guard let sd else {
      let why = String(cString: switchd_sd_bus_error())
      return deliver(id, .unreachable("sd-bus could not be loaded: \(why)"))
    }
    if bus == nil {
      var opened: OpaquePointer?
      let r = sd.open_system(&opened)
      guard r >= 0, let opened else {
        return deliver(id, .unreachable("the system bus is not reachable: \(errorText(r))"))
      }
      bus = opened
    }
    guard let bus else { return }
    var message: OpaquePointer?
    var r = sd.message_new_method_call(
      bus, &message, "org.freedesktop.PolicyKit1", "/org/freedesktop/PolicyKit1/Authority",
      "org.freedesktop.PolicyKit1.Authority", "CheckAuthorization")
    if r >= 0, let message {
      r = sd.append(check, to: message)
      if r >= 0 {
        let timeout =
          check.allowInteraction ? Self.interactiveTimeoutMicroseconds : Self.timeoutMicroseconds
        let context = Unmanaged.passRetained(CallContext(self, id: id))
        r = sd.call_async(
          bus, nil, message,
          { reply, userdata, _ in
            guard let userdata else { return 0 }
            let context = Unmanaged<CallContext>.fromOpaque(userdata).takeUnretainedValue()
            context.authority?.answer(reply, id: context.id)
            return 0
          }, context.toOpaque(), timeout)
        if r >= 0 { outstanding[id] = context } else { context.release() }
      }
      _ = sd.message_unref(message)
    }
    if r < 0 {
      deliver(id, .unreachable("the question could not be sent to polkit: \(errorText(r))"))
      if sd.is_open(bus) <= 0 { disconnect("the system bus connection closed") }
    }
  }

  /// Reads what the bus has and delivers the answers that came. A bus that
  /// failed is dropped: its unanswered checks are `unreachable`, and the
  /// next check connects again (polkitd or dbus may have been restarted).
  public func process() {
    guard let bus, let sd else { return }
    var r: Int32 = 1
    while r > 0 { r = sd.process(bus, nil) }
    for (id, answer) in answered { deliver(id, answer) }
    answered.removeAll()
    if r < 0 { disconnect("the system bus connection failed: \(errorText(r))") }
  }

  /// What to poll for: the bus's descriptor, events and the time (µs on
  /// CLOCK_MONOTONIC, UInt64.max for none) by which `process()` must run.
  public var pollRequest: (fd: Int32, events: Int16, deadline: UInt64)? {
    guard let bus, let sd else { return nil }
    let fd = sd.get_fd(bus)
    let events = sd.get_events(bus)
    guard fd >= 0, events >= 0 else { return nil }
    var deadline: UInt64 = .max
    _ = sd.get_timeout(bus, &deadline)
    return (fd, Int16(events), deadline)
  }

  /// The count of checks sent and not yet answered.
  public var outstandingCount: Int { outstanding.count }

  private func answer(_ reply: OpaquePointer?, id: UInt64) {
    guard let context = outstanding.removeValue(forKey: id) else { return }
    // The callback's own context: released after this returns to sd-bus,
    // which touches it no more (a floating slot calls back once).
    defer { context.release() }
    guard let reply, let sd else {
      return answered.append((id, .unreachable("polkit sent no reply")))
    }
    answered.append((id, sd.read(reply)))
  }

  private func disconnect(_ why: String) {
    // Closing frees the floating slots without calling back.
    if let bus, let sd { _ = sd.flush_close_unref(bus) }
    bus = nil
    let dropped = outstanding.sorted { $0.key < $1.key }
    outstanding.removeAll()
    for (id, context) in dropped {
      context.release()
      deliver(id, .unreachable(why))
    }
  }
}

// Building CheckAuthorization's call and reading its reply, with the
// functions of sd-bus as loaded.
extension switchd_sd_bus {
  /// CheckAuthorization's arguments: `(sa{sv})` subject, `s` action,
  /// `a{ss}` details, `u` flags, `s` cancellation id.
  fileprivate func append(_ check: PolkitCheck, to m: OpaquePointer) -> Int32 {
    var r = message_open_container(m, CChar(UInt8(ascii: "r")), "sa{sv}")
    if r >= 0 { r = appendString(m, "unix-process") }
    if r >= 0 { r = message_open_container(m, CChar(UInt8(ascii: "a")), "{sv}") }
    var pid = check.pid
    var startTime = check.startTime
    var uid = Int32(bitPattern: check.uid)
    if r >= 0 { r = appendVariant(m, "pid", UInt8(ascii: "u"), &pid) }
    if r >= 0 { r = appendVariant(m, "start-time", UInt8(ascii: "t"), &startTime) }
    if r >= 0 { r = appendVariant(m, "uid", UInt8(ascii: "i"), &uid) }
    if r >= 0 { r = message_close_container(m) }
    if r >= 0 { r = message_close_container(m) }
    if r >= 0 { r = appendString(m, check.action) }
    if r >= 0 { r = message_open_container(m, CChar(UInt8(ascii: "a")), "{ss}") }
    for (name, value) in check.details where r >= 0 {
      r = message_open_container(m, CChar(UInt8(ascii: "e")), "ss")
      if r >= 0 { r = appendString(m, name) }
      if r >= 0 { r = appendString(m, value) }
      if r >= 0 { r = message_close_container(m) }
    }
    if r >= 0 { r = message_close_container(m) }
    // 1: AllowUserInteraction.
    var flags: UInt32 = check.allowInteraction ? 1 : 0
    if r >= 0 { r = message_append_basic(m, CChar(UInt8(ascii: "u")), &flags) }
    if r >= 0 { r = appendString(m, "") }
    return r
  }

  private func appendString(_ m: OpaquePointer, _ text: String) -> Int32 {
    text.withCString { message_append_basic(m, CChar(UInt8(ascii: "s")), $0) }
  }

  private func appendVariant<T: BitwiseCopyable>(
    _ m: OpaquePointer, _ name: String, _ type: UInt8, _ value: inout T
  ) -> Int32 {
    var r = message_open_container(m, CChar(UInt8(ascii: "e")), "sv")
    if r >= 0 { r = appendString(m, name) }
    let contents = String(UnicodeScalar(type))
    if r >= 0 { r = message_open_container(m, CChar(UInt8(ascii: "v")), contents) }
    if r >= 0 { r = message_append_basic(m, CChar(bitPattern: type), &value) }
    if r >= 0 { r = message_close_container(m) }
    if r >= 0 { r = message_close_container(m) }
    return r
  }

  /// The reply's `(bba{ss})`: is_authorized, is_challenge (the details are not needed).
  fileprivate func read(_ reply: OpaquePointer) -> PolkitAnswer {
    if message_is_method_error(reply, nil) > 0 {
      let error = message_get_error(reply)
      let name = error?.pointee.name.map { String(cString: $0) } ?? "an error"
      let text = error?.pointee.message.map { String(cString: $0) } ?? ""
      if text.contains("not registered") {
        return .unreachable(
          "polkit does not know switchd's actions (\(text)): install io.switchd.policy into"
            + " /usr/share/polkit-1/actions")
      }
      return .unreachable("polkit answered \(name)\(text.isEmpty ? "" : ": \(text)")")
    }
    var authorized: Int32 = 0
    var challenge: Int32 = 0
    var r = message_enter_container(reply, CChar(UInt8(ascii: "r")), "bba{ss}")
    if r >= 0 { r = message_read_basic(reply, CChar(UInt8(ascii: "b")), &authorized) }
    if r >= 0 { r = message_read_basic(reply, CChar(UInt8(ascii: "b")), &challenge) }
    if r < 0 { return .unreachable("polkit's answer could not be read: \(errorText(r))") }
    if authorized != 0 { return .authorized }
    return challenge != 0 ? .challenge : .denied
  }
}

/// `strerror` of a negative errno, as sd-bus returns them.
private func errorText(_ r: Int32) -> String {
  String(cString: strerror(-r))
}
