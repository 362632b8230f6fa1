/*
 * strata_seccomp.node — installs a seccomp-bpf filter on every thread, as a plain-C Node-API addon.
 *
 *   install(filter)        PR_SET_NO_NEW_PRIVS 1, then seccomp(SECCOMP_SET_MODE_FILTER,
 *                          SECCOMP_FILTER_FLAG_TSYNC, filter): every thread of the process, the
 *                          ones Node started before any JavaScript ran included, gets the filter.
 *                          `filter` is a Buffer of struct sock_filter (8 bytes each, the host's
 *                          byte order), compiled by src/compile-filter.ts. Throws with the errno,
 *                          and for a TSYNC failure the id of the thread that could not be synced.
 *   mode()                 prctl(PR_GET_SECCOMP) for the calling thread: 0 none, 2 filter
 *   noNewPrivs()           prctl(PR_GET_NO_NEW_PRIVS) for the calling thread: 0 or 1
 *   rawSyscall(nr, a0..a5) syscall(nr, a0, ..., a5); the result, or -errno. For the tests and the
 *                          self-test, which fire the calls the filter exists to stop. Harmless:
 *                          the filter governs it like every other system call. Arguments are
 *                          Numbers (integers) or BigInts (taken modulo 2^64).
 *
 * Linux only. Every failure throws one line: `strata-seccomp: <step>: <reason>`.
 */
#define _GNU_SOURCE
#define NAPI_VERSION 8
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <node_api.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "strata-napi.h"

#ifndef SECCOMP_FILTER_FLAG_TSYNC
#define SECCOMP_FILTER_FLAG_TSYNC (1UL << 0)
#endif

/* Throws `strata-seccomp: <step>: <strerror(error)>` with code ERR_STRATA_SECCOMP. */
static void throw_errno(napi_env env, const char *step, int error) {
  char message[200];
  snprintf(message, sizeof message, "strata-seccomp: %s: %s (errno %d)", step, strerror(error), error);
  napi_throw_error(env, "ERR_STRATA_SECCOMP", message);
}

/* ---- install ------------------------------------------------------------------------------- */

/* The filter from a Buffer argument, or throws and returns false. */
static bool filter_arg(napi_env env, napi_value value, struct sock_fprog *program) {
  bool is_buffer = false;
  napi_is_buffer(env, value, &is_buffer);
  if (!is_buffer) {
    napi_throw_type_error(env, "ERR_INVALID_ARG_TYPE", "strata-seccomp: install(filter): filter must be a Buffer");
    return false;
  }
  void *data;
  size_t length;
  if (napi_get_buffer_info(env, value, &data, &length) != napi_ok) return false;
  if (length == 0 || length % sizeof(struct sock_filter) != 0 || length / sizeof(struct sock_filter) > BPF_MAXINSNS) {
    char message[200];
    snprintf(message, sizeof message,
             "strata-seccomp: install(filter): %zu bytes is not 1 to %d instructions of %zu bytes", length,
             BPF_MAXINSNS, sizeof(struct sock_filter));
    napi_throw_range_error(env, "ERR_OUT_OF_RANGE", message);
    return false;
  }
  program->len = (unsigned short)(length / sizeof(struct sock_filter));
  program->filter = (struct sock_filter *)data;
  return true;
}

/* Step 1: nothing executed from here on can gain privileges (and an unprivileged filter needs it). */
static bool set_no_new_privs(napi_env env) {
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0) return true;
  throw_errno(env, "PR_SET_NO_NEW_PRIVS", errno);
  return false;
}

/* Step 2: the filter, on every thread. A positive result is the id of a thread TSYNC could not sync. */
static bool install_filter(napi_env env, struct sock_fprog *program) {
  long result = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, program);
  if (result == 0) return true;
  if (result > 0) {
    char message[200];
    snprintf(message, sizeof message,
             "strata-seccomp: SECCOMP_FILTER_FLAG_TSYNC: thread %ld cannot be synced (it has a different filter); "
             "nothing was installed",
             result);
    napi_throw_error(env, "ERR_STRATA_SECCOMP_TSYNC", message);
    return false;
  }
  throw_errno(env, "seccomp(SECCOMP_SET_MODE_FILTER, TSYNC)", errno);
  return false;
}

static napi_value install(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  CHECK(env, napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  if (argc < 1) {
    napi_throw_type_error(env, "ERR_MISSING_ARGS", "strata-seccomp: install(filter)");
    return NULL;
  }
  struct sock_fprog program;
  if (!filter_arg(env, argv[0], &program)) return NULL;
  if (!set_no_new_privs(env)) return NULL;
  if (!install_filter(env, &program)) return NULL;
  return NULL;
}

/* ---- status -------------------------------------------------------------------------------- */

static napi_value mode(napi_env env, napi_callback_info info) {
  (void)info;
  int result = prctl(PR_GET_SECCOMP, 0, 0, 0, 0);
  if (result < 0) {
    throw_errno(env, "PR_GET_SECCOMP", errno);
    return NULL;
  }
  return strata_number(env, result);
}

static napi_value no_new_privs(napi_env env, napi_callback_info info) {
  (void)info;
  int result = prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0);
  if (result < 0) {
    throw_errno(env, "PR_GET_NO_NEW_PRIVS", errno);
    return NULL;
  }
  return strata_number(env, result);
}

/* ---- rawSyscall ---------------------------------------------------------------------------- */

/* A 64-bit register value from a Number (an integer, possibly negative) or a BigInt, or throws. */
static bool register_arg(napi_env env, napi_value value, int index, uint64_t *out) {
  napi_valuetype type;
  napi_typeof(env, value, &type);
  if (type == napi_bigint) {
    bool lossless;
    return napi_get_value_bigint_uint64(env, value, out, &lossless) == napi_ok;
  }
  double n;
  if (type == napi_number && napi_get_value_double(env, value, &n) == napi_ok && n == (double)(int64_t)n) {
    *out = (uint64_t)(int64_t)n;
    return true;
  }
  char message[120];
  snprintf(message, sizeof message, "strata-seccomp: rawSyscall: argument %d must be an integer or a BigInt", index);
  napi_throw_type_error(env, "ERR_INVALID_ARG_TYPE", message);
  return false;
}

static napi_value raw_syscall(napi_env env, napi_callback_info info) {
  size_t argc = 7;
  napi_value argv[7];
  CHECK(env, napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  if (argc < 1) {
    napi_throw_type_error(env, "ERR_MISSING_ARGS", "strata-seccomp: rawSyscall(nr, a0, ..., a5)");
    return NULL;
  }
  uint64_t r[7] = {0};
  for (size_t i = 0; i < argc; i++) {
    if (!register_arg(env, argv[i], (int)i, &r[i])) return NULL;
  }
  errno = 0;
  long result = syscall((long)r[0], r[1], r[2], r[3], r[4], r[5], r[6]);
  return strata_number(env, result == -1 && errno != 0 ? -(double)errno : (double)result);
}

NAPI_MODULE_INIT() {
  napi_property_descriptor properties[] = {
      {"install", NULL, install, NULL, NULL, NULL, napi_enumerable, NULL},
      {"mode", NULL, mode, NULL, NULL, NULL, napi_enumerable, NULL},
      {"noNewPrivs", NULL, no_new_privs, NULL, NULL, NULL, napi_enumerable, NULL},
      {"rawSyscall", NULL, raw_syscall, NULL, NULL, NULL, napi_enumerable, NULL},
  };
  CHECK(env, napi_define_properties(env, exports, sizeof properties / sizeof properties[0], properties));
  return exports;
}
