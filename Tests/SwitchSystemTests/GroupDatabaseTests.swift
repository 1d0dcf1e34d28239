import Testing

@testable import SwitchSystem

@Suite struct GroupDatabaseTests {
  /// A buffer too small for the entry (ERANGE) is grown, not taken for "no such group".
  @Test func aBufferTooSmallIsGrown() {
    #expect(GroupDatabase.gid(named: "root", initialCapacity: 1) == 0)
    #expect(GroupDatabase.gid(named: "root") == 0)
  }

  @Test func aMissingGroupIsNil() {
    #expect(GroupDatabase.gid(named: "no-such-group-switchd-test") == nil)
  }
}
