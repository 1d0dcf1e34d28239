// Files SQLite keeps beside the database, made or checked as switchd's
// before SQLite opens them (CONFIG.md, "Files switchd trusts").
//
// SQLite opens a WAL, a journal or a new database with O_CREAT and no
// O_EXCL, and when it runs as root hands the file to the database's owner
// (fchown). In a sticky folder such as /tmp another user may make the file
// in the moment before: root would then write its log into a file that
// user holds open, and the fchown would hide whose it was. A journal that
// user plants is worse: SQLite plays a hot journal back into the database.
// So a file SQLite creates is made here first, with O_EXCL, mode 0600 (a
// database holds users' own values: rule 13) and never through a link; one
// that is there already, and one SQLite opens without creating it, must be
// a regular file of this process's user or root, with one name, that
// others may not write to. Nobody else can remove or rename such a file in
// a sticky folder, so it stays the one checked. (The start's friendlier
// check, TrustedDirectory.checkOwnFiles, states the same rule in Swift.)

#include "CSQLiteVFS.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/// The last refusal on this thread, for the error SQLite's open becomes
/// (SQLite itself says only "unable to open database file"). SQLite's unix
/// VFS takes paths of at most 512 bytes: this holds one and its reason.
static _Thread_local char refused[1024];

static int refuse(const char *path, int found, const struct stat *status) {
  const char *reason = "";
  switch (found) {
  case SWITCHD_CLAIM_NOT_REGULAR: reason = "it is not a regular file"; break;
  case SWITCHD_CLAIM_OTHER_OWNER: reason = "it is owned by another user"; break;
  case SWITCHD_CLAIM_WRITABLE_BY_OTHERS: reason = "others may write to it"; break;
  case SWITCHD_CLAIM_SEVERAL_NAMES: reason = "it has more than one name (a hard link)"; break;
  default: reason = "it keeps appearing and vanishing"; break;
  }
  snprintf(
    refused, sizeof refused, "refusing to use %s: %s (uid %u, mode %04o)", path, reason,
    status != NULL ? (unsigned)status->st_uid : 0u,
    status != NULL ? (unsigned)(status->st_mode & 07777) : 0u
  );
  return found;
}

const char *switchd_take_refused_claim(void) {
  if (refused[0] == 0) return NULL;
  static _Thread_local char taken[sizeof refused];
  memcpy(taken, refused, sizeof refused);
  refused[0] = 0;
  return taken;
}

/// What is wrong with the file `found` describes, or SWITCHD_CLAIMED.
static int judge(const struct stat *found) {
  if (!S_ISREG(found->st_mode)) return SWITCHD_CLAIM_NOT_REGULAR;
  if (found->st_uid != geteuid() && found->st_uid != 0) return SWITCHD_CLAIM_OTHER_OWNER;
  if (found->st_mode & S_IWOTH) return SWITCHD_CLAIM_WRITABLE_BY_OTHERS;
  if (found->st_nlink != 1) return SWITCHD_CLAIM_SEVERAL_NAMES;
  return SWITCHD_CLAIMED;
}

int switchd_claim_file(const char *path, int create) {
  refused[0] = 0; // only the newest claim's refusal is told
  // A few rounds: a file its owner removes between the open and the look
  // (theirs to remove, even in a sticky folder) is made ours next round.
  for (int round = 0; round < 4; round++) {
    if (create) {
      int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
      if (fd >= 0) {
        (void)fchmod(fd, 0600); // exactly, whatever the umask
        close(fd);
        return SWITCHD_CLAIMED;
      }
      // Another failure is SQLite's own open's to report (no folder, EACCES).
      if (errno != EEXIST) return SWITCHD_CLAIMED;
    }
    struct stat found;
    if (lstat(path, &found) == 0) {
      int verdict = judge(&found);
      return verdict == SWITCHD_CLAIMED ? verdict : refuse(path, verdict, &found);
    }
    // Nothing there: without create, SQLite's open says so.
    if (errno != ENOENT || !create) return SWITCHD_CLAIMED;
  }
  return refuse(path, SWITCHD_CLAIM_VANISHING, NULL);
}
