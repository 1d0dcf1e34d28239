#include <sqlite3.h>

/// Turns SQLite's memory statistics off; effective only before the library
/// is first used (SQLITE_MISUSE after). With them on, every allocation and
/// free inside SQLite takes a process-wide mutex to count itself.
/// sqlite3_config is variadic, which Swift cannot call.
static inline int switchd_sqlite3_memstatus_off(void) {
  return sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
}
