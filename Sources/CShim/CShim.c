#define _GNU_SOURCE
#include "CShim.h"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <pthread.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
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

int shim_eventfd(void) { return eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC); }

int shim_signalfd_termination_and_reload(void) {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGHUP);
  if (pthread_sigmask(SIG_BLOCK, &set, NULL) != 0) return -1;
  return signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
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
