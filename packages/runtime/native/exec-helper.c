/*
 * strata-exec — base hardening for Strata's worker process, then execve() of the worker.
 *
 *   strata-exec [--cpu-seconds N] [--nofile N] [--keep-fds N] [--drop-privileges] -- /abs/path/to/program [arg...]
 *
 * The first link of the launch chain (docs/design.md §3). A Node process is multi-threaded before any
 * JavaScript runs, so these steps happen here, in a plain C program that never starts a thread:
 * every step covers the whole process, and execve() hands the result to the program.
 * Steps, in order, one function each:
 *
 *   1. parse the arguments (strictly: anything unknown is a usage error)
 *   2. every signal's disposition the default, none blocked: an ignored signal stays ignored
 *                             across exec, whoever started this (glibc's posix_spawn leaves
 *                             its own two internal signals ignored; Node ignores SIGPIPE)
 *   3. RLIMIT_CORE 0          no core file can leak the guest's memory
 *   4. RLIMIT_CPU N           SIGXCPU at N seconds of CPU; the hard limit stays, so the worker
 *                             can move its soft limit per command (its parent checks CPU too)
 *   5. RLIMIT_NOFILE N
 *   6. close every fd but 0 .. N-1 (the channel; --keep-fds, default 3: stdio only)
 *   7. drop root: no groups, gid and uid 65534 (only with --drop-privileges, only when root)
 *   8. PR_SET_NO_NEW_PRIVS    nothing executed from here on can gain privileges
 *   9. PR_SET_PDEATHSIG       SIGKILL when the parent dies; exit if it already has
 *   10. execve() with an environment of exactly TZ=UTC, LANG=C, LC_ALL=C
 *
 * Exit statuses (once execve() succeeds, the status is the program's own):
 *
 *   120  usage       the arguments are wrong
 *   121  rlimit      setrlimit() refused a limit
 *   122  fds         inherited file descriptors could not be closed
 *   123  privileges  root could not be dropped, or could be regained
 *   124  prctl       PR_SET_NO_NEW_PRIVS or PR_SET_PDEATHSIG failed
 *   125  parent      the parent exited before the death signal was armed
 *   126  exec        execve() failed
 *   127  signals     a signal's disposition or the signal mask could not be reset
 *
 * Every failure prints one line, `strata-exec: <step>: <reason> — <what to do>`, to stderr.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef SYS_close_range
#define SYS_close_range 436 /* Linux 5.9; the same number on x86-64 and arm64 (kernel headers too old to say) */
#endif

enum exit_status {
  EXIT_USAGE = 120,
  EXIT_RLIMIT = 121,
  EXIT_FDS = 122,
  EXIT_PRIVILEGES = 123,
  EXIT_PRCTL = 124,
  EXIT_PARENT_GONE = 125,
  EXIT_EXEC = 126,
  EXIT_SIGNALS = 127,
};

#define USAGE "strata-exec [--cpu-seconds N] [--nofile N] [--keep-fds N] [--drop-privileges] -- /abs/path/to/program [arg...]"

/* The user and group every privileged start drops to: nobody / nogroup. */
#define NOBODY 65534

/* Upper bound for N in --cpu-seconds and --nofile; keeps N + 1 and rlim_t arithmetic trivial. */
#define MAX_COUNT 0x7fffffffUL

struct options {
  unsigned long cpu_seconds; /* 0: not given */
  unsigned long nofile;      /* 0: not given */
  unsigned long keep_fds;    /* fds 0 .. keep_fds-1 survive; 0: not given (3) */
  bool drop_privileges;
  char **program; /* argv of the program: program[0] is its absolute path; NULL-terminated */
};

static void die(enum exit_status status, const char *step, const char *reason, const char *fix) {
  fprintf(stderr, "strata-exec: %s: %s — %s\n", step, reason, fix);
  exit(status);
}

static void die_usage(const char *problem, const char *arg) {
  fprintf(stderr, "strata-exec: usage: %s%s%s%s — usage: %s\n", problem, arg ? " '" : "", arg ? arg : "",
          arg ? "'" : "", USAGE);
  exit(EXIT_USAGE);
}

/* A positive decimal count: digits only (no sign, no spaces, no hex), at most MAX_COUNT. */
static unsigned long parse_count(const char *option, const char *text) {
  if (text == NULL) die_usage("missing value after", option);
  if (text[0] < '0' || text[0] > '9') die_usage("expected a positive integer, got", text);
  char *end;
  errno = 0;
  unsigned long value = strtoul(text, &end, 10);
  if (errno != 0 || *end != '\0' || value == 0 || value > MAX_COUNT)
    die_usage("expected a positive integer up to 2147483647, got", text);
  return value;
}

