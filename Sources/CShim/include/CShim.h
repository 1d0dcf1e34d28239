// What Glibc's Swift module hides from the daemon: peer credentials,
// accept4, epoll, eventfd, signalfd, the open-file limit. Each wrapper is a
// thin, errno-preserving pass-through; the Swift side of the system layer is
// the SwitchSystem target.
#ifndef SWITCHD_CSHIM_H
#define SWITCHD_CSHIM_H

#include <pthread.h>
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
/// Edge-triggered: reported once per new event (for an eventfd, per write),
/// so a wake-up descriptor need not be read to be re-armed.
static const uint32_t SHIM_EPOLLET = 0x80000000u;

/// Fixes glibc malloc's mmap and trim thresholds at their defaults (128 KiB).
/// Left dynamic, the first large array freed (a catalog of 10,000 switches
/// is built from several) raises the mmap threshold, later large arrays come
/// from the heap, and its holes are never given back: 30 MiB at the peak
/// with 10,000 switches instead of 24 MiB (issue 26).
void shim_fix_malloc_thresholds(void);
/// glibc's malloc_trim(0): gives the free pages of every arena back.
int shim_malloc_trim(void);

/// Names `thread` (pthread_setname_np; the first 15 bytes of `name` are kept).
int shim_name_thread(pthread_t thread, const char *name);

/// The calling thread's kernel id (what /proc/self/task lists).
int32_t shim_thread_id(void);

/// A non-blocking, close-on-exec eventfd.
int shim_eventfd(void);

/// Sleeps while `*word == expected`, at most `timeout_ns` nanoseconds
/// (negative: no limit), on a process-private futex. Returns 0 when woken,
/// else -1 with errno (EAGAIN: the word had changed; ETIMEDOUT; EINTR).
int shim_futex_wait(uint32_t *word, uint32_t expected, int64_t timeout_ns);
/// Wakes at most `count` threads sleeping on `word`.
int shim_futex_wake(uint32_t *word, int count);

/// A non-blocking, close-on-exec timerfd on CLOCK_REALTIME (deadlines given
/// as times follow the wall clock).
int shim_timerfd_wall(void);

/// Arms `fd` to expire at `milliseconds` since the epoch (one shot, absolute,
/// TFD_TIMER_CANCEL_ON_SET: a read fails with ECANCELED when the clock is
/// set, so the caller looks at its deadlines again); `milliseconds` < 0 disarms.
int shim_timerfd_arm_wall(int fd, int64_t milliseconds);

/// A non-blocking, close-on-exec timerfd on CLOCK_BOOTTIME (a tried change's
/// window: setting the wall clock neither shortens nor stretches it, and
/// time asleep counts).
int shim_timerfd_boot(void);

/// Arms `fd` (from `shim_timerfd_boot`) for `milliseconds` of
/// `shim_boot_clock_milliseconds`, one shot (armed relative to now, so that
/// a library faking the process's clocks cannot move it); < 0 disarms.
int shim_timerfd_arm_boot(int fd, int64_t milliseconds);

/// Arms `fd` one shot `milliseconds` from now (at least 1); < 0 disarms.
int shim_timerfd_arm_in(int fd, int64_t milliseconds);

/// CLOCK_BOOTTIME in milliseconds, as the kernel keeps it: read with the
/// system call itself, which a preloaded library (libfaketime fakes
/// CLOCK_BOOTTIME along with the wall clock) does not intercept.
int64_t shim_boot_clock_milliseconds(void);

/// How far the wall clock this process reads (clock_gettime, which a
/// preloaded library such as libfaketime may fake) is from the kernel's, in
/// milliseconds: 0 unless something fakes it.
int64_t shim_wall_clock_skew_milliseconds(void);

/// Blocks SIGTERM, SIGINT and SIGHUP in the calling thread (threads created
/// later inherit the mask) and returns a non-blocking signalfd for them.
int shim_signalfd_termination_and_reload(void);

/// Reads one signal number from a signalfd, or -1 (EAGAIN when none).
int shim_signalfd_read(int fd);

