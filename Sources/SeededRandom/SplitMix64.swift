/// SplitMix64 (Steele, Lea and Flood, 2014): a small generator whose sequence depends only on
/// its seed. For test data and benchmark load that must be the same on every run, so that a
/// failure can be replayed; not for anything that must be unpredictable.
public struct SplitMix64: RandomNumberGenerator, Sendable {
  public var state: UInt64

  public init(seed: UInt64) { state = seed }

  public mutating func next() -> UInt64 {
    state &+= 0x9E37_79B9_7F4A_7C15
    var z = state
    z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
    z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
    return z ^ (z >> 31)
  }
}
