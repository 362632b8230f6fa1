/*
 * strata-landlock — confines a program and everything it starts to a Landlock domain that allows
 * reading and executing beneath the given paths and nothing else, then execv()s it.
 *
 *   strata-landlock [--read DIR]... [--read-file FILE]... -- /abs/path/to/program [arg...]
 *   strata-landlock --print-abi
 *
 * A link of Strata's launch chain (DESIGN.md §3). Landlock before ABI 8 restricts only the calling
 * thread, and Node is multi-threaded before any JavaScript runs, so the domain is made here, in a
 * plain C program that never starts a thread, and execve() hands it to Node: every thread Node
 * starts inherits it. Steps, one function each:
 *
 *   1. parse the arguments (strictly: anything unknown is a usage error)
 *   2. ask the kernel for its Landlock ABI (landlock_create_ruleset(NULL, 0, VERSION))
 *   3. a ruleset that handles every right of that ABI: all filesystem rights (REFER from ABI 2,
 *      TRUNCATE from 3, IOCTL_DEV from 5), TCP bind and connect (ABI 4), and the scopes
 *      ABSTRACT_UNIX_SOCKET and SIGNAL (ABI 6). Nothing handled is granted unless a rule says so.
 *   4. one rule per path: READ_FILE | READ_DIR | EXECUTE beneath each --read directory,
 *      READ_FILE | EXECUTE on each --read-file. No write right is granted anywhere; no port at all.
 *   5. PR_SET_NO_NEW_PRIVS      (landlock_restrict_self needs it without CAP_SYS_ADMIN)
 *   6. landlock_restrict_self   (this process is single-threaded: the domain covers all of it)
 *   7. execv() the program, with the environment as it is
 *
 * Exit statuses (once execv() succeeds, the status is the program's own):
 *
 *   120  usage      the arguments are wrong
 *   121  abi        Landlock is not available (not built in, disabled at boot, or ABI < 1)
 *   122  ruleset    landlock_create_ruleset failed
 *   123  rule       a path could not be opened or its rule added (the message names the path)
 *   124  restrict   PR_SET_NO_NEW_PRIVS or landlock_restrict_self failed
 *   126  exec       execv() failed
 *
 * Every failure prints one line, `strata-landlock: <step>: <reason>`, to stderr. Linux only.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/* The kernel headers on a build machine may predate the rights used here: the uapi values are stable. */
#define LL_CREATE_RULESET_VERSION (1U << 0)
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
#define LL_FS_REFER (1ULL << 13)    /* ABI 2 */
#define LL_FS_TRUNCATE (1ULL << 14) /* ABI 3 */
#define LL_FS_IOCTL_DEV (1ULL << 15) /* ABI 5 */
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

#define READ_DIR_RIGHTS (LL_FS_READ_FILE | LL_FS_READ_DIR | LL_FS_EXECUTE)
#define READ_FILE_RIGHTS (LL_FS_READ_FILE | LL_FS_EXECUTE)

enum exit_status { EXIT_USAGE = 120, EXIT_ABI = 121, EXIT_RULESET = 122, EXIT_RULE = 123, EXIT_RESTRICT = 124, EXIT_EXEC = 126 };

#define USAGE "strata-landlock [--read DIR]... [--read-file FILE]... -- /abs/path/to/program [arg...] | strata-landlock --print-abi"

struct options {
  int print_abi;
  char **program; /* argv of the program, NULL-terminated; NULL with --print-abi */
};

static void die(enum exit_status status, const char *step, const char *reason) {
  fprintf(stderr, "strata-landlock: %s: %s\n", step, reason);
  exit(status);
}

static void die_path(enum exit_status status, const char *step, const char *path, const char *reason) {
  fprintf(stderr, "strata-landlock: %s: '%s': %s\n", step, path, reason);
  exit(status);
}

static void die_usage(const char *problem, const char *arg) {
  fprintf(stderr, "strata-landlock: usage: %s%s%s%s — usage: %s\n", problem, arg ? " '" : "", arg ? arg : "", arg ? "'" : "", USAGE);
  exit(EXIT_USAGE);
}

static int is_path_option(const char *arg) {
  return strcmp(arg, "--read") == 0 || strcmp(arg, "--read-file") == 0;
}

