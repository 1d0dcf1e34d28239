import SwitchSystem
import Testing

@testable import SwitchCore

/// `Socket=` is checked in SwitchCore (no I/O, so no `sockaddr_un`) against
/// the limit the system layer derives from `sun_path`: they must agree.
@Test func theConfigurationAndTheSystemLayerAgreeOnTheSocketPathLimit() {
  #expect(CatalogBuilder.maxSocketPathBytes == UnixSocketAddress.maxPathBytes)
}
