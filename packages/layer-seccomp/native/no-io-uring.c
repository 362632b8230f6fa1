/*
 * strata-no-io-uring — refuses io_uring_setup (ENOSYS) for a program and everything it starts,
 * then execv()s it.
 *
 *   strata-no-io-uring -- /abs/path/to/program [arg...]
 *
 * Why: libuv (Node 24 has 1.52) makes an io_uring ring for every event loop when the loop starts,
 * before any JavaScript runs, and aborts if io_uring_enter later fails. Operations submitted through
 * a ring are not system calls, so seccomp cannot see them. With io_uring_setup answered ENOSYS
 * before Node starts, libuv makes no ring (it falls back to epoll_ctl) and the seccomp layer can
 * then deny io_uring_enter and io_uring_register too. A link of the launch chain (docs/design.md §3),
 * single-threaded like the others. Steps, one function each:
 *
 *   1. parse the arguments (strictly)
 *   2. PR_SET_NO_NEW_PRIVS      (a filter needs it unprivileged; the filter survives execve)
 *   3. the filter: on the native architecture, io_uring_setup → ENOSYS; everything else allowed
 *      (the seccomp layer's own filter, applied in the worker, decides the rest)
 *   4. execv() the program, with the environment as it is
 *
 * Exit statuses (once execv() succeeds, the status is the program's own):
 *
 *   120  usage     the arguments are wrong
 *   124  seccomp   PR_SET_NO_NEW_PRIVS or the filter failed
 *   126  exec      execv() failed
 *
 * Every failure prints one line, `strata-no-io-uring: <step>: <reason>`, to stderr. Linux only.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#if defined(__x86_64__)
#define NATIVE_AUDIT_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define NATIVE_AUDIT_ARCH AUDIT_ARCH_AARCH64
#else
#error "strata-no-io-uring supports x86_64 and aarch64"
#endif

#define IO_URING_SETUP_NR 425 /* the same number on x86_64 and aarch64 (checked in the tests) */

enum exit_status { EXIT_USAGE = 120, EXIT_SECCOMP = 124, EXIT_EXEC = 126 };

static void die(int status, const char *step, const char *reason) {
  fprintf(stderr, "strata-no-io-uring: %s: %s\n", step, reason);
  exit(status);
}

/* Step 1: argv must be `-- /abs/program [arg...]`; returns the index of the program. */
static int parse_arguments(int argc, char **argv) {
  if (argc < 3 || strcmp(argv[1], "--") != 0 || argv[2][0] != '/') {
    die(EXIT_USAGE, "usage", "strata-no-io-uring -- /abs/path/to/program [arg...]");
  }
  return 2;
}

/* Step 2. */
static void set_no_new_privs(void) {
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) die(EXIT_SECCOMP, "PR_SET_NO_NEW_PRIVS", strerror(errno));
}

/* Step 3. */
static void refuse_io_uring_setup(void) {
  struct sock_filter filter[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, NATIVE_AUDIT_ARCH, 0, 3),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, IO_URING_SETUP_NR, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  struct sock_fprog program = {.len = sizeof filter / sizeof filter[0], .filter = filter};
  if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &program) != 0) die(EXIT_SECCOMP, "seccomp", strerror(errno));
}

/* Step 4. */
static void exec_program(char **argv) {
  execv(argv[0], argv);
  die(EXIT_EXEC, "execv", strerror(errno));
}

int main(int argc, char **argv) {
  int program = parse_arguments(argc, argv);
  set_no_new_privs();
  refuse_io_uring_setup();
  exec_program(argv + program);
  return EXIT_EXEC;
}
