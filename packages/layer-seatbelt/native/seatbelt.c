/*
 * strata_seatbelt.node — puts the calling process in a Seatbelt sandbox, as a plain-C Node-API addon.
 *
 *   apply(profile)          sandbox_init(profile, 0, &error): `profile` is SBPL text (written by
 *                           src/profile.ts). Seatbelt applies to the whole process, every thread
 *                           included, and cannot be lifted. Throws with Seatbelt's own error text.
 *   processArgsErrno(pid)   reads another process's arguments and environment (sysctl
 *                           KERN_PROCARGS2, what `ps -E` does): 0 when it could, else the errno.
 *                           For the self-test, which must find it refused.
 *
 * macOS only (binding.gyp builds nothing elsewhere). Every failure throws one line:
 * `strata-seatbelt: <step>: <reason>`.
 */
#define NAPI_VERSION 8
#include <errno.h>
#include <node_api.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysctl.h>
#include <sys/types.h>

#include "strata-napi.h"

/*
 * From <sandbox.h>, declared here rather than included: the header marks them deprecated (since
 * macOS 10.8) and -Werror would stop the build. They are still in libSystem and still what
 * browsers use to sandbox their child processes.
 */
int sandbox_init(const char *profile, uint64_t flags, char **errorbuf);
void sandbox_free_error(char *errorbuf);

/* ---- apply --------------------------------------------------------------------------------- */

/* The profile argument as a NUL-terminated copy (free it), or throws and returns NULL. */
static char *profile_arg(napi_env env, napi_value value) {
  napi_valuetype type;
  if (napi_typeof(env, value, &type) != napi_ok || type != napi_string) {
    napi_throw_type_error(env, "ERR_INVALID_ARG_TYPE", "strata-seatbelt: apply(profile): profile must be a string");
    return NULL;
  }
  size_t length;
  if (napi_get_value_string_utf8(env, value, NULL, 0, &length) != napi_ok) return NULL;
  char *profile = malloc(length + 1);
  if (profile == NULL) {
    napi_throw_error(env, "ERR_STRATA_SEATBELT", "strata-seatbelt: apply(profile): out of memory");
    return NULL;
  }
  size_t copied;
  if (napi_get_value_string_utf8(env, value, profile, length + 1, &copied) != napi_ok) {
    free(profile);
    return NULL;
  }
  /* A NUL inside would cut the profile short without a word: refuse it. */
  if (copied != length || strlen(profile) != length) {
    free(profile);
    napi_throw_type_error(env, "ERR_INVALID_ARG_VALUE", "strata-seatbelt: apply(profile): profile must not contain NUL");
    return NULL;
  }
  return profile;
}

static napi_value apply(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  CHECK(env, napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  if (argc < 1) {
    napi_throw_type_error(env, "ERR_MISSING_ARGS", "strata-seatbelt: apply(profile)");
    return NULL;
  }
  char *profile = profile_arg(env, argv[0]);
  if (profile == NULL) return NULL;
  char *error = NULL;
  int result = sandbox_init(profile, 0, &error);
  free(profile);
  if (result == 0) return NULL;
  char message[1024];
  snprintf(message, sizeof message, "strata-seatbelt: sandbox_init: %s", error != NULL ? error : "failed without a message");
  if (error != NULL) sandbox_free_error(error);
  napi_throw_error(env, "ERR_STRATA_SEATBELT", message);
  return NULL;
}

/* ---- processArgsErrno ---------------------------------------------------------------------- */

static napi_value process_args_errno(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  CHECK(env, napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  int32_t pid = 0;
  if (argc < 1 || napi_get_value_int32(env, argv[0], &pid) != napi_ok || pid <= 0) {
    napi_throw_type_error(env, "ERR_INVALID_ARG_TYPE", "strata-seatbelt: processArgsErrno(pid): pid must be a positive integer");
    return NULL;
  }
  int mib[3] = {CTL_KERN, KERN_PROCARGS2, pid};
  /* First the size, then the arguments themselves: either step refused is the answer. */
  size_t size = 0;
  int error = 0;
  if (sysctl(mib, 3, NULL, &size, NULL, 0) != 0) {
    error = errno;
  } else {
    char *buffer = malloc(size > 0 ? size : 1);
    if (buffer == NULL) {
      napi_throw_error(env, "ERR_STRATA_SEATBELT", "strata-seatbelt: processArgsErrno: out of memory");
      return NULL;
    }
    if (sysctl(mib, 3, buffer, &size, NULL, 0) != 0) error = errno;
    free(buffer);
  }
  napi_value result;
  CHECK(env, napi_create_int32(env, error, &result));
  return result;
}

NAPI_MODULE_INIT() {
  napi_property_descriptor properties[] = {
      {"apply", NULL, apply, NULL, NULL, NULL, napi_enumerable, NULL},
      {"processArgsErrno", NULL, process_args_errno, NULL, NULL, NULL, napi_enumerable, NULL},
  };
  CHECK(env, napi_define_properties(env, exports, sizeof properties / sizeof properties[0], properties));
  return exports;
}
