import Glibc

/// Fills each of descriptors 0, 1 and 2 that the process was started
/// without with /dev/null, read-only, before anything else opens one.
///
/// A process started with one closed (`switchctl watch >&-`, `switchd
/// 2>&-`) would otherwise be given it for the next thing it opens: switchctl
/// wrote its output into its own connection to the daemon, and switchd's
/// log went into an eventfd and its standard output was the database's
/// lock file. Read-only: a write to standard output or error still fails
/// (EBADF), as it did with the descriptor closed, and is reported so; a
/// read of standard input ends at once.
public func reserveStandardDescriptors() {
  for descriptor: Int32 in 0...2 where fcntl(descriptor, F_GETFD) == -1 && errno == EBADF {
    // The lowest free number: `descriptor` itself, since those below it are
    // open. Without /dev/null (a bare chroot), the root folder: a write to
    // it fails all the same, and the number is taken.
    var opened = open("/dev/null", O_RDONLY)
    if opened < 0 { opened = open("/", O_RDONLY | O_DIRECTORY) }
    if opened >= 0 && opened != descriptor {
      _ = dup2(opened, descriptor)
      close(opened)
    }
  }
}
