/*
 * The Landlock uapi values used by the helper (landlock.c) and the addon (landlock-addon.c), and
 * the filesystem rights each ABI handles. Defined here rather than taken from <linux/landlock.h>:
 * a build machine's kernel headers may predate them, and the uapi values never change.
 *
 * Sources: include/uapi/linux/landlock.h and Documentation/userspace-api/landlock.rst (Linux 7.1).
 */
#ifndef STRATA_LANDLOCK_UAPI_H
#define STRATA_LANDLOCK_UAPI_H

#include <stdint.h>
#include <sys/syscall.h>

/* landlock_create_ruleset(NULL, 0, flag) queries. */
#define LL_CREATE_RULESET_VERSION (1U << 0)
#define LL_CREATE_RULESET_ERRATA (1U << 1) /* Linux 6.15; EINVAL before */

/* landlock_restrict_self() flags. */
#define LL_RESTRICT_SELF_TSYNC (1U << 3) /* ABI 8 (Linux 7.0): every thread of the process */
#define LL_TSYNC_MIN_ABI 8

#define LL_RULE_PATH_BENEATH 1

#define LL_FS_EXECUTE (1ULL << 0)
#define LL_FS_WRITE_FILE (1ULL << 1)
#define LL_FS_READ_FILE (1ULL << 2)
#define LL_FS_READ_DIR (1ULL << 3)
#define LL_FS_REMOVE_DIR (1ULL << 4)
#define LL_FS_REMOVE_FILE (1ULL << 5)
#define LL_FS_MAKE_CHAR (1ULL << 6)
#define LL_FS_MAKE_DIR (1ULL << 7)
#define LL_FS_MAKE_REG (1ULL << 8)
#define LL_FS_MAKE_SOCK (1ULL << 9)
#define LL_FS_MAKE_FIFO (1ULL << 10)
#define LL_FS_MAKE_BLOCK (1ULL << 11)
#define LL_FS_MAKE_SYM (1ULL << 12)
#define LL_FS_REFER (1ULL << 13)        /* ABI 2 */
#define LL_FS_TRUNCATE (1ULL << 14)     /* ABI 3 */
#define LL_FS_IOCTL_DEV (1ULL << 15)    /* ABI 5 */
#define LL_FS_RESOLVE_UNIX (1ULL << 16) /* ABI 9: connecting to pathname unix sockets */
#define LL_FS_ABI1 ((1ULL << 13) - 1)

#define LL_NET_BIND_TCP (1ULL << 0)    /* ABI 4 */
#define LL_NET_CONNECT_TCP (1ULL << 1) /* ABI 4 */

#define LL_SCOPE_ABSTRACT_UNIX_SOCKET (1ULL << 0) /* ABI 6 */
#define LL_SCOPE_SIGNAL (1ULL << 1)               /* ABI 6 */

#ifndef SYS_landlock_create_ruleset
#define SYS_landlock_create_ruleset 444 /* the same numbers on x86_64 and aarch64 */
#define SYS_landlock_add_rule 445
#define SYS_landlock_restrict_self 446
#endif

/* struct landlock_ruleset_attr as of ABI 6; the size passed to the kernel is the ABI's. */
struct ruleset_attr {
  uint64_t handled_access_fs;
  uint64_t handled_access_net; /* ABI 4 */
  uint64_t scoped;             /* ABI 6 */
};

struct path_beneath_attr {
  uint64_t allowed_access;
  int32_t parent_fd;
} __attribute__((packed));

/* Every filesystem right `abi` knows (ABI 7 and 8 added none; newer ABIs' rights are unknown here). */
static inline uint64_t ll_handled_fs(int abi) {
  uint64_t rights = LL_FS_ABI1;
  if (abi >= 2) rights |= LL_FS_REFER;
  if (abi >= 3) rights |= LL_FS_TRUNCATE;
  if (abi >= 5) rights |= LL_FS_IOCTL_DEV;
  if (abi >= 9) rights |= LL_FS_RESOLVE_UNIX;
  return rights;
}

#endif
