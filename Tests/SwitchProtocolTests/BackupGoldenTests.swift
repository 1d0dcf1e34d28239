import SwitchCore
import Testing

@testable import SwitchProtocol

/// `backup` on the wire (docs/protocol.md "backup"), and the answer a watch
/// resuming beyond the current revision gets (after a restore).
@Suite struct BackupGoldenTests {
  static func errorLine(_ error: RPCError) -> String {
    var w = JSONWriter()
    ResponseEncoding.writeError(&w, id: .number(JSONNumber(1)), error)
    return String(decoding: w.bytes, as: UTF8.self)
  }

  @Test func backupTakesNoParamsAndIsAnAdministratorsMethod() {
    #expect(GoldenTests.call(#"{"jsonrpc":"2.0","id":1,"method":"backup"}"#) == .success(.backup))
    #expect(
      GoldenTests.call(#"{"jsonrpc":"2.0","id":1,"method":"backup","params":{}}"#)
        == .success(.backup))
    guard
      case .failure(let error)? = GoldenTests.call(
        #"{"jsonrpc":"2.0","id":1,"method":"backup","params":{"path":"/etc/shadow"}}"#)
    else {
      Issue.record("a path was accepted")
      return
    }
    #expect(error.code == .invalidParams)
    #expect(error.dataObject["param"]?.stringValue == "path")
    #expect(Method.backup.privilege == .administrator)
    #expect(!Method.backup.isWrite)
  }

  @Test func backupResultGolden() {
    var w = JSONWriter()
    ResultEncoding.writeBackup(&w, revision: 42, bytes: 9216)
    #expect(String(decoding: w.bytes, as: UTF8.self) == #"{"revision":42,"bytes":9216}"#)
  }

  @Test func backupFailedIsAStorageFailure() {
    #expect(
      Self.errorLine(.backupFailed("cannot create /var/lib/switchd/switches.db.backup: disk full"))
        == #"{"jsonrpc":"2.0","id":1,"error":{"code":-32007,"#
        + #""message":"The backup could not be taken (cannot create "#
        + #"/var/lib/switchd/switches.db.backup: disk full); nothing changed.","#
        + #""data":{"name":"StorageFailure"}}}"#)
  }

  /// `param` stays (clients branch on it); `revision` is the current one.
  @Test func sinceBeyondTheRevisionCarriesTheCurrentOne() {
    #expect(
      Self.errorLine(.sinceBeyondRevision(9, current: 4))
        == #"{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"#
        + #""message":"Invalid params: \"since\" is 9, beyond the current revision 4.","#
        + #""data":{"name":"InvalidParams","param":"since","revision":4}}}"#)
  }
}
