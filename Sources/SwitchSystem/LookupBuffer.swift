import Glibc

/// Runs a `get*_r` lookup (`body`: its return code and what it found) with
/// a buffer of `initialCapacity` bytes, doubling the buffer while the
/// lookup says ERANGE: an entry too large for the buffer is not a missing
/// one. Nil when the lookup fails or finds nothing.
func lookUpGrowingBuffer<Found>(
  initialCapacity: Int, _ body: (inout [CChar]) -> (rc: Int32, found: Found?)
) -> Found? {
  var capacity = max(1, initialCapacity)
  while true {
    var buffer = [CChar](repeating: 0, count: capacity)
    let (rc, found) = body(&buffer)
    if rc == ERANGE && capacity < maxLookupBufferBytes {
      capacity *= 2
      continue
    }
    return rc == 0 ? found : nil
  }
}

/// Where growing stops: an entry past this is broken, not large.
let maxLookupBufferBytes = 64 << 20
