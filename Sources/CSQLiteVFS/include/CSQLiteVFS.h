#ifndef SWITCHD_CSQLITEVFS_H
#define SWITCHD_CSQLITEVFS_H

/// The most a WAL file keeps back before writing it: a transaction's frames
/// up to this many bytes reach the file in one write. Below 128 KiB: the unix
/// VFS writes at most 128 KiB - 1 a call (seekAndWrite masks the length with
/// 0x1ffff, and a longer write fails as SQLITE_FULL).
enum { switchd_wal_run_limit = 64 * 1024 };

/// Registers a SQLite VFS named `name` that is the registered VFS `base`
/// except for WAL files: the frames of a transaction (each a 24-byte header
/// and a page) reach the file in one write, at its commit frame, instead of
/// two writes a frame, and a rolled-back transaction's are dropped when its
/// connection gives up the write lock (its database file is wrapped for
/// that; every other method is the base file's).
/// Call it once, before any connection uses `name` (not thread-safe).
/// Returns SQLITE_OK (also when `name` is registered already),
/// SQLITE_ERROR when `base` is not registered, or what
/// sqlite3_vfs_register returned.
int switchd_register_joined_wal_vfs(const char *name, const char *base);

/// What `switchd_claim_file` found.
enum {
  SWITCHD_CLAIMED = 0,
  SWITCHD_CLAIM_NOT_REGULAR,
  SWITCHD_CLAIM_OTHER_OWNER,
  SWITCHD_CLAIM_WRITABLE_BY_OTHERS,
  SWITCHD_CLAIM_SEVERAL_NAMES,
  SWITCHD_CLAIM_VANISHING,
};

/// Makes `path` switchd's before SQLite opens it (ClaimedFiles.c). With
/// `create`: created empty, mode 0600, when missing. Either way one that
/// is there must be a regular file of this process's user or root, not
/// writable by others, with one name. Returns SWITCHD_CLAIMED (also when
/// nothing is there without `create`: SQLite's open then says so), or what
/// is wrong. The VFS above claims every database, WAL and journal SQLite
/// opens by name. (Under unix-excl the WAL index is in memory: there is no
/// `-shm` to claim.)
int switchd_claim_file(const char *path, int create);

/// Why this thread's last claim was refused ("refusing to use PATH: …"),
/// once, or NULL when none was since the last call. Valid on this thread
/// until its next call.
const char *switchd_take_refused_claim(void);

#endif
