import CShim
import Glibc

/// Passing open descriptors over a Unix stream socket (SCM_RIGHTS): the
/// daemon hands `switchctl backup` the backup file this way, so that the
/// daemon never opens a path a client names.
///
/// A descriptor rides with the bytes of one `sendmsg`, and the receiver
/// gets it with the first of those bytes it reads. A plain `recv` (what the
/// daemon's loop uses) takes none: the kernel closes any a peer sent, so a
/// client cannot make the daemon hold descriptors it did not ask for.
public enum DescriptorPassing {
  /// The most descriptors one message carries.
  public static let maxPerMessage = Int(SHIM_MAX_PASSED_DESCRIPTORS)

  /// Sends `bytes` with `descriptors` attached (1 to `maxPerMessage`); the
  /// bytes sent, or -1 with errno (nothing passed then). The descriptors
  /// stay the caller's to close: the peer has its own copies once this
  /// returns a positive count.
  public static func send(
    _ socket: Int32, _ bytes: UnsafeRawBufferPointer, passing descriptors: [Int32], flags: Int32
  ) -> Int {
    descriptors.withUnsafeBufferPointer { fds in
      retryingEINTR {
        shim_send_passing(
          socket, bytes.baseAddress, bytes.count, fds.baseAddress, Int32(fds.count), flags)
      }
    }
  }

  /// Receives into `buffer`, taking the descriptors passed with these
  /// bytes (close-on-exec; any beyond `maxPerMessage` are closed). The
  /// count read (0 at end of stream, -1 with errno) and the descriptors,
  /// which the caller now owns.
  public static func receive(
    _ socket: Int32, into buffer: UnsafeMutableRawBufferPointer, flags: Int32 = 0
  ) -> (count: Int, descriptors: [Int32]) {
    var fds = [Int32](repeating: -1, count: maxPerMessage)
    var taken: Int32 = 0
    let count = fds.withUnsafeMutableBufferPointer { out in
      retryingEINTR {
        shim_recv_taking(
          socket, buffer.baseAddress, buffer.count, out.baseAddress, Int32(out.count), &taken,
          flags)
      }
    }
    return (count, Array(fds.prefix(Int(taken))))
  }
}
