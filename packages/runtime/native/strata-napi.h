/*
 * The Node-API helpers every Strata addon in C uses (the watchdog, the wire codec and the spawn
 * addon here; the seccomp, Landlock and Seatbelt layers' addons): one copy, so a fix reaches all. The layers find this header
 * through @strata/runtime (their binding.gyp's include_dirs; scripts/prebuild.mjs passes -I).
 *
 * Include after <node_api.h> with NAPI_VERSION defined.
 */
#ifndef STRATA_NAPI_H
#define STRATA_NAPI_H

#include <node_api.h>
#include <stdbool.h>

/*
 * Runs a Node-API call; on failure throws a JavaScript Error with Node-API's own message (unless
 * the call already left an exception pending) and returns NULL from the calling function, so a
 * binding fails loudly instead of going on with an unset value.
 */
#define CHECK(env, call)                                                                             \
  do {                                                                                               \
    if ((call) != napi_ok) {                                                                         \
      const napi_extended_error_info *info;                                                          \
      napi_get_last_error_info((env), &info);                                                        \
      bool pending;                                                                                  \
      napi_is_exception_pending((env), &pending);                                                    \
      if (!pending) napi_throw_error((env), NULL, info->error_message ? info->error_message : #call); \
      return NULL;                                                                                   \
    }                                                                                                \
  } while (0)

/* A JavaScript number, or NULL with an exception pending. */
static inline napi_value strata_number(napi_env env, double value) {
  napi_value result;
  CHECK(env, napi_create_double(env, value, &result));
  return result;
}

#endif