static void parse_args(int argc, char **argv, struct options *opt) {
  *opt = (struct options){0};
  int i = 1;
  for (; i < argc && strcmp(argv[i], "--") != 0; i++) {
    const char *arg = argv[i];
    /* argv[argc] is NULL, so argv[++i] past the end reads as a missing value. */
    if (strcmp(arg, "--cpu-seconds") == 0) {
      if (opt->cpu_seconds != 0) die_usage("option given twice:", arg);
      opt->cpu_seconds = parse_count(arg, argv[++i]);
    } else if (strcmp(arg, "--nofile") == 0) {
      if (opt->nofile != 0) die_usage("option given twice:", arg);
      opt->nofile = parse_count(arg, argv[++i]);
    } else if (strcmp(arg, "--keep-fds") == 0) {
      if (opt->keep_fds != 0) die_usage("option given twice:", arg);
      opt->keep_fds = parse_count(arg, argv[++i]);
      if (opt->keep_fds < 3 || opt->keep_fds > 64) die_usage("--keep-fds must be between 3 and 64, got", argv[i]);
    } else if (strcmp(arg, "--drop-privileges") == 0) {
      if (opt->drop_privileges) die_usage("option given twice:", arg);
      opt->drop_privileges = true;
    } else {
      die_usage("unknown option", arg);
    }
  }
  if (i >= argc) die_usage("missing '--' before the program", NULL);
  if (i + 1 >= argc) die_usage("missing the program after '--'", NULL);
  /* execve() does not search PATH; an absolute path says exactly which binary runs. */
  if (argv[i + 1][0] != '/') die_usage("the program must be an absolute path, got", argv[i + 1]);
  opt->program = &argv[i + 1];
}

static void set_limit(int resource, rlim_t soft, rlim_t hard, const char *step) {
  struct rlimit limit = {.rlim_cur = soft, .rlim_max = hard};
  if (setrlimit(resource, &limit) != 0)
    die(EXIT_RLIMIT, step, strerror(errno),
        "raising a hard limit needs root, and RLIMIT_NOFILE cannot exceed /proc/sys/fs/nr_open; pass a smaller value");
}

static void disable_core_dumps(void) {
  set_limit(RLIMIT_CORE, 0, 0, "RLIMIT_CORE");
}

static void limit_cpu(unsigned long seconds) {
  if (seconds == 0) return;
  /* The soft limit sends SIGXCPU. The hard limit is left as it is, so that a long-lived worker
     can move its soft limit to "now + N" at each command: a lifetime cap would kill a runtime
     after enough short commands. A compromised worker could lift it, but its parent measures
     the worker's CPU time per command from /proc and kills it past the same cap. */
  struct rlimit current;
  if (getrlimit(RLIMIT_CPU, &current) != 0) die(EXIT_RLIMIT, "RLIMIT_CPU", strerror(errno), "this should not happen; report it");
  rlim_t hard = current.rlim_max;
  set_limit(RLIMIT_CPU, hard != RLIM_INFINITY && hard < seconds ? hard : seconds, hard, "RLIMIT_CPU");
}

static void limit_open_files(unsigned long count) {
  if (count == 0) return;
  set_limit(RLIMIT_NOFILE, count, count, "RLIMIT_NOFILE");
}

struct linux_dirent64 {
  uint64_t d_ino;
  int64_t d_off;
  unsigned short d_reclen;
  unsigned char d_type;
  char d_name[];
};

/* For kernels before 5.9 (no close_range) or a seccomp policy that denies it: walk /proc/self/fd
   with getdents64 into a stack buffer (opendir() would allocate). */
