// A WAL frame in one write. SQLite writes each frame of a commit as two
// pwrite calls at adjacent offsets: the frame's 24-byte header, then the
// page (wal.c, walWriteOneFrame). A WAL file opened through this VFS keeps
// such a header back and writes it with its page from one buffer: one
// system call a frame instead of two (issue 26: a toggle's system calls
// against Redis's + 1).
//
// A header is kept only when it starts where the file's last write ended:
// a new frame's, which SQLite follows with its page at once. The headers
// SQLite rewrites in place (walRewriteChecksums, after a page written twice
// in one transaction) start inside the log, are written as they come, and
// so a commit never returns with a header kept, whatever the synchronous
// setting. Anything else done to the file (a read, a sync, its size, a
// lock, closing it) writes a kept header first: SQLite's order of writes
// and syncs stands.
//
// Every other file, and every other method of the VFS, is the base VFS's.

#include "CSQLiteVFS.h"

#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

enum { FRAME_HEADER = 24 };

typedef struct {
  sqlite3_file base;  // its pMethods: joinedMethods
  sqlite3_file *real; // the base VFS's file, in the same allocation
  unsigned char header[FRAME_HEADER];
  sqlite3_int64 headerOffset; // where the kept header goes; -1: none kept
  sqlite3_int64 end;          // where the last write ended; -1: unknown
  unsigned char *joined;      // header and page, grown to a page once
  int joinedSize;
} WALFile;

static sqlite3_vfs joinedVFS;
static sqlite3_vfs *baseVFS;

#define ROUND8(n) (((n) + 7) & ~7)

static sqlite3_file *realOf(sqlite3_file *file) { return ((WALFile *)file)->real; }

/// Writes a kept header, if any.
static int writeKept(WALFile *file) {
  if (file->headerOffset < 0) return SQLITE_OK;
  sqlite3_int64 offset = file->headerOffset;
  file->headerOffset = -1;
  return file->real->pMethods->xWrite(file->real, file->header, FRAME_HEADER, offset);
}

static int joinedWrite(sqlite3_file *handle, const void *data, int amount, sqlite3_int64 offset) {
  WALFile *file = (WALFile *)handle;
  if (file->headerOffset >= 0 && offset == file->headerOffset + FRAME_HEADER) {
    int size = FRAME_HEADER + amount;
    if (file->joinedSize < size) {
      unsigned char *grown = sqlite3_realloc(file->joined, size);
      if (grown) {
        file->joined = grown;
        file->joinedSize = size;
      }
    }
    if (file->joinedSize >= size) {
      memcpy(file->joined, file->header, FRAME_HEADER);
      memcpy(file->joined + FRAME_HEADER, data, (size_t)amount);
      sqlite3_int64 at = file->headerOffset;
      file->headerOffset = -1;
      file->end = offset + amount;
      return file->real->pMethods->xWrite(file->real, file->joined, size, at);
    }
    // No memory for the buffer: the two writes SQLite asked for.
  }
  int rc = writeKept(file);
  if (rc != SQLITE_OK) return rc;
  int newFrame = amount == FRAME_HEADER && offset == file->end;
  file->end = offset + amount;
  if (newFrame) {
    memcpy(file->header, data, FRAME_HEADER);
    file->headerOffset = offset;
    return SQLITE_OK;
  }
  return file->real->pMethods->xWrite(file->real, data, amount, offset);
}

static int joinedClose(sqlite3_file *handle) {
  WALFile *file = (WALFile *)handle;
  int kept = writeKept(file);
  int rc = file->real->pMethods->xClose(file->real);
  sqlite3_free(file->joined);
  file->joined = NULL;
  file->joinedSize = 0;
  return kept != SQLITE_OK ? kept : rc;
}

// The methods below write a kept header, then do what the base file does.
#define WRITE_KEPT_FIRST(handle)                      \
  do {                                                \
    int kept = writeKept((WALFile *)(handle));        \
    if (kept != SQLITE_OK) return kept;               \
  } while (0)

static int joinedRead(sqlite3_file *handle, void *data, int amount, sqlite3_int64 offset) {
  WRITE_KEPT_FIRST(handle);
  return realOf(handle)->pMethods->xRead(realOf(handle), data, amount, offset);
}

static int joinedTruncate(sqlite3_file *handle, sqlite3_int64 size) {
  WRITE_KEPT_FIRST(handle);
  ((WALFile *)handle)->end = -1;
  return realOf(handle)->pMethods->xTruncate(realOf(handle), size);
}

static int joinedSync(sqlite3_file *handle, int flags) {
  WRITE_KEPT_FIRST(handle);
  return realOf(handle)->pMethods->xSync(realOf(handle), flags);
}

static int joinedFileSize(sqlite3_file *handle, sqlite3_int64 *size) {
  WRITE_KEPT_FIRST(handle);
  return realOf(handle)->pMethods->xFileSize(realOf(handle), size);
}

static int joinedLock(sqlite3_file *handle, int lock) {
  WRITE_KEPT_FIRST(handle);
  return realOf(handle)->pMethods->xLock(realOf(handle), lock);
}

static int joinedUnlock(sqlite3_file *handle, int lock) {
  WRITE_KEPT_FIRST(handle);
  return realOf(handle)->pMethods->xUnlock(realOf(handle), lock);
}

static int joinedCheckReservedLock(sqlite3_file *handle, int *out) {
  WRITE_KEPT_FIRST(handle);
  return realOf(handle)->pMethods->xCheckReservedLock(realOf(handle), out);
}

