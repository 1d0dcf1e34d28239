#define _GNU_SOURCE
#include "CShim.h"

#include <errno.h>
#include <stdio.h>

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <malloc.h>
#include <time.h>
#include <sys/socket.h>
#include <pthread.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <spawn.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#ifndef SO_PEERGROUPS
#define SO_PEERGROUPS 59
#endif

int shim_peer_cred_get(int fd, shim_peer_cred *out) {
  struct ucred cred;
  socklen_t len = sizeof(cred);
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) return -1;
  out->pid = cred.pid;
  out->uid = cred.uid;
  out->gid = cred.gid;
  return 0;
}

int shim_peer_groups_get(int fd, uint32_t *groups, int capacity, int *needed) {
  socklen_t len = (socklen_t)(capacity * (int)sizeof(gid_t));
  int rc = getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &len);
  if (needed) *needed = (int)(len / sizeof(gid_t));
  if (rc != 0) return -1;
  return (int)(len / sizeof(gid_t));
}

int shim_accept_nonblocking(int fd) {
  return accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
}

int shim_epoll_create(void) { return epoll_create1(EPOLL_CLOEXEC); }

int shim_epoll_ctl(int epfd, int op, int fd, uint32_t events, uint64_t data) {
  struct epoll_event ev;
  ev.events = events;
  ev.data.u64 = data;
  int cop = op == SHIM_EPOLL_ADD ? EPOLL_CTL_ADD : op == SHIM_EPOLL_DEL ? EPOLL_CTL_DEL : EPOLL_CTL_MOD;
  return epoll_ctl(epfd, cop, fd, &ev);
}

int shim_epoll_wait(int epfd, uint32_t *events, uint64_t *data, int capacity, int timeout_ms) {
  struct epoll_event evs[256];
  if (capacity > 256) capacity = 256;
  int n = epoll_wait(epfd, evs, capacity, timeout_ms);
  for (int i = 0; i < n; i++) {
    events[i] = evs[i].events;
    data[i] = evs[i].data.u64;
  }
  return n;
}

int shim_malloc_trim(void) { return malloc_trim(0); }

void shim_fix_malloc_thresholds(void) {
  mallopt(M_MMAP_THRESHOLD, 128 * 1024);
  mallopt(M_TRIM_THRESHOLD, 128 * 1024);
}

int shim_name_thread(pthread_t thread, const char *name) {
  char kept[16];
  strncpy(kept, name, sizeof kept - 1);
  kept[sizeof kept - 1] = 0;
  return pthread_setname_np(thread, kept);
}

int32_t shim_thread_id(void) { return (int32_t)syscall(SYS_gettid); }

int shim_eventfd(void) { return eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC); }

int shim_futex_wait(uint32_t *word, uint32_t expected, int64_t timeout_ns) {
  struct timespec timeout;
  struct timespec *limit = NULL;
  if (timeout_ns >= 0) {
    timeout.tv_sec = timeout_ns / 1000000000;
    timeout.tv_nsec = timeout_ns % 1000000000;
    limit = &timeout;
  }
  // FUTEX_WAIT's timeout is relative (on the monotonic clock).
  return (int)syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, expected, limit, NULL, 0);
}

int shim_futex_wake(uint32_t *word, int count) {
  return (int)syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, count, NULL, NULL, 0);
}

int shim_timerfd_wall(void) { return timerfd_create(CLOCK_REALTIME, TFD_NONBLOCK | TFD_CLOEXEC); }

int shim_timerfd_boot(void) { return timerfd_create(CLOCK_BOOTTIME, TFD_NONBLOCK | TFD_CLOEXEC); }