static void close_fds_listed_in_proc(unsigned int lowest) {
  int dir = open("/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0)
    die(EXIT_FDS, "close fds", strerror(errno), "mount /proc, or run on Linux 5.9 or newer (close_range)");
  _Alignas(struct linux_dirent64) char buffer[4096];
  for (;;) {
    long size = syscall(SYS_getdents64, dir, buffer, sizeof buffer);
    if (size < 0) die(EXIT_FDS, "close fds", strerror(errno), "check that /proc/self/fd is readable");
    if (size == 0) break;
    for (long offset = 0; offset < size;) {
      const struct linux_dirent64 *entry = (const struct linux_dirent64 *)(buffer + offset);
      offset += entry->d_reclen;
      char *end;
      long fd = strtol(entry->d_name, &end, 10);
      if (*end != '\0' || end == entry->d_name || fd < (long)lowest || fd == dir) continue; /* ".", "..", kept */
      close((int)fd);
    }
  }
  close(dir);
}

static void close_inherited_fds(unsigned long keep) {
  unsigned int lowest = keep == 0 ? 3U : (unsigned int)keep;
  if (syscall(SYS_close_range, lowest, ~0U, 0U) == 0) return;
  close_fds_listed_in_proc(lowest);
}

static void drop_privileges(bool requested) {
  if (!requested) return;
  uid_t real, effective, saved;
  if (getresuid(&real, &effective, &saved) != 0)
    die(EXIT_PRIVILEGES, "getresuid", strerror(errno), "this should not happen; report it");
  if (effective != 0) {
    /* Already unprivileged: with no root id among real, effective and saved, the process can
       only switch between ids it already has, and PR_SET_NO_NEW_PRIVS (next step) stops
       set-user-ID binaries from granting more. There is nothing to drop. */
    if (real == 0 || saved == 0)
      die(EXIT_PRIVILEGES, "drop privileges", "the real or saved user id is root but the effective one is not",
          "start strata-exec either as root or as an unprivileged user");
    return;
  }
  if (setgroups(0, NULL) != 0)
    die(EXIT_PRIVILEGES, "setgroups", strerror(errno), "run as real root (CAP_SETGID), or without --drop-privileges");
  if (setresgid(NOBODY, NOBODY, NOBODY) != 0)
    die(EXIT_PRIVILEGES, "setresgid", strerror(errno), "run as real root (CAP_SETGID), or without --drop-privileges");
  if (setresuid(NOBODY, NOBODY, NOBODY) != 0)
    die(EXIT_PRIVILEGES, "setresuid", strerror(errno), "run as real root (CAP_SETUID), or without --drop-privileges");
  /* Check the promise: with securebits such as SECBIT_NO_SETUID_FIXUP the capabilities survive
     setresuid(), and root would be one call away. */
  if (setuid(0) == 0 || setgid(0) == 0)
    die(EXIT_PRIVILEGES, "drop privileges", "root can be regained after dropping to 65534",
        "clear the securebits (SECBIT_NO_SETUID_FIXUP, SECBIT_KEEP_CAPS) of the process that starts strata-exec");
}

static void set_no_new_privs(void) {
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
    die(EXIT_PRCTL, "PR_SET_NO_NEW_PRIVS", strerror(errno), "run on Linux 3.5 or newer");
}

/* After the credential change: changing credentials clears the death signal. The signal comes
   when the parent *thread* exits, so the parent must spawn from a thread that lives as long as
   the worker should (Node's main thread does). */
static void die_with_parent(pid_t parent) {
  if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0)
    die(EXIT_PRCTL, "PR_SET_PDEATHSIG", strerror(errno), "this should not happen on Linux; report it");
  /* The parent may have exited before the signal was armed; then nobody would ever kill us. */
  if (getppid() != parent)
    die(EXIT_PARENT_GONE, "parent", "the process that started strata-exec has exited",
        "nothing to do: its supervisor is gone, so the program is not started");
}

/* The kernel's calls, not the C library's: glibc refuses to touch its own internal signals (32
   and 33), which its posix_spawn leaves ignored in the child. An all-zero kernel sigaction is
   SIG_DFL, no flags, an empty mask, whatever the architecture's layout. */
static void reset_signals(void) {
  unsigned char default_action[64] = {0};
  uint64_t no_signals = 0;
  for (int signal_number = 1; signal_number <= 64; signal_number++) {
    if (signal_number == SIGKILL || signal_number == SIGSTOP) continue;
    if (syscall(SYS_rt_sigaction, signal_number, default_action, NULL, sizeof no_signals) != 0)
      die(EXIT_SIGNALS, "signals", strerror(errno), "this should not happen on Linux; report it");
  }
  if (syscall(SYS_rt_sigprocmask, SIG_SETMASK, &no_signals, NULL, sizeof no_signals) != 0)
    die(EXIT_SIGNALS, "signal mask", strerror(errno), "this should not happen on Linux; report it");
}

static void exec_program(char **program) {
  /* A fresh environment, never the inherited one: no secrets, no NODE_OPTIONS, no LD_PRELOAD. */
  static char *const environment[] = {"TZ=UTC", "LANG=C", "LC_ALL=C", NULL};
  execve(program[0], program, environment);
  int error = errno;
  fprintf(stderr, "strata-exec: exec %s: %s — pass the absolute path of an executable file after '--'\n", program[0],
          strerror(error));
  exit(EXIT_EXEC);
}

int main(int argc, char **argv) {
  /* Captured first, so the check in die_with_parent() covers everything that happens here. */
  pid_t parent = getppid();
  struct options opt;
  parse_args(argc, argv, &opt);
  reset_signals();
  disable_core_dumps();
  limit_cpu(opt.cpu_seconds);
  limit_open_files(opt.nofile);
  close_inherited_fds(opt.keep_fds);
  drop_privileges(opt.drop_privileges);
  set_no_new_privs();
  die_with_parent(parent);
  exec_program(opt.program);
}
