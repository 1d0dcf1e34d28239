// SQLite's process-wide settings, which only a call before its first use
// can make (sqlite3_config is variadic: Swift cannot call it).
//
// Memory statistics off: with them on (Debian's default), every
// sqlite3_malloc and sqlite3_free takes a process-wide mutex to count the
// bytes. switchd reads none of the counts (no sqlite3_memory_used, no soft
// heap limit). With one connection toggling, a toggle's instructions fell
// 33.0k -> 32.5k (issue 26, callgrind); SQLite's own documentation
// recommends building with SQLITE_DEFAULT_MEMSTATUS=0 for speed.
#include <sqlite3.h>

#include "CSQLiteVFS.h"

int switchd_configure_sqlite(void) { return sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0); }
