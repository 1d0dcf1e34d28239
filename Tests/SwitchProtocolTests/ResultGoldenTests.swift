import SwitchCore
import Testing

@testable import SwitchProtocol

/// Golden bytes of every result object (docs/protocol.md "Methods", column
/// "result"), written by `ResultEncoding` as the daemon writes them.
@Suite struct ResultGoldenTests {
  static func text(_ write: (inout JSONWriter) -> Void) -> String {
    var w = JSONWriter()
    write(&w)
    return String(decoding: w.bytes, as: UTF8.self)
  }

  static let one = (encoded: Array(#"{"key":"a"}"#.utf8), writable: Writability.writable)
  static let two = (
    encoded: Array(#"{"key":"b"}"#.utf8),
    writable: Writability.refused(.readOnly(key: "b", reason: "Held.", heldBy: .admin))
  )

  @Test func listGolden() {
    #expect(
      Self.text {
        ResultEncoding.writeList(&$0, revision: 42) {
          ResultEncoding.writeSwitchArray(&$0, [Self.one, Self.two])
        }
      }
        == #"{"revision":42,"switches":[{"key":"a","writable":true,"writableReason":null},"#
        + #"{"key":"b","writable":false,"writableReason":"b is read-only: Held."}]}"#
    )
    #expect(
      Self.text {
        ResultEncoding.writeList(&$0, revision: 0) {
          ResultEncoding.writeSwitchArray(&$0, [(encoded: [UInt8], writable: Writability)]())
        }
      }
        == #"{"revision":0,"switches":[]}"#)
  }

  @Test func watchGolden() {
    #expect(
      Self.text {
        ResultEncoding.writeWatch(&$0, watch: "w1", revision: 7) {
          ResultEncoding.writeSwitchArray(&$0, [Self.one])
        }
      }
        == #"{"watch":"w1","revision":7,"switches":[{"key":"a","writable":true,"#
        + #""writableReason":null}]}"#)
    // With `since`, the snapshot is left out.
    #expect(
      Self.text { ResultEncoding.writeReplayingWatch(&$0, watch: "w2", revision: 7) }
        == #"{"watch":"w2","revision":7}"#)
  }

  @Test func writeGolden() {
    #expect(
      Self.text { ResultEncoding.writeWrite(&$0, changed: true) { $0.raw(Self.one.encoded) } }
        == #"{"changed":true,"switch":{"key":"a"}}"#)
    #expect(
      Self.text { ResultEncoding.writeWrite(&$0, changed: false) { $0.raw(Self.one.encoded) } }
        == #"{"changed":false,"switch":{"key":"a"}}"#)
  }

  @Test func reloadGolden() {
    #expect(
      Self.text { ResultEncoding.writeReload(&$0, ReloadSummary(switches: 5, policies: 2)) }
        == #"{"switches":5,"policies":2,"restartRequired":[]}"#)
    #expect(
      Self.text {
        ResultEncoding.writeReload(
          &$0, ReloadSummary(switches: 1, policies: 0, restartRequired: ["Socket", "Database"]))
      } == #"{"switches":1,"policies":0,"restartRequired":["Socket","Database"]}"#)
  }

  @Test func historyGolden() {
    let change = Change(
      revision: 43, time: 1_796_010_067_002, key: "wifi", cause: .toggle,
      actor: .peer(uid: 1000, gid: 1000, pid: 4321), state: SwitchState(checked: false),
      previous: SwitchState(checked: true))
    let state =
      #""readOnly":false,"readOnlyReason":null,"heldBy":null,"#
      + #""disabled":false,"disabledReason":null,"disabledBy":null,"#
      + #""invalid":false,"invalidReason":null,"pendingUntil":null,"expiresAt":null,"readOnlyUntil":null,"disabledUntil":null}"#
    #expect(
      Self.text { ResultEncoding.writeHistory(&$0, entries: [change]) }
        == #"{"entries":[{"revision":43,"time":"2026-11-30T03:41:07.002Z","key":"wifi","#
        + #""user":null,"cause":"toggle","fields":["checked"],"actor":{"uid":1000,"gid":1000,"pid":4321},"#
        + #""state":{"checked":false,"# + state + #","previous":{"checked":true,"# + state + "}]}")
    #expect(Self.text { ResultEncoding.writeHistory(&$0, entries: []) } == #"{"entries":[]}"#)
    // Entries whose actor the viewer may not see carry null ids, each on its own.
    var mine = change
    mine.actor = .peer(uid: 7, gid: 7, pid: 1)
    let page = Self.text {
      ResultEncoding.writeHistory(&$0, entries: [change, mine]) { $0 == mine.actor }
    }
    #expect(page.contains(#""actor":{"uid":null,"gid":null,"pid":null},"state""#))
    #expect(page.contains(#""actor":{"uid":7,"gid":7,"pid":1}"#))
    #expect(!page.contains("4321"))
  }

  @Test func unwatchGolden() {
    #expect(Self.text { ResultEncoding.writeEmpty(&$0) } == "{}")
  }

  static func status(lastReload: ReloadRecord?, administrator: Bool = false) -> StatusReport {
    StatusReport(
      version: "1.2.3", revision: 42, switches: 5, policies: 2, connections: 3, watches: 1,
      uptimeSeconds: 60, database: "/var/lib/switchd/switches.db",
      socket: "/run/switchd/switchd.sock", configDirectory: "/etc/switchd",
      lastReload: lastReload, reconciling: 2,
      caller: .init(
        uid: 1000, gid: 100, administrator: administrator, writesSystemSwitches: true))
  }

  static let statusHead =
    #"{"version":"1.2.3","revision":42,"switches":5,"policies":2,"connections":3,"watches":1,"#
    + #""uptimeSeconds":60,"database":"/var/lib/switchd/switches.db","#
    + #""socket":"/run/switchd/switchd.sock","configDirectory":"/etc/switchd","lastReload":"#
  static let statusCaller =
    #","reconciling":2,"caller":{"uid":1000,"gid":100,"administrator":false,"writesSystemSwitches":true},"#
    + #""readBack":[]}"#

  @Test func statusGolden() {
    #expect(
      Self.text { ResultEncoding.writeStatus(&$0, Self.status(lastReload: nil)) }
        == Self.statusHead + "null" + Self.statusCaller)
    let applied = ReloadRecord(time: 1_796_010_067_002, result: .applied)
    #expect(
      Self.text { ResultEncoding.writeStatus(&$0, Self.status(lastReload: applied)) }
        == Self.statusHead
        + #"{"time":"2026-11-30T03:41:07.002Z","result":"applied","errorCount":0}"#
        + Self.statusCaller)
    let refused = ReloadRecord(
      time: 1_796_010_067_002, result: .refused,
      errors: ["switches.d/a.conf:1: x", "policy.d/b.conf:2: y"])
    // The errors quote configuration lines: only an administrator sees them.
    #expect(
      Self.text { ResultEncoding.writeStatus(&$0, Self.status(lastReload: refused)) }
        == Self.statusHead
        + #"{"time":"2026-11-30T03:41:07.002Z","result":"refused","errorCount":2}"#
        + Self.statusCaller)
    let asAdministrator = Self.text {
      ResultEncoding.writeStatus(&$0, Self.status(lastReload: refused, administrator: true))
    }
    #expect(
      asAdministrator.contains(
        #""result":"refused","errorCount":2,"#
          + #""errors":["switches.d/a.conf:1: x","policy.d/b.conf:2: y"]}"#))
  }

