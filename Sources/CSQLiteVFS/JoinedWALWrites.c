// A commit's WAL frames in one write. SQLite writes each frame of a commit
// as two pwrite calls at adjacent offsets: the frame's 24-byte header, then
// the page (wal.c, walWriteOneFrame), and a commit of n pages as n such
// frames one after another. A WAL file opened through this VFS keeps the
// frames of a transaction back, in one buffer, until the frame that commits
// it (its header's "database size after commit" is not zero) has its page,
// and writes them all with one system call: one `pwrite` a commit instead
// of two a frame (issue 26: a toggle's system calls against Redis's + 1;
// with 1 KiB pages a commit of 8 toggles is ~2 frames).
//
// Only whole frames appended where the file's last write ended are kept:
// a new frame's header, then its page. The headers SQLite rewrites in place
// (walRewriteChecksums, after a page written twice in one transaction)
// start inside the log and are written as they come, after what is kept.
// The commit frame writes the run whatever the synchronous setting, so a
// commit never returns with anything kept, and SQLite adds the frames to
// the WAL index (what other connections read by) only after it has written
// them all. Anything else done to the file (a read, a sync, its size, a
// lock, closing it) writes what is kept first: SQLite's order of writes and
// syncs stands. A transaction larger than the buffer's limit (the cache
// spilling pages to the WAL before the commit) is written a limit at a time.
//
// A transaction that rolls back leaves the frames it spilled kept, and
// SQLite does nothing more to the WAL file: written later, they could land
// on frames another connection has committed since. So the database file
// is wrapped too, and when its connection gives up the WAL's write lock
// (the end of every write transaction; a commit's kept frames are written
// by then) what its WAL still keeps is dropped. On a device without
// power-safe overwrite SQLite pads a commit to a sector boundary and may
// split a frame's write around a sync; such a WAL is written as asked.
//
// Every file SQLite creates by name is claimed first (ClaimedFiles.c).
// Every other file, and every other method of the VFS, is the base VFS's.

#include "CSQLiteVFS.h"

#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

enum {
  FRAME_HEADER = 24,
  RUN_LIMIT = switchd_wal_run_limit, // 62 frames of 1 KiB, 15 of 4 KiB
};

/// The start of every file this VFS wraps.
typedef struct {
  sqlite3_file base;  // its pMethods: this VFS's
  sqlite3_file *real; // the base VFS's file, in the same allocation
} Wrapped;

typedef struct WALFile WALFile;

/// A database file: the base file's methods, and its WAL's while open.
typedef struct {
  Wrapped wrapped; // pMethods: databaseMethods
  WALFile *wal;
} DatabaseFile;

struct WALFile {
  Wrapped wrapped; // pMethods: joinedMethods
  DatabaseFile *database; // the database whose WAL this is, when opened through this VFS
  int passThrough;        // no power-safe overwrite: nothing is kept
  unsigned char header[FRAME_HEADER];
  sqlite3_int64 headerOffset; // where the kept header goes; -1: none kept
  sqlite3_int64 end;          // where the last write ended (kept or not); -1: unknown
  unsigned char *run;         // whole frames kept back, to go at runOffset
  int runLength;
  int runCapacity; // grown to the largest run, kept until the file closes
  sqlite3_int64 runOffset;
};

static sqlite3_vfs joinedVFS;
static sqlite3_vfs *baseVFS;

#define ROUND8(n) (((n) + 7) & ~7)

static sqlite3_file *realOf(sqlite3_file *file) { return ((Wrapped *)file)->real; }

/// Whether a frame header is a commit's: bytes 4-7 hold the database's size
/// in pages after the commit, zero for every other frame (the WAL format).
static int isCommitFrame(const unsigned char *header) {
  return (header[4] | header[5] | header[6] | header[7]) != 0;
}

/// Writes the kept frames, if any, in one call.
static int writeRun(WALFile *file) {
  if (file->runLength == 0) return SQLITE_OK;
  int length = file->runLength;
  file->runLength = 0;
  return file->wrapped.real->pMethods->xWrite(file->wrapped.real, file->run, length, file->runOffset);
}