/// A clock as the kernel keeps it: the system call, not libc's (vDSO) entry,
/// which a preloaded library may replace.
static int64_t kernel_clock_milliseconds(clockid_t clock) {
  struct timespec ts;
  syscall(SYS_clock_gettime, clock, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int shim_timerfd_arm_boot(int fd, int64_t milliseconds) {
  struct itimerspec spec;
  memset(&spec, 0, sizeof spec);
  if (milliseconds < 0) return timerfd_settime(fd, 0, &spec, NULL);
  int64_t left = milliseconds - kernel_clock_milliseconds(CLOCK_BOOTTIME);
  // A relative time of 0 would disarm: due now means in a millisecond.
  if (left < 1) left = 1;
  spec.it_value.tv_sec = left / 1000;
  spec.it_value.tv_nsec = (left % 1000) * 1000000;
  return timerfd_settime(fd, 0, &spec, NULL);
}

int shim_timerfd_arm_in(int fd, int64_t milliseconds) {
  struct itimerspec spec;
  memset(&spec, 0, sizeof spec);
  if (milliseconds >= 0) {
    if (milliseconds < 1) milliseconds = 1;
    spec.it_value.tv_sec = milliseconds / 1000;
    spec.it_value.tv_nsec = (milliseconds % 1000) * 1000000;
  }
  return timerfd_settime(fd, 0, &spec, NULL);
}

int64_t shim_boot_clock_milliseconds(void) { return kernel_clock_milliseconds(CLOCK_BOOTTIME); }

int64_t shim_wall_clock_skew_milliseconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  int64_t seen = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
  return seen - kernel_clock_milliseconds(CLOCK_REALTIME);
}

int shim_timerfd_arm_wall(int fd, int64_t milliseconds) {
  struct itimerspec spec;
  memset(&spec, 0, sizeof spec);
  if (milliseconds < 0) return timerfd_settime(fd, 0, &spec, NULL);
  // An absolute time of 0 would disarm: a deadline that far back is due now anyway.
  if (milliseconds == 0) milliseconds = 1;
  spec.it_value.tv_sec = milliseconds / 1000;
  spec.it_value.tv_nsec = (milliseconds % 1000) * 1000000;
  return timerfd_settime(fd, TFD_TIMER_ABSTIME | TFD_TIMER_CANCEL_ON_SET, &spec, NULL);
}

int shim_signalfd_termination_and_reload(void) {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGHUP);
  if (pthread_sigmask(SIG_BLOCK, &set, NULL) != 0) return -1;
  return signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
}

// The mask before `shim_signalfd_interrupt` (one question at a time: switchctl).
static sigset_t interruptSavedMask;

int shim_signalfd_interrupt(void) {
  // A ^C the caller ignores (`trap '' INT`) stays ignored: it answers nothing.
  struct sigaction current;
  if (sigaction(SIGINT, NULL, &current) != 0 || current.sa_handler == SIG_IGN) return -1;
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  if (pthread_sigmask(SIG_BLOCK, &set, &interruptSavedMask) != 0) return -1;
  int fd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
  if (fd < 0) pthread_sigmask(SIG_SETMASK, &interruptSavedMask, NULL);
  return fd;
}

void shim_signalfd_interrupt_end(int fd) {
  // Taken first: unblocked while pending, a ^C already answered would end the process.
  while (shim_signalfd_read(fd) > 0) {
  }
  close(fd);
  // As it was: SIGINT stays blocked for a caller that had it blocked.
  pthread_sigmask(SIG_SETMASK, &interruptSavedMask, NULL);
}

int shim_signalfd_read(int fd) {
  struct signalfd_siginfo info;
  ssize_t n = read(fd, &info, sizeof(info));
  if (n != (ssize_t)sizeof(info)) return -1;
  return (int)info.ssi_signo;
}

long shim_raise_nofile_limit(void) {
  struct rlimit lim;
  if (getrlimit(RLIMIT_NOFILE, &lim) != 0) return -1;
  if (lim.rlim_cur < lim.rlim_max) {
    lim.rlim_cur = lim.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &lim) != 0) return -1;
  }
  return (long)lim.rlim_cur;
}

int shim_spawn_apply(const char *path, char *const argv[], char *const envp[], int stderr_fd,
                     int32_t *pid) {
  return shim_spawn_reader(path, argv, envp, -1, stderr_fd, pid);
}

