#include "CSystemd.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>

#ifdef SWITCHD_HAS_SD_BUS_H
// The error struct a build without sd-bus.h uses is libsystemd's, field by field.
#define SAME_FIELD(field)                                                                 \
  _Static_assert(offsetof(struct switchd_sd_bus_error, field) == offsetof(sd_bus_error, field) && \
                     sizeof(((struct switchd_sd_bus_error *)0)->field) ==                   \
                         sizeof(((sd_bus_error *)0)->field),                                \
                 "switchd_sd_bus_error." #field " is not sd_bus_error's");
SAME_FIELD(name)
SAME_FIELD(message)
SAME_FIELD(_need_free)
#undef SAME_FIELD
_Static_assert(sizeof(struct switchd_sd_bus_error) == sizeof(sd_bus_error) &&
                   _Alignof(struct switchd_sd_bus_error) == _Alignof(sd_bus_error),
               "switchd_sd_bus_error is not laid out as sd_bus_error");
#endif

static switchd_sd_bus functions;
static const switchd_sd_bus *loaded;
static char load_error[512];
static pthread_once_t once = PTHREAD_ONCE_INIT;

/// The address of `name` in `library`, or NULL with `error` set.
static void *find(void *library, const char *name) {
  void *address = dlsym(library, name);
  if (!address) snprintf(load_error, sizeof load_error, "libsystemd.so.0 has no %s", name);
  return address;
}

static void load(void) {
  // RTLD_LOCAL: its symbols resolve nothing else in switchd.
  void *library = dlopen("libsystemd.so.0", RTLD_NOW | RTLD_LOCAL);
  if (!library) {
    const char *why = dlerror();
    snprintf(load_error, sizeof load_error, "%s", why ? why : "libsystemd.so.0 could not be loaded");
    return;
  }
  switchd_sd_bus f;
  // Each member's type is checked against sd-bus.h's declaration of the
  // function at compile time, where that header is; the address is stored
  // through a `void *` view of the member (POSIX's idiom for dlsym). A
  // missing function leaves `loaded` NULL (the library stays loaded: it is
  // never unloaded).
#ifdef SWITCHD_HAS_SD_BUS_H
#define CHECK_TYPE(member, symbol)                                                          \
  _Static_assert(__builtin_types_compatible_p(__typeof__(&symbol), __typeof__(f.member)), \
                 #symbol " is not declared as switchd_sd_bus." #member " says");
#else
#define CHECK_TYPE(member, symbol)
#endif
#define FIND(member, symbol)                                                    \
  CHECK_TYPE(member, symbol)                                                    \
  if (!(*(void **)&f.member = find(library, #symbol))) return;
  FIND(open_system, sd_bus_open_system)
  FIND(is_open, sd_bus_is_open)
  FIND(flush_close_unref, sd_bus_flush_close_unref)
  FIND(process, sd_bus_process)
  FIND(get_fd, sd_bus_get_fd)
  FIND(get_events, sd_bus_get_events)
  FIND(get_timeout, sd_bus_get_timeout)
  FIND(call_async, sd_bus_call_async)
  FIND(message_new_method_call, sd_bus_message_new_method_call)
  FIND(message_unref, sd_bus_message_unref)
  FIND(message_open_container, sd_bus_message_open_container)
  FIND(message_close_container, sd_bus_message_close_container)
  FIND(message_append_basic, sd_bus_message_append_basic)
  FIND(message_enter_container, sd_bus_message_enter_container)
  FIND(message_read_basic, sd_bus_message_read_basic)
  FIND(message_is_method_error, sd_bus_message_is_method_error)
  FIND(message_get_error, sd_bus_message_get_error)
#undef FIND
#undef CHECK_TYPE
  functions = f;
  loaded = &functions;
}

const switchd_sd_bus *switchd_sd_bus_load(void) {
  pthread_once(&once, load);
  return loaded;
}

const char *switchd_sd_bus_error(void) {
  pthread_once(&once, load);
  return loaded ? "" : load_error;
}