/// Writes everything kept: the frames, then a header kept after them.
static int writeKept(WALFile *file) {
  int rc = writeRun(file);
  if (rc != SQLITE_OK || file->headerOffset < 0) return rc;
  sqlite3_int64 offset = file->headerOffset;
  file->headerOffset = -1;
  return file->wrapped.real->pMethods->xWrite(file->wrapped.real, file->header, FRAME_HEADER, offset);
}

/// Whether the run has room for `size` bytes, growing its buffer if need be.
static int runHasRoom(WALFile *file, int size) {
  if (size > RUN_LIMIT) return 0;
  if (file->runCapacity >= size) return 1;
  int capacity = file->runCapacity * 2 > size ? file->runCapacity * 2 : size;
  if (capacity > RUN_LIMIT) capacity = RUN_LIMIT;
  unsigned char *grown = sqlite3_realloc(file->run, capacity);
  if (grown == NULL) return 0;
  file->run = grown;
  file->runCapacity = capacity;
  return 1;
}

/// Drops what is kept (the frames of a transaction that did not commit):
/// the file then ends where the first of them would have gone.
static void dropKept(WALFile *file) {
  if (file->runLength > 0) {
    file->end = file->runOffset;
  } else if (file->headerOffset >= 0) {
    file->end = file->headerOffset;
  }
  file->runLength = 0;
  file->headerOffset = -1;
}

/// The kept header's page: the frame joins the run, which is written when
/// the frame commits. 0 when it cannot join (no memory): nothing changed.
/// After a failed write where the file ends is unknown.
static int joinFrame(WALFile *file, const void *page, int amount, int *rc) {
  int frame = FRAME_HEADER + amount;
  if (file->runLength > 0 && !runHasRoom(file, file->runLength + frame)) {
    // Full: what is kept goes now, and this frame starts a new run.
    *rc = writeRun(file);
    if (*rc != SQLITE_OK) {
      // The header too (its page is not written); where the file ends is unknown.
      file->headerOffset = -1;
      file->end = -1;
      return 1;
    }
  }
  if (!runHasRoom(file, file->runLength + frame)) return 0;
  if (file->runLength == 0) file->runOffset = file->headerOffset;
  memcpy(file->run + file->runLength, file->header, FRAME_HEADER);
  memcpy(file->run + file->runLength + FRAME_HEADER, page, (size_t)amount);
  file->runLength += frame;
  file->end = file->headerOffset + frame;
  file->headerOffset = -1;
  *rc = isCommitFrame(file->header) ? writeRun(file) : SQLITE_OK;
  if (*rc != SQLITE_OK) file->end = -1;
  return 1;
}

static int joinedWrite(sqlite3_file *handle, const void *data, int amount, sqlite3_int64 offset) {
  WALFile *file = (WALFile *)handle;
  if (file->passThrough) return realOf(handle)->pMethods->xWrite(realOf(handle), data, amount, offset);
  if (file->headerOffset >= 0 && offset == file->headerOffset + FRAME_HEADER) {
    int rc = SQLITE_OK;
    if (joinFrame(file, data, amount, &rc)) return rc;
    // No memory for the run: the writes SQLite asked for.
  }
  if (amount == FRAME_HEADER && offset == file->end && file->headerOffset < 0) {
    // A new frame's header, after the frames kept (if any): kept too.
    memcpy(file->header, data, FRAME_HEADER);
    file->headerOffset = offset;
    file->end = offset + amount;
    return SQLITE_OK;
  }
  int rc = writeKept(file);
  if (rc != SQLITE_OK) return rc;
  file->end = offset + amount;
  return realOf(handle)->pMethods->xWrite(realOf(handle), data, amount, offset);
}

static int joinedClose(sqlite3_file *handle) {
  WALFile *file = (WALFile *)handle;
  int kept = writeKept(file);
  if (file->database != NULL) file->database->wal = NULL;
  file->database = NULL;
  int rc = realOf(handle)->pMethods->xClose(realOf(handle));
  sqlite3_free(file->run);
  file->run = NULL;
  file->runCapacity = 0;
  return kept != SQLITE_OK ? kept : rc;
}

// The base file's methods, as they are (a database file's, and a WAL's
// once what it keeps is written). The version 2 and 3 methods also for a
// base file of an older version.
static int realVersion(sqlite3_file *h) { return realOf(h)->pMethods->iVersion; }

