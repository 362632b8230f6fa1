/*
 * strata-simulate-platform — for tests only: runs a program on a "platform" that lacks a kernel
 * feature Strata's layers depend on, so that `sandbox: 'auto'` must degrade with a warning and
 * `sandbox: 'require'` must refuse, on any machine (docs/design.md §8, simulated platforms).
 *
 *   strata-simulate-platform [--no-seccomp] [--no-landlock] [--no-userns] -- /abs/program [arg...]
 *
 *   --no-seccomp   seccomp(2) and prctl(PR_SET_SECCOMP) answer ENOSYS / EINVAL (a kernel built without it)
 *   --no-landlock  landlock_create_ruleset/add_rule/restrict_self answer ENOSYS (Landlock not enabled)
 *   --no-userns    unshare/clone with CLONE_NEWUSER answer EPERM (user namespaces forbidden)
 *
 * Steps: parse the arguments; PR_SET_NO_NEW_PRIVS; install one seccomp filter doing the above on
 * the native architecture; execv the program. The filter is inherited by every process the
 * program starts. Exit statuses: 120 usage, 124 seccomp, 126 exec; one line on stderr each.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#if defined(__x86_64__)
#define NATIVE_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define NATIVE_ARCH AUDIT_ARCH_AARCH64
#else
#error "strata-simulate-platform is written for x86_64 and aarch64"
#endif

#ifndef __NR_landlock_create_ruleset
#define __NR_landlock_create_ruleset 444
#define __NR_landlock_add_rule 445
#define __NR_landlock_restrict_self 446
#endif

struct options {
  bool no_seccomp, no_landlock, no_userns;
  char **program;
};

static void die(int status, const char *step, const char *reason) {
  fprintf(stderr, "strata-simulate-platform: %s: %s\n", step, reason);
  exit(status);
}

static void parse_args(int argc, char **argv, struct options *opt) {
  *opt = (struct options){0};
  int i = 1;
  for (; i < argc && strcmp(argv[i], "--") != 0; i++) {
    if (strcmp(argv[i], "--no-seccomp") == 0) opt->no_seccomp = true;
    else if (strcmp(argv[i], "--no-landlock") == 0) opt->no_landlock = true;
    else if (strcmp(argv[i], "--no-userns") == 0) opt->no_userns = true;
    else die(120, "usage", "unknown option; usage: [--no-seccomp] [--no-landlock] [--no-userns] -- /abs/program [arg...]");
  }
  if (i + 1 >= argc || argv[i + 1][0] != '/') die(120, "usage", "expected '--' and an absolute program path");
  opt->program = &argv[i + 1];
}

#define LOAD_NR BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr))
#define RET_ERRNO(e) BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (e))
#define ALLOW BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)

static void install_filter(const struct options *opt) {
  struct sock_filter program[64];
  size_t n = 0;
  program[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch));
  program[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, NATIVE_ARCH, 1, 0);
  program[n++] = (struct sock_filter)ALLOW; /* foreign ABI: not ours to simulate */
  program[n++] = (struct sock_filter)LOAD_NR;
  if (opt->no_seccomp) {
    program[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_seccomp, 0, 1);
    program[n++] = (struct sock_filter)RET_ERRNO(ENOSYS);
    /* prctl(PR_SET_SECCOMP, ...): EINVAL, as a kernel without CONFIG_SECCOMP answers */
    program[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_prctl, 0, 4);
    program[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0]));
    program[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, PR_SET_SECCOMP, 0, 1);
    program[n++] = (struct sock_filter)RET_ERRNO(EINVAL);
    program[n++] = (struct sock_filter)LOAD_NR;
  }
  if (opt->no_landlock) {
    program[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, __NR_landlock_create_ruleset, 0, 2);
    program[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JGT | BPF_K, __NR_landlock_restrict_self, 1, 0);
    program[n++] = (struct sock_filter)RET_ERRNO(ENOSYS);
  }
  if (opt->no_userns) {
    /* unshare(flags) and clone(flags, ...): flags is args[0] on both architectures */
    program[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_unshare, 1, 0);
    program[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_clone, 0, 4);
    program[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0]));
    program[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, CLONE_NEWUSER, 0, 1);
    program[n++] = (struct sock_filter)RET_ERRNO(EPERM);
    program[n++] = (struct sock_filter)LOAD_NR;
  }
  program[n++] = (struct sock_filter)ALLOW;
  struct sock_fprog prog = {.len = (unsigned short)n, .filter = program};
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) die(124, "PR_SET_NO_NEW_PRIVS", strerror(errno));
  if (syscall(__NR_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) != 0) die(124, "seccomp", strerror(errno));
}

int main(int argc, char **argv) {
  struct options opt;
  parse_args(argc, argv, &opt);
  install_filter(&opt);
  execv(opt.program[0], opt.program);
  die(126, "exec", strerror(errno));
}