int shim_spawn_reader(const char *path, char *const argv[], char *const envp[], int stdout_fd,
                      int stderr_fd, int32_t *pid) {
  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attr;
  int rc = posix_spawn_file_actions_init(&actions);
  if (rc != 0) return rc;
  rc = posix_spawnattr_init(&attr);
  if (rc != 0) {
    posix_spawn_file_actions_destroy(&actions);
    return rc;
  }
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  // The daemon ignores SIGPIPE and blocks SIGTERM/SIGINT/SIGHUP (signalfd):
  // an ignored or blocked signal would outlive exec, so both are reset.
  if (rc == 0) rc = posix_spawnattr_setsigmask(&attr, &none);
  if (rc == 0) rc = posix_spawnattr_setsigdefault(&attr, &all);
  if (rc == 0) rc = posix_spawnattr_setpgroup(&attr, 0);
  if (rc == 0)
    rc = posix_spawnattr_setflags(
        &attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  if (rc == 0) rc = posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  if (rc == 0) {
    rc = stdout_fd < 0 ? posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
                       : posix_spawn_file_actions_adddup2(&actions, stdout_fd, 1);
  }
  if (rc == 0) rc = posix_spawn_file_actions_adddup2(&actions, stderr_fd, 2);
  if (rc == 0) rc = posix_spawn_file_actions_addclosefrom_np(&actions, 3);
  if (rc == 0) rc = posix_spawn_file_actions_addchdir_np(&actions, "/");
  pid_t child = 0;
  if (rc == 0) rc = posix_spawn(&child, path, &actions, &attr, argv, envp);
  if (rc == 0) *pid = (int32_t)child;
  posix_spawnattr_destroy(&attr);
  posix_spawn_file_actions_destroy(&actions);
  return rc;
}

int shim_pidfd_open(int32_t pid) {
#ifdef SYS_pidfd_open
  return (int)syscall(SYS_pidfd_open, (pid_t)pid, 0);
#else
  errno = ENOSYS;
  return -1;
#endif
}

int shim_child_exited(int32_t pid) {
  siginfo_t info;
  info.si_pid = 0;
  int rc;
  do {
    rc = waitid(P_PID, (id_t)pid, &info, WEXITED | WNOHANG | WNOWAIT);
  } while (rc == -1 && errno == EINTR);
  if (rc == -1) return -1;
  return info.si_pid != 0 ? 1 : 0;
}

int shim_pipe_for_output(int fds[2]) {
  if (pipe2(fds, O_CLOEXEC) != 0) return -1;
  int flags = fcntl(fds[0], F_GETFL);
  if (flags == -1 || fcntl(fds[0], F_SETFL, flags | O_NONBLOCK) == -1) {
    close(fds[0]);
    close(fds[1]);
    return -1;
  }
  return 0;
}

ssize_t shim_send_passing(int sock, const void *buf, size_t len, const int *fds, int count,
                          int flags) {
  if (count < 1 || count > SHIM_MAX_PASSED_DESCRIPTORS) {
    errno = EINVAL;
    return -1;
  }
  union {
    char bytes[CMSG_SPACE(sizeof(int) * SHIM_MAX_PASSED_DESCRIPTORS)];
    struct cmsghdr align;
  } control;
  memset(&control, 0, sizeof(control));
  struct iovec iov = {.iov_base = (void *)buf, .iov_len = len};
  struct msghdr msg = {0};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control.bytes;
  msg.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)count);
  struct cmsghdr *cmsg = CMSG_FIRSTHDR(&msg);
  cmsg->cmsg_level = SOL_SOCKET;
  cmsg->cmsg_type = SCM_RIGHTS;
  cmsg->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)count);
  memcpy(CMSG_DATA(cmsg), fds, sizeof(int) * (size_t)count);
  return sendmsg(sock, &msg, flags);
}

ssize_t shim_recv_taking(int sock, void *buf, size_t len, int *fds, int capacity, int *count,
                         int flags) {
  *count = 0;
  if (capacity < 0) capacity = 0;
  if (capacity > SHIM_MAX_PASSED_DESCRIPTORS) capacity = SHIM_MAX_PASSED_DESCRIPTORS;
  union {
    char bytes[CMSG_SPACE(sizeof(int) * SHIM_MAX_PASSED_DESCRIPTORS)];
    struct cmsghdr align;
  } control;
  struct iovec iov = {.iov_base = buf, .iov_len = len};
  struct msghdr msg = {0};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control.bytes;
  msg.msg_controllen = sizeof(control.bytes);
  ssize_t n = recvmsg(sock, &msg, flags | MSG_CMSG_CLOEXEC);
  if (n < 0) return -1;
  // Every descriptor the kernel installed is taken or closed here; those
  // that did not fit the control buffer were never installed (MSG_CTRUNC).
  for (struct cmsghdr *cmsg = CMSG_FIRSTHDR(&msg); cmsg; cmsg = CMSG_NXTHDR(&msg, cmsg)) {
    if (cmsg->cmsg_level != SOL_SOCKET || cmsg->cmsg_type != SCM_RIGHTS) continue;
    size_t passed = (cmsg->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t i = 0; i < passed; i++) {
      int fd;
      memcpy(&fd, CMSG_DATA(cmsg) + i * sizeof(int), sizeof(int));
      if (*count < capacity) {
        fds[(*count)++] = fd;
      } else {
        close(fd);
      }
    }
  }
  return n;
}

#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE 1
#endif

int shim_rename_noreplace(const char *from, const char *to) {
  return (int)syscall(SYS_renameat2, AT_FDCWD, from, AT_FDCWD, to, RENAME_NOREPLACE);
}

int shim_open_path(int dirfd, const char *name) {
  return openat(dirfd, name, O_PATH | O_CLOEXEC);
}

int shim_reopen_for_reading(int pathfd) {
  char link[64];
  snprintf(link, sizeof link, "/proc/self/fd/%d", pathfd);
  return open(link, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
}
