/*
 * strata-landlock — confines a program and everything it starts to a Landlock domain that allows
 * reading and executing beneath the given paths and nothing else, then execv()s it.
 *
 *   strata-landlock [--read DIR]... [--read-file FILE]... -- /abs/program [arg...]
 *   strata-landlock --print-abi        prints `ABI ERRATA`: the kernel's Landlock ABI, then its errata
 *                                      bitmask, or `unknown:ERRNO` when the kernel cannot say (EINVAL
 *                                      before Linux 6.15)
 *
 * A link of Strata's launch chain (docs/design.md §3). Landlock before ABI 8 restricts only the calling
 * thread, and Node is multi-threaded before any JavaScript runs, so the domain is made here, in a
 * plain C program that never starts a thread, and execve() hands it to Node: every thread Node
 * starts inherits it. Steps, one function each:
 *
 *   1. parse the arguments (strictly: anything unknown is a usage error)
 *   2. ask the kernel for its Landlock ABI (landlock_create_ruleset(NULL, 0, VERSION))
 *   3. a ruleset that handles every right of that ABI: all filesystem rights (REFER from ABI 2,
 *      TRUNCATE from 3, IOCTL_DEV from 5, RESOLVE_UNIX from 9), TCP bind and connect (ABI 4), and
 *      the scopes ABSTRACT_UNIX_SOCKET and SIGNAL (ABI 6). Nothing handled is granted unless a
 *      rule says so.
 *   4. one rule per path: READ_FILE | READ_DIR | EXECUTE beneath each --read directory,
 *      READ_FILE | EXECUTE on each --read-file. No write right is granted anywhere; no port at all.
 *   5. PR_SET_NO_NEW_PRIVS      (landlock_restrict_self needs it without CAP_SYS_ADMIN)
 *   6. landlock_restrict_self   (this process is single-threaded: the domain covers all of it)
 *   7. execv() the program, with the environment unchanged
 *
 * The ABI >= 8 deny-all domain is not made here: the worker stacks it itself, in-process, once
 * every layer has applied (native/landlock-addon.c, the layer's seal).
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

#include "landlock-uapi.h"

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

/*
 * --print-abi's second word: the errata bitmask (bit N-1 set: erratum N is fixed in this kernel),
 * or `unknown:ERRNO` (EINVAL: a kernel before Linux 6.15, which cannot say). Never fatal.
 */
static void print_abi(int abi) {
  long errata = syscall(SYS_landlock_create_ruleset, NULL, 0, LL_CREATE_RULESET_ERRATA);
  if (errata < 0) printf("%d unknown:%d\n", abi, errno);
  else printf("%d %ld\n", abi, errata);
  exit(fflush(stdout) == 0 ? 0 : EXIT_USAGE);
}

/* Step 3. */
static int create_ruleset(int abi) {
  struct ruleset_attr attr = {.handled_access_fs = ll_handled_fs(abi)};
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

/* Step 4: the options were checked in step 1 (each is a path option followed by its path). */
static void add_rules(int ruleset, char **argv) {
  for (int i = 1; strcmp(argv[i], "--") != 0; i++) {
    allow_path(ruleset, argv[i + 1], strcmp(argv[i], "--read") == 0);
    i++;
  }
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
  if (opt.print_abi) print_abi(abi);
  int ruleset = create_ruleset(abi);
  add_rules(ruleset, argv);
  restrict_self(ruleset);
  exec_program(opt.program);
  return EXIT_EXEC;
}