static int forwardRead(sqlite3_file *h, void *data, int amount, sqlite3_int64 offset) {
  return realOf(h)->pMethods->xRead(realOf(h), data, amount, offset);
}
static int forwardWrite(sqlite3_file *h, const void *data, int amount, sqlite3_int64 offset) {
  return realOf(h)->pMethods->xWrite(realOf(h), data, amount, offset);
}
static int forwardTruncate(sqlite3_file *h, sqlite3_int64 size) {
  return realOf(h)->pMethods->xTruncate(realOf(h), size);
}
static int forwardSync(sqlite3_file *h, int flags) {
  return realOf(h)->pMethods->xSync(realOf(h), flags);
}
static int forwardFileSize(sqlite3_file *h, sqlite3_int64 *size) {
  return realOf(h)->pMethods->xFileSize(realOf(h), size);
}
static int forwardLock(sqlite3_file *h, int lock) {
  return realOf(h)->pMethods->xLock(realOf(h), lock);
}
static int forwardUnlock(sqlite3_file *h, int lock) {
  return realOf(h)->pMethods->xUnlock(realOf(h), lock);
}
static int forwardCheckReservedLock(sqlite3_file *h, int *out) {
  return realOf(h)->pMethods->xCheckReservedLock(realOf(h), out);
}
static int forwardFileControl(sqlite3_file *h, int op, void *argument) {
  return realOf(h)->pMethods->xFileControl(realOf(h), op, argument);
}
static int forwardSectorSize(sqlite3_file *h) {
  return realOf(h)->pMethods->xSectorSize(realOf(h));
}
static int forwardDeviceCharacteristics(sqlite3_file *h) {
  return realOf(h)->pMethods->xDeviceCharacteristics(realOf(h));
}
static int forwardShmMap(sqlite3_file *h, int region, int size, int extend, void volatile **out) {
  if (realVersion(h) < 2) return SQLITE_IOERR_SHMMAP;
  return realOf(h)->pMethods->xShmMap(realOf(h), region, size, extend, out);
}
static int forwardShmLock(sqlite3_file *h, int offset, int n, int flags) {
  if (realVersion(h) < 2) return SQLITE_IOERR_SHMLOCK;
  return realOf(h)->pMethods->xShmLock(realOf(h), offset, n, flags);
}
static void forwardShmBarrier(sqlite3_file *h) {
  if (realVersion(h) >= 2) realOf(h)->pMethods->xShmBarrier(realOf(h));
}
static int forwardShmUnmap(sqlite3_file *h, int deleteFlag) {
  if (realVersion(h) < 2) return SQLITE_OK;
  return realOf(h)->pMethods->xShmUnmap(realOf(h), deleteFlag);
}
static int forwardFetch(sqlite3_file *h, sqlite3_int64 offset, int amount, void **out) {
  if (realVersion(h) < 3) {
    *out = NULL; // no memory map: SQLite reads instead
    return SQLITE_OK;
  }
  return realOf(h)->pMethods->xFetch(realOf(h), offset, amount, out);
}
static int forwardUnfetch(sqlite3_file *h, sqlite3_int64 offset, void *page) {
  if (realVersion(h) < 3) return SQLITE_OK;
  return realOf(h)->pMethods->xUnfetch(realOf(h), offset, page);
}

// A WAL's other methods write what it keeps, then do what the base file does.
#define WRITE_KEPT_FIRST(handle)                      \
  do {                                                \
    int kept = writeKept((WALFile *)(handle));        \
    if (kept != SQLITE_OK) return kept;               \
  } while (0)