static int joinedFileControl(sqlite3_file *handle, int op, void *argument) {
  WRITE_KEPT_FIRST(handle);
  return realOf(handle)->pMethods->xFileControl(realOf(handle), op, argument);
}

static int joinedSectorSize(sqlite3_file *handle) {
  return realOf(handle)->pMethods->xSectorSize(realOf(handle));
}

static int joinedDeviceCharacteristics(sqlite3_file *handle) {
  return realOf(handle)->pMethods->xDeviceCharacteristics(realOf(handle));
}

// The version 2 and 3 methods, for a base file of an older version too.
static int realVersion(sqlite3_file *handle) { return realOf(handle)->pMethods->iVersion; }

static int joinedShmMap(sqlite3_file *handle, int region, int size, int extend, void volatile **out) {
  WRITE_KEPT_FIRST(handle);
  if (realVersion(handle) < 2) return SQLITE_IOERR_SHMMAP;
  return realOf(handle)->pMethods->xShmMap(realOf(handle), region, size, extend, out);
}

static int joinedShmLock(sqlite3_file *handle, int offset, int n, int flags) {
  WRITE_KEPT_FIRST(handle);
  if (realVersion(handle) < 2) return SQLITE_IOERR_SHMLOCK;
  return realOf(handle)->pMethods->xShmLock(realOf(handle), offset, n, flags);
}

static void joinedShmBarrier(sqlite3_file *handle) {
  if (realVersion(handle) < 2) return;
  realOf(handle)->pMethods->xShmBarrier(realOf(handle));
}

static int joinedShmUnmap(sqlite3_file *handle, int deleteFlag) {
  WRITE_KEPT_FIRST(handle);
  if (realVersion(handle) < 2) return SQLITE_OK;
  return realOf(handle)->pMethods->xShmUnmap(realOf(handle), deleteFlag);
}

static int joinedFetch(sqlite3_file *handle, sqlite3_int64 offset, int amount, void **out) {
  WRITE_KEPT_FIRST(handle);
  if (realVersion(handle) < 3) {
    *out = NULL; // no memory map: SQLite reads instead
    return SQLITE_OK;
  }
  return realOf(handle)->pMethods->xFetch(realOf(handle), offset, amount, out);
}

static int joinedUnfetch(sqlite3_file *handle, sqlite3_int64 offset, void *page) {
  if (realVersion(handle) < 3) return SQLITE_OK;
  return realOf(handle)->pMethods->xUnfetch(realOf(handle), offset, page);
}

static const sqlite3_io_methods joinedMethods = {
  .iVersion = 3,
  .xClose = joinedClose,
  .xRead = joinedRead,
  .xWrite = joinedWrite,
  .xTruncate = joinedTruncate,
  .xSync = joinedSync,
  .xFileSize = joinedFileSize,
  .xLock = joinedLock,
  .xUnlock = joinedUnlock,
  .xCheckReservedLock = joinedCheckReservedLock,
  .xFileControl = joinedFileControl,
  .xSectorSize = joinedSectorSize,
  .xDeviceCharacteristics = joinedDeviceCharacteristics,
  .xShmMap = joinedShmMap,
  .xShmLock = joinedShmLock,
  .xShmBarrier = joinedShmBarrier,
  .xShmUnmap = joinedShmUnmap,
  .xFetch = joinedFetch,
  .xUnfetch = joinedUnfetch,
};

static int joinedOpen(
  sqlite3_vfs *vfs, const char *name, sqlite3_file *handle, int flags, int *outFlags
) {
  (void)vfs;
  if (!(flags & SQLITE_OPEN_WAL)) {
    // Not a WAL: the base file itself, at the start of the allocation.
    return baseVFS->xOpen(baseVFS, name, handle, flags, outFlags);
  }
  WALFile *file = (WALFile *)handle;
  memset(file, 0, sizeof *file);
  file->real = (sqlite3_file *)((char *)handle + ROUND8(sizeof(WALFile)));
  file->headerOffset = -1;
  file->end = -1;
  int rc = baseVFS->xOpen(baseVFS, name, file->real, flags, outFlags);
  if (rc != SQLITE_OK || file->real->pMethods == NULL) {
    // A failed open that left methods set is closed by its caller: here.
    if (file->real->pMethods != NULL) file->real->pMethods->xClose(file->real);
    file->base.pMethods = NULL;
    return rc != SQLITE_OK ? rc : SQLITE_CANTOPEN;
  }
  file->base.pMethods = &joinedMethods;
  return SQLITE_OK;
}

int switchd_register_joined_wal_vfs(const char *name, const char *base) {
  if (sqlite3_vfs_find(name) != NULL) return SQLITE_OK;
  baseVFS = sqlite3_vfs_find(base);
  if (baseVFS == NULL) return SQLITE_ERROR;
  // The base VFS's methods, another name, room for the WAL file's own
  // fields before the base file's, and an xOpen that opens through the
  // base VFS itself (unix makes a file exclusive by its VFS's name).
  char *kept = strdup(name); // the VFS's name lives as long as it does: for ever
  if (kept == NULL) return SQLITE_NOMEM;
  joinedVFS = *baseVFS;
  joinedVFS.zName = kept;
  joinedVFS.pNext = NULL;
  joinedVFS.szOsFile = (int)ROUND8(sizeof(WALFile)) + baseVFS->szOsFile;
  joinedVFS.xOpen = joinedOpen;
  int rc = sqlite3_vfs_register(&joinedVFS, 0);
  if (rc != SQLITE_OK) free(kept);
  return rc;
}