/* Step 1: checks every option (the rules are added in step 4, from the same argv). */
static void parse_args(int argc, char **argv, struct options *opt) {
  *opt = (struct options){0};
  if (argc == 2 && strcmp(argv[1], "--print-abi") == 0) {
    opt->print_abi = 1;
    return;
  }
  int i = 1;
  for (; i < argc && strcmp(argv[i], "--") != 0; i++) {
    if (!is_path_option(argv[i])) die_usage("unknown option", argv[i]);
    const char *path = argv[++i]; /* argv[argc] is NULL */
    if (path == NULL) die_usage("missing path after", argv[i - 1]);
    if (path[0] != '/') die_usage("paths must be absolute, got", path);
  }
  if (i >= argc) die_usage("missing '--' before the program", NULL);
  if (i + 1 >= argc) die_usage("missing the program after '--'", NULL);
  if (argv[i + 1][0] != '/') die_usage("the program must be an absolute path, got", argv[i + 1]);
  opt->program = &argv[i + 1];
}

/* Step 2. */
static int landlock_abi(void) {
  long abi = syscall(SYS_landlock_create_ruleset, NULL, 0, LL_CREATE_RULESET_VERSION);
  if (abi < 0) die(EXIT_ABI, "landlock", errno == EOPNOTSUPP ? "Landlock is disabled on this system (boot with lsm=...,landlock)" : errno == ENOSYS ? "this kernel has no Landlock" : strerror(errno));
  if (abi < 1) die(EXIT_ABI, "landlock", "the kernel reports an ABI below 1");
  return (int)abi;
}

static uint64_t handled_fs(int abi) {
  uint64_t rights = LL_FS_ABI1;
  if (abi >= 2) rights |= LL_FS_REFER;
  if (abi >= 3) rights |= LL_FS_TRUNCATE;
  if (abi >= 5) rights |= LL_FS_IOCTL_DEV;
  return rights;
}

/* Step 3. */
static int create_ruleset(int abi) {
  struct ruleset_attr attr = {.handled_access_fs = handled_fs(abi)};
  size_t size = sizeof attr.handled_access_fs;
  if (abi >= 4) {
    attr.handled_access_net = LL_NET_BIND_TCP | LL_NET_CONNECT_TCP;
    size += sizeof attr.handled_access_net;
  }
  if (abi >= 6) {
    attr.scoped = LL_SCOPE_ABSTRACT_UNIX_SOCKET | LL_SCOPE_SIGNAL;
    size += sizeof attr.scoped;
  }
  long fd = syscall(SYS_landlock_create_ruleset, &attr, size, 0);
  if (fd < 0) die(EXIT_RULESET, "landlock_create_ruleset", strerror(errno));
  return (int)fd;
}

/* Step 4, one path. A directory's rule needs READ_DIR; a file's must not have it (EINVAL). */
static void allow_path(int ruleset, const char *path, int directory) {
  int fd = open(path, O_PATH | O_CLOEXEC);
  if (fd < 0) die_path(EXIT_RULE, "open", path, strerror(errno));
  struct stat st;
  if (fstat(fd, &st) != 0) die_path(EXIT_RULE, "fstat", path, strerror(errno));
  if (directory && !S_ISDIR(st.st_mode)) die_path(EXIT_RULE, "--read", path, "not a directory (use --read-file)");
  if (!directory && S_ISDIR(st.st_mode)) die_path(EXIT_RULE, "--read-file", path, "a directory (use --read)");
  struct path_beneath_attr rule = {.allowed_access = directory ? READ_DIR_RIGHTS : READ_FILE_RIGHTS, .parent_fd = fd};
  if (syscall(SYS_landlock_add_rule, ruleset, LL_RULE_PATH_BENEATH, &rule, 0) != 0) die_path(EXIT_RULE, "landlock_add_rule", path, strerror(errno));
  close(fd);
}

/* Step 4: the options were checked in step 1. */
static void add_rules(int ruleset, char **argv) {
  for (int i = 1; strcmp(argv[i], "--") != 0; i += 2) allow_path(ruleset, argv[i + 1], strcmp(argv[i], "--read") == 0);
}

/* Steps 5 and 6. */
static void restrict_self(int ruleset) {
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) die(EXIT_RESTRICT, "PR_SET_NO_NEW_PRIVS", strerror(errno));
  if (syscall(SYS_landlock_restrict_self, ruleset, 0) != 0) die(EXIT_RESTRICT, "landlock_restrict_self", strerror(errno));
  close(ruleset);
}

/* Step 7. */
static void exec_program(char **program) {
  execv(program[0], program);
  die_path(EXIT_EXEC, "execv", program[0], strerror(errno));
}

int main(int argc, char **argv) {
  struct options opt;
  parse_args(argc, argv, &opt);
  int abi = landlock_abi();
  if (opt.print_abi) {
    printf("%d\n", abi);
    return fflush(stdout) == 0 ? 0 : EXIT_USAGE;
  }
  int ruleset = create_ruleset(abi);
  add_rules(ruleset, argv);
  restrict_self(ruleset);
  exec_program(opt.program);
  return EXIT_EXEC;
}
