#ifndef SWITCHD_CSQLITEVFS_H
#define SWITCHD_CSQLITEVFS_H

/// Registers a SQLite VFS named `name` that is the registered VFS `base`
/// except for WAL files: a WAL frame's 24-byte header and its page reach
/// the file in one write instead of two.
/// Call it once, before any connection uses `name` (not thread-safe).
/// Returns SQLITE_OK (also when `name` is registered already),
/// SQLITE_ERROR when `base` is not registered, or what
/// sqlite3_vfs_register returned.
int switchd_register_joined_wal_vfs(const char *name, const char *base);

#endif
