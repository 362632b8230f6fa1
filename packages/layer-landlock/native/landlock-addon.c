/*
 * strata_landlock.node — what the worker asks of Landlock in-process, as a plain-C Node-API addon.
 *
 *   abi()            the kernel's Landlock ABI (landlock_create_ruleset(NULL, 0, VERSION)).
 *                    Throws when Landlock is missing or disabled.
 *   errata()         the kernel's errata bitmask (landlock_create_ruleset(NULL, 0, ERRATA)), or
 *                    -errno when it cannot say (-EINVAL before Linux 6.15).
 *   stackDenyAll()   stacks a domain that denies every filesystem right on every thread:
 *                      1. PR_SET_NO_NEW_PRIVS 1 (the helper already set it in the worker; a plain
 *                         process, such as the probe's test-fire child, needs it here)
 *                      2. ask the ABI; a ruleset handling every filesystem right it knows, with
 *                         no rule at all: nothing is granted
 *                      3. landlock_restrict_self(ruleset, LANDLOCK_RESTRICT_SELF_TSYNC): every
 *                         thread of the process, the ones Node started before any JavaScript
 *                         included, gets the new domain, all or none (ABI 8, Linux 7.0)
 *                    Returns the handled filesystem rights (a bitmask, as a Number). On a kernel
 *                    before ABI 8 the flag is unknown and the kernel refuses it (EINVAL) before
 *                    changing anything: this throws, naming ABI 8, and nothing is stacked.
 *   stackDenyAllThisThread()
 *                    FOR TESTS ONLY, never called by the layer: the same domain, restricting the
 *                    calling thread only (flags 0), which any ABI accepts. It lets an ABI < 8
 *                    kernel simulate, on the main thread, what the real stack takes away from the
 *                    worker (test/fixtures/simulated-stack-layer.ts). Returns the handled rights.
 *
 * Why in-process and not in the pre-exec helper: the deny-all domain must come after the worker
 * has loaded every file it will ever need (its modules, addons); only thread sync lets a
 * multi-threaded process restrict all of its threads at once.
 *
 * Linux only. Every failure throws one line, `strata-landlock: <step>: <reason>`, with code
 * ERR_STRATA_LANDLOCK.
 */
#define _GNU_SOURCE
#define NAPI_VERSION 8
#include <errno.h>
#include <node_api.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "strata-napi.h"

#include "landlock-uapi.h"

/* Throws `strata-landlock: <step>: <strerror> (errno N)<hint>`. */
static void throw_errno(napi_env env, const char *step, int error, const char *hint) {
  char message[320];
  snprintf(message, sizeof message, "strata-landlock: %s: %s (errno %d)%s", step, strerror(error), error, hint ? hint : "");
  napi_throw_error(env, "ERR_STRATA_LANDLOCK", message);
}

/* The ABI, or throws and returns -1. */
static int ask_abi(napi_env env) {
  long abi = syscall(SYS_landlock_create_ruleset, NULL, 0, LL_CREATE_RULESET_VERSION);
  if (abi >= 1) return (int)abi;
  int error = abi < 0 ? errno : EINVAL;
  const char *hint = error == EOPNOTSUPP ? ": Landlock is disabled on this system (boot with lsm=...,landlock)"
                     : error == ENOSYS   ? ": this kernel has no Landlock"
                                         : NULL;
  throw_errno(env, "landlock_create_ruleset(VERSION)", error, hint);
  return -1;
}

static napi_value abi(napi_env env, napi_callback_info info) {
  (void)info;
  int result = ask_abi(env);
  return result < 0 ? NULL : strata_number(env, result);
}

static napi_value errata(napi_env env, napi_callback_info info) {
  (void)info;
  long result = syscall(SYS_landlock_create_ruleset, NULL, 0, LL_CREATE_RULESET_ERRATA);
  return strata_number(env, result < 0 ? -(double)errno : (double)result);
}

/* ---- stackDenyAll -------------------------------------------------------------------------- */

/* Step 1. */
static bool set_no_new_privs(napi_env env) {
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0) return true;
  throw_errno(env, "PR_SET_NO_NEW_PRIVS", errno, NULL);
  return false;
}

/* Step 2: only handled_access_fs, so the attribute's size is ABI 1's and any ABI accepts it. */
static int create_deny_all_fs(napi_env env, uint64_t handled) {
  struct ruleset_attr attr = {.handled_access_fs = handled};
  long fd = syscall(SYS_landlock_create_ruleset, &attr, sizeof attr.handled_access_fs, 0);
  if (fd >= 0) return (int)fd;
  throw_errno(env, "landlock_create_ruleset", errno, NULL);
  return -1;
}

/* Step 3. */
static bool restrict_every_thread(napi_env env, int ruleset, int abi) {
  if (syscall(SYS_landlock_restrict_self, ruleset, LL_RESTRICT_SELF_TSYNC) == 0) return true;
  int error = errno;
  char hint[160] = "; nothing was stacked";
  if (error == EINVAL && abi < LL_TSYNC_MIN_ABI) {
    snprintf(hint, sizeof hint, ": thread sync needs Landlock ABI %d (Linux 7.0), this kernel has ABI %d; nothing was stacked",
             LL_TSYNC_MIN_ABI, abi);
  }
  throw_errno(env, "landlock_restrict_self(LANDLOCK_RESTRICT_SELF_TSYNC)", error, hint);
  return false;
}

/* Step 3, for tests only: the calling thread alone (no flag), as any ABI allows. */
static bool restrict_this_thread(napi_env env, int ruleset, int abi) {
  (void)abi;
  if (syscall(SYS_landlock_restrict_self, ruleset, 0) == 0) return true;
  throw_errno(env, "landlock_restrict_self", errno, "; nothing was stacked");
  return false;
}

/* Steps 1 to 3, with `restrict_step` as step 3. */
static napi_value stack(napi_env env, bool (*restrict_step)(napi_env, int, int)) {
  if (!set_no_new_privs(env)) return NULL;
  int running = ask_abi(env);
  if (running < 0) return NULL;
  uint64_t handled = ll_handled_fs(running);
  int ruleset = create_deny_all_fs(env, handled);
  if (ruleset < 0) return NULL;
  bool stacked = restrict_step(env, ruleset, running);
  close(ruleset);
  return stacked ? strata_number(env, (double)handled) : NULL;
}

static napi_value stack_deny_all(napi_env env, napi_callback_info info) {
  (void)info;
  return stack(env, restrict_every_thread);
}

static napi_value stack_deny_all_this_thread(napi_env env, napi_callback_info info) {
  (void)info;
  return stack(env, restrict_this_thread);
}

NAPI_MODULE_INIT() {
  napi_property_descriptor properties[] = {
      {"abi", NULL, abi, NULL, NULL, NULL, napi_enumerable, NULL},
      {"errata", NULL, errata, NULL, NULL, NULL, napi_enumerable, NULL},
      {"stackDenyAll", NULL, stack_deny_all, NULL, NULL, NULL, napi_enumerable, NULL},
      {"stackDenyAllThisThread", NULL, stack_deny_all_this_thread, NULL, NULL, NULL, napi_enumerable, NULL},
  };
  CHECK(env, napi_define_properties(env, exports, sizeof properties / sizeof properties[0], properties));
  return exports;
}
