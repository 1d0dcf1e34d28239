import Glibc
import Testing

@testable import SwitchSystem

@Suite struct UnixSocketAddressTests {
  @Test func aPathIncludesItsNULAndAnAbstractNameDoesNot() throws {
    let offset = MemoryLayout<sockaddr_un>.offset(of: \.sun_path)!
    #expect(try UnixSocketAddress("/run/x.sock").length == socklen_t(offset + 12))
    #expect(try UnixSocketAddress("@x").length == socklen_t(offset + 2))
  }

  @Test func theLimitIs107Bytes() throws {
    #expect(UnixSocketAddress.maxPathBytes == 107)
    _ = try UnixSocketAddress("/" + String(repeating: "a", count: 106))
    let long = "/" + String(repeating: "a", count: 107)
    #expect(throws: UnixSocketAddress.PathTooLong(path: long)) {
      _ = try UnixSocketAddress(long)
    }
    #expect(throws: UnixSocketAddress.PathTooLong.self) { _ = try UnixSocketAddress("") }
  }
}
