// What Glibc's Swift module hides from the daemon: peer credentials,
// accept4, epoll, eventfd, signalfd, the open-file limit. Each wrapper is a
// thin, errno-preserving pass-through; the Swift side of the system layer is
// the SwitchSystem target.
#ifndef SWITCHD_CSHIM_H
#define SWITCHD_CSHIM_H

#include <stdint.h>
#include <sys/types.h>

typedef struct {
  int32_t pid;
  uint32_t uid;
  uint32_t gid;
} shim_peer_cred;

/// SO_PEERCRED of a connected Unix socket. Returns 0 or -1 with errno.
int shim_peer_cred_get(int fd, shim_peer_cred *out);

/// SO_PEERGROUPS: the peer's supplementary groups. Returns the count, or -1
/// with errno (ERANGE when `capacity` is too small; `*needed` then says how many).
int shim_peer_groups_get(int fd, uint32_t *groups, int capacity, int *needed);

/// accept4 with SOCK_NONBLOCK | SOCK_CLOEXEC.
int shim_accept_nonblocking(int fd);

int shim_epoll_create(void);
/// events: a mask of SHIM_EPOLL_* bits.
int shim_epoll_ctl(int epfd, int op, int fd, uint32_t events, uint64_t data);
/// Fills parallel arrays of event masks and data words. Returns the count or -1.
int shim_epoll_wait(int epfd, uint32_t *events, uint64_t *data, int capacity, int timeout_ms);

enum {
  SHIM_EPOLL_ADD = 1,
  SHIM_EPOLL_DEL = 2,
  SHIM_EPOLL_MOD = 3,
};
enum {
  SHIM_EPOLLIN = 0x001,
  SHIM_EPOLLOUT = 0x004,
  SHIM_EPOLLERR = 0x008,
  SHIM_EPOLLHUP = 0x010,
  SHIM_EPOLLRDHUP = 0x2000,
};

/// A non-blocking, close-on-exec eventfd.
int shim_eventfd(void);

/// Blocks SIGTERM, SIGINT and SIGHUP in the calling thread (threads created
/// later inherit the mask) and returns a non-blocking signalfd for them.
int shim_signalfd_termination_and_reload(void);

/// Reads one signal number from a signalfd, or -1 (EAGAIN when none).
int shim_signalfd_read(int fd);

/// Raises RLIMIT_NOFILE's soft limit to its hard limit; returns the new soft limit.
long shim_raise_nofile_limit(void);

#endif