static int joinedRead(sqlite3_file *h, void *data, int amount, sqlite3_int64 offset) {
  WRITE_KEPT_FIRST(h);
  return forwardRead(h, data, amount, offset);
}
static int joinedTruncate(sqlite3_file *h, sqlite3_int64 size) {
  WRITE_KEPT_FIRST(h);
  ((WALFile *)h)->end = -1;
  return forwardTruncate(h, size);
}
static int joinedSync(sqlite3_file *h, int flags) {
  WRITE_KEPT_FIRST(h);
  return forwardSync(h, flags);
}
static int joinedFileSize(sqlite3_file *h, sqlite3_int64 *size) {
  WRITE_KEPT_FIRST(h);
  return forwardFileSize(h, size);
}
static int joinedLock(sqlite3_file *h, int lock) {
  WRITE_KEPT_FIRST(h);
  return forwardLock(h, lock);
}
static int joinedUnlock(sqlite3_file *h, int lock) {
  WRITE_KEPT_FIRST(h);
  return forwardUnlock(h, lock);
}
static int joinedCheckReservedLock(sqlite3_file *h, int *out) {
  WRITE_KEPT_FIRST(h);
  return forwardCheckReservedLock(h, out);
}
static int joinedFileControl(sqlite3_file *h, int op, void *argument) {
  WRITE_KEPT_FIRST(h);
  return forwardFileControl(h, op, argument);
}
static int joinedShmMap(sqlite3_file *h, int region, int size, int extend, void volatile **out) {
  WRITE_KEPT_FIRST(h);
  return forwardShmMap(h, region, size, extend, out);
}
static int joinedShmLock(sqlite3_file *h, int offset, int n, int flags) {
  WRITE_KEPT_FIRST(h);
  return forwardShmLock(h, offset, n, flags);
}
static int joinedShmUnmap(sqlite3_file *h, int deleteFlag) {
  WRITE_KEPT_FIRST(h);
  return forwardShmUnmap(h, deleteFlag);
}
static int joinedFetch(sqlite3_file *h, sqlite3_int64 offset, int amount, void **out) {
  WRITE_KEPT_FIRST(h);
  return forwardFetch(h, offset, amount, out);
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
  .xSectorSize = forwardSectorSize,
  .xDeviceCharacteristics = forwardDeviceCharacteristics,
  .xShmMap = joinedShmMap,
  .xShmLock = joinedShmLock,
  .xShmBarrier = forwardShmBarrier,
  .xShmUnmap = joinedShmUnmap,
  .xFetch = joinedFetch,
  .xUnfetch = forwardUnfetch,
};

// A database file: every method the base file's, except that giving up
// the WAL's write lock drops what its WAL keeps (see the top of the file).
// WAL_WRITE_LOCK is the first of the WAL-index locks (wal.c).
static int databaseShmLock(sqlite3_file *handle, int offset, int n, int flags) {
  DatabaseFile *file = (DatabaseFile *)handle;
  if (offset == 0 && flags == (SQLITE_SHM_UNLOCK | SQLITE_SHM_EXCLUSIVE) && file->wal != NULL) {
    dropKept(file->wal);
  }
  return forwardShmLock(handle, offset, n, flags);
}

static int databaseClose(sqlite3_file *handle) {
  DatabaseFile *file = (DatabaseFile *)handle;
  if (file->wal != NULL) file->wal->database = NULL;
  file->wal = NULL;
  return realOf(handle)->pMethods->xClose(realOf(handle));
}

static const sqlite3_io_methods databaseMethods = {
  .iVersion = 3,
  .xClose = databaseClose,
  .xRead = forwardRead,
  .xWrite = forwardWrite,
  .xTruncate = forwardTruncate,
  .xSync = forwardSync,
  .xFileSize = forwardFileSize,
  .xLock = forwardLock,
  .xUnlock = forwardUnlock,
  .xCheckReservedLock = forwardCheckReservedLock,
  .xFileControl = forwardFileControl,
  .xSectorSize = forwardSectorSize,
  .xDeviceCharacteristics = forwardDeviceCharacteristics,
  .xShmMap = forwardShmMap,
  .xShmLock = databaseShmLock,
  .xShmBarrier = forwardShmBarrier,
  .xShmUnmap = forwardShmUnmap,
  .xFetch = forwardFetch,
  .xUnfetch = forwardUnfetch,
};

