// sd-bus, for the one D-Bus call switchd makes (polkit's CheckAuthorization),
// loaded from libsystemd.so.0 the first time it is needed rather than linked:
// a switchd that never asks polkit never maps libsystemd nor what it links
// (on Debian 12 libgcrypt, libgpg-error, liblzma, libzstd, liblz4 and libcap:
// ~0.8 MiB of resident pages, and their relocations at every start).
#ifndef SWITCHD_CSYSTEMD_H
#define SWITCHD_CSYSTEMD_H

#include <stdint.h>

// sd-bus.h (libsystemd-dev) when it is installed: LoadedSDBus.c then checks
// each function type below against its declaration, and the layout of
// `switchd_sd_bus_error` against `sd_bus_error`. Without it, the five types
// of it switchd uses, as libsystemd.so.0's ABI fixes them, so that a machine
// with only libsqlite3-dev builds switchd (CI builds this way too:
// SWITCHD_OWN_SD_BUS_TYPES).
// (Unspecified nullability, as sd-bus.h declares them: Swift sees the same.)
struct switchd_sd_bus_error {
  const char *_Null_unspecified name;
  const char *_Null_unspecified message;
  int _need_free;
};
#if __has_include(<systemd/sd-bus.h>) && !defined(SWITCHD_OWN_SD_BUS_TYPES)
#include <systemd/sd-bus.h>
#define SWITCHD_HAS_SD_BUS_H 1
#else
typedef struct sd_bus sd_bus;
typedef struct sd_bus_message sd_bus_message;
typedef struct sd_bus_slot sd_bus_slot;
typedef struct switchd_sd_bus_error sd_bus_error;
typedef int (*sd_bus_message_handler_t)(
    sd_bus_message *_Null_unspecified m, void *_Null_unspecified userdata,
    sd_bus_error *_Null_unspecified ret_error);
#endif

#pragma clang assume_nonnull begin

/// The sd-bus functions switchd calls, each as libsystemd.so.0 exports it.
/// The pointers a caller may pass as NULL are marked so.
typedef struct {
  int (*open_system)(sd_bus *_Nullable *_Nonnull bus);
  int (*is_open)(sd_bus *bus);
  sd_bus *_Nullable (*_Nonnull flush_close_unref)(sd_bus *_Nullable bus);
  int (*process)(sd_bus *bus, sd_bus_message *_Nullable *_Nullable ret);
  int (*get_fd)(sd_bus *bus);
  int (*get_events)(sd_bus *bus);
  int (*get_timeout)(sd_bus *bus, uint64_t *usec);
  int (*call_async)(
      sd_bus *bus, sd_bus_slot *_Nullable *_Nullable slot, sd_bus_message *m,
      sd_bus_message_handler_t _Nullable callback, void *_Nullable userdata, uint64_t usec);
  int (*message_new_method_call)(
      sd_bus *bus, sd_bus_message *_Nullable *_Nonnull m, const char *destination,
      const char *path, const char *interface, const char *member);
  sd_bus_message *_Nullable (*_Nonnull message_unref)(sd_bus_message *_Nullable m);
  int (*message_open_container)(sd_bus_message *m, char type, const char *contents);
  int (*message_close_container)(sd_bus_message *m);
  int (*message_append_basic)(sd_bus_message *m, char type, const void *p);
  int (*message_enter_container)(sd_bus_message *m, char type, const char *contents);
  int (*message_read_basic)(sd_bus_message *m, char type, void *p);
  int (*message_is_method_error)(sd_bus_message *m, const char *_Nullable name);
  const sd_bus_error *_Nullable (*_Nonnull message_get_error)(sd_bus_message *m);
} switchd_sd_bus;

/// Loads libsystemd.so.0 and finds every function once (the first call
/// does it, under a pthread_once; later calls return what it found).
/// NULL when the library or one of the functions is missing: then
/// `switchd_sd_bus_error()` says why.
const switchd_sd_bus *_Nullable switchd_sd_bus_load(void);

/// Why `switchd_sd_bus_load` returned NULL (dlerror's text); "" otherwise.
const char *switchd_sd_bus_error(void);

#pragma clang assume_nonnull end

#endif