/// Blocks SIGINT in the calling thread and returns a non-blocking signalfd
/// that becomes readable on ^C; -1 (nothing changed) when it cannot, or
/// when SIGINT is ignored. One at a time: the mask before is kept for
/// `shim_signalfd_interrupt_end`.
int shim_signalfd_interrupt(void);

/// Takes the SIGINTs `fd` holds, closes it and puts the signal mask back
/// as it was before `shim_signalfd_interrupt`.
void shim_signalfd_interrupt_end(int fd);

/// Raises RLIMIT_NOFILE's soft limit to its hard limit; returns the new soft limit.
long shim_raise_nofile_limit(void);

/// Starts `path` (argv and envp NULL-terminated) for an apply command: in a
/// process group of its own, standard input and output from and to
/// /dev/null, standard error onto `stderr_fd`, working directory /, every
/// other descriptor closed, signal mask empty and every signal at its
/// default action. posix_spawn: nothing of the caller runs in the child.
/// Returns 0 and sets `*pid`, or an errno (the program could not be started).
int shim_spawn_apply(const char *path, char *const argv[], char *const envp[], int stderr_fd,
                     int32_t *pid);

/// shim_spawn_apply with standard output onto `stdout_fd` instead of /dev/null
/// (ExecCheck= and ExecWatch= print the state they read).
int shim_spawn_reader(const char *path, char *const argv[], char *const envp[], int stdout_fd,
                      int stderr_fd, int32_t *pid);

/// pidfd_open(2): a descriptor that polls readable once `pid` has exited;
/// -1 with errno (ENOSYS on kernels before 5.3).
int shim_pidfd_open(int32_t pid);

/// Whether child `pid` has exited, without reaping it (waitid WNOHANG |
/// WNOWAIT), so that its process group id stays taken until it is reaped:
/// 1 exited, 0 still running, -1 with errno.
int shim_child_exited(int32_t pid);

/// pipe2 with O_CLOEXEC; the read end is non-blocking.
int shim_pipe_for_output(int fds[2]);

/// The most descriptors one message passes or takes (SCM_RIGHTS).
enum { SHIM_MAX_PASSED_DESCRIPTORS = 16 };

/// sendmsg of `len` bytes with `count` descriptors (at most
/// SHIM_MAX_PASSED_DESCRIPTORS) attached as SCM_RIGHTS: the peer receives
/// them with the first of these bytes it reads. Returns the bytes sent, or
/// -1 with errno (nothing passed then).
ssize_t shim_send_passing(int sock, const void *buf, size_t len, const int *fds, int count,
                          int flags);

/// recvmsg into `buf` that takes the descriptors passed with these bytes
/// (SCM_RIGHTS), close-on-exec, into `fds` (room for `capacity`, at most
/// SHIM_MAX_PASSED_DESCRIPTORS) and sets `*count`. Passed descriptors
/// beyond `capacity` are closed, never left open. Returns the bytes read,
/// 0 at end of stream, or -1 with errno.
ssize_t shim_recv_taking(int sock, void *buf, size_t len, int *fds, int capacity, int *count,
                         int flags);

/// rename(2) that fails with EEXIST instead of replacing what is at `to`
/// (renameat2 with RENAME_NOREPLACE; the raw system call, which glibc
/// hides without _GNU_SOURCE). EINVAL: the file system cannot say.
int shim_rename_noreplace(const char *from, const char *to);

/// openat with O_PATH | O_CLOEXEC (following a symbolic link): a handle
/// on the inode that opens nothing (a FIFO is not waited on, a device's
/// driver is not called), for fstat before it is opened. Glibc's Swift
/// module hides O_PATH. Returns the descriptor or -1 with errno.
int shim_open_path(int dirfd, const char *name);

/// Opens the inode an O_PATH descriptor holds, read-only, non-blocking,
/// through /proc/self/fd: that inode, not whatever its name names now.
/// Returns the descriptor or -1 with errno (ENOENT without /proc).
int shim_reopen_for_reading(int pathfd);

/// lseek's SEEK_DATA and SEEK_HOLE (Linux's values; Glibc's Swift module
/// hides them): where a file's next data, or next hole, starts.
enum { SHIM_SEEK_DATA = 3, SHIM_SEEK_HOLE = 4 };

#endif