/// Opens `name` through the base VFS into the base file after `size` bytes
/// of this VFS's own fields; false (and the file closed) when it failed.
static int openReal(
  const char *name, sqlite3_file *handle, size_t size, int flags, int *outFlags, int *rc
) {
  Wrapped *wrapped = (Wrapped *)handle;
  wrapped->real = (sqlite3_file *)((char *)handle + ROUND8(size));
  *rc = baseVFS->xOpen(baseVFS, name, wrapped->real, flags, outFlags);
  if (*rc == SQLITE_OK && wrapped->real->pMethods != NULL) return 1;
  // A failed open that left methods set is closed by its caller: here.
  if (wrapped->real->pMethods != NULL) wrapped->real->pMethods->xClose(wrapped->real);
  wrapped->base.pMethods = NULL;
  if (*rc == SQLITE_OK) *rc = SQLITE_CANTOPEN;
  return 0;
}

static int joinedOpen(
  sqlite3_vfs *vfs, const char *name, sqlite3_file *handle, int flags, int *outFlags
) {
  (void)vfs;
  int rc = SQLITE_OK;
  // The database, its WAL and its journal are made or checked as switchd's
  // first (ClaimedFiles.c), also when SQLite opens one without creating it
  // (a hot journal it would play back). Temporary files SQLite makes O_EXCL.
  int kept = SQLITE_OPEN_MAIN_DB | SQLITE_OPEN_MAIN_JOURNAL | SQLITE_OPEN_WAL;
  if (name != NULL && (flags & kept) &&
      !(flags & (SQLITE_OPEN_EXCLUSIVE | SQLITE_OPEN_DELETEONCLOSE)) &&
      switchd_claim_file(name, (flags & SQLITE_OPEN_CREATE) != 0) != SWITCHD_CLAIMED) {
    handle->pMethods = NULL; // a failed open leaves none, as SQLite asks
    return SQLITE_CANTOPEN;
  }
  if (flags & SQLITE_OPEN_MAIN_DB) {
    DatabaseFile *file = (DatabaseFile *)handle;
    memset(file, 0, sizeof *file);
    if (!openReal(name, handle, sizeof(DatabaseFile), flags, outFlags, &rc)) return rc;
    file->wrapped.base.pMethods = &databaseMethods;
    return SQLITE_OK;
  }
  if (!(flags & SQLITE_OPEN_WAL)) {
    // Neither: the base file itself, at the start of the allocation.
    return baseVFS->xOpen(baseVFS, name, handle, flags, outFlags);
  }
  WALFile *file = (WALFile *)handle;
  memset(file, 0, sizeof *file);
  file->headerOffset = -1;
  file->end = -1;
  if (!openReal(name, handle, sizeof(WALFile), flags, outFlags, &rc)) return rc;
  // SQLite names a WAL after its database, whose file it can find from the name.
  sqlite3_file *database = sqlite3_database_file_object(name);
  if (database != NULL && database->pMethods == &databaseMethods) {
    file->database = (DatabaseFile *)database;
    file->database->wal = file;
  }
  // SQLite pads to the sector by what the database's file can do (walOpen).
  sqlite3_file *asked = file->database != NULL ? file->database->wrapped.real : file->wrapped.real;
  file->passThrough =
    !(asked->pMethods->xDeviceCharacteristics(asked) & SQLITE_IOCAP_POWERSAFE_OVERWRITE);
  file->wrapped.base.pMethods = &joinedMethods;
  return SQLITE_OK;
}

int switchd_register_joined_wal_vfs(const char *name, const char *base) {
  if (sqlite3_vfs_find(name) != NULL) return SQLITE_OK;
  baseVFS = sqlite3_vfs_find(base);
  if (baseVFS == NULL) return SQLITE_ERROR;
  // The base VFS's methods, another name, room for a wrapped file's own
  // fields before the base file's, and an xOpen that opens through the
  // base VFS itself (unix makes a file exclusive by its VFS's name).
  char *kept = strdup(name); // the VFS's name lives as long as it does: for ever
  if (kept == NULL) return SQLITE_NOMEM;
  joinedVFS = *baseVFS;
  joinedVFS.zName = kept;
  joinedVFS.pNext = NULL;
  size_t own = sizeof(WALFile) > sizeof(DatabaseFile) ? sizeof(WALFile) : sizeof(DatabaseFile);
  joinedVFS.szOsFile = (int)ROUND8(own) + baseVFS->szOsFile;
  joinedVFS.xOpen = joinedOpen;
  int rc = sqlite3_vfs_register(&joinedVFS, 0);
  if (rc != SQLITE_OK) free(kept);
  return rc;
}