  @Test func statusReadBackGolden() {
    var report = Self.status(lastReload: nil)
    report.readBack = [
      ReadBackReport(
        key: "bluetooth", reapplied: 3, lastReapplied: 1_796_010_067_002, systemHad: true),
      ReadBackReport(key: "wifi", watchProblem: "the ExecWatch= program of wifi ended"),
    ]
    #expect(
      Self.text { ResultEncoding.writeStatus(&$0, report) }.hasSuffix(
        #""readBack":[{"key":"bluetooth","reapplied":3,"#
          + #""lastReapplied":"2026-11-30T03:41:07.002Z","systemHad":"on","watchProblem":null},"#
          + #"{"key":"wifi","reapplied":0,"lastReapplied":null,"systemHad":null,"#
          + #""watchProblem":"the ExecWatch= program of wifi ended"}]}"#))
  }

  @Test func invalidConfigListsEveryError() {
    var w = JSONWriter()
    ResponseEncoding.writeError(
      &w, id: .number(JSONNumber(1)),
      .invalidConfig(["switches.d/a.conf:1: x", "policy.d/b.conf:2: y"]))
    #expect(
      String(decoding: w.bytes, as: UTF8.self)
        == #"{"jsonrpc":"2.0","id":1,"error":{"code":-32010,"#
        + #""message":"The configuration was refused (2 errors), the running one stays: "#
        + #"switches.d/a.conf:1: x; policy.d/b.conf:2: y.","#
        + #""data":{"name":"InvalidConfig","errors":["switches.d/a.conf:1: x","policy.d/b.conf:2: y"]}}}"#
    )
  }
}

@Suite struct MethodPrivilegeTests {
  @Test func methodsTakeTheirPrivilegeFromSwitchCore() {
    for method in Method.allCases {
      let expected: Privilege
      switch method {
      case .set, .toggle, .reset, .apply: expected = .writer
      case .lock, .unlock, .disable, .enable, .reload, .backup: expected = .administrator
      default: expected = .anyone
      }
      #expect(method.privilege == expected, "\(method)")
    }
    let writer = Caller(actor: .peer(uid: 7, gid: 7, pid: 1), isAdmin: false, mayWrite: true)
    let reader = Caller(actor: .peer(uid: 8, gid: 8, pid: 1), isAdmin: false, mayWrite: false)
    // The method check refuses only administrator methods; Writers comes later.
    #expect(Rules.mayCall(Method.set.privilege, caller: reader))
    #expect(!Rules.mayCall(Method.lock.privilege, caller: writer))
    #expect(!Rules.mayCall(Method.reload.privilege, caller: writer))
    #expect(Rules.mayCall(Method.status.privilege, caller: reader))
  }
}
