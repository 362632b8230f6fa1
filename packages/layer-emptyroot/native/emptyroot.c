/*
 * strata-emptyroot — runs a program in new user, mount, network and IPC namespaces whose root is an
 * empty tmpfs holding read-only binds of exactly the given paths, with every capability dropped.
 *
 *   strata-emptyroot --stage DIR [--dry-run] [--no-pivot] OP... -- /abs/path/to/program [arg...]
 *
 *   OP, executed in the order given; P is an absolute path in the new root, the same as on the host:
 *     --mkdir P       an empty directory
 *     --symlink T P   a symbolic link P -> T, as the host has it
 *     --bind-dir P    the host's directory P, bound read-only (with whatever is mounted beneath it)
 *     --bind-file P   the host's file P, bound read-only
 *   The parent plans the ops (src/root-plan.ts: parents before children, nothing beneath a bind)
 *   and picks the staging directory DIR, an existing host directory that holds none of the
 *   bound paths: the new root's tmpfs is mounted there, in the new mount namespace only.
 *
 * A link of Strata's launch chain (docs/design.md §3). unshare(CLONE_NEWUSER) fails in a
 * multi-threaded process, and Node is multi-threaded before any JavaScript runs, so this happens
 * here, in a plain C program that never starts a thread. Steps, one function each:
 *
 *   1. parse the arguments (strictly: anything unknown is a usage error)
 *   2. unshare(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWIPC)
 *   3. identity maps: setgroups denied, uid U -> U, gid G -> G (the ids inside are those outside)
 *   4. every mount private: nothing done here propagates back to the host
 *   5. a small tmpfs on DIR, then the ops into it, each bind made read-only, nosuid, nodev
 *   6. the tmpfs itself read-only; pivot_root into it; the old root detached. Where / is the
 *      initramfs's rootfs (a mount with no parent), pivot_root answers EINVAL: then, as runc does,
 *      the tmpfs is moved onto / (MS_MOVE) and made the root with chroot("."). The old root's
 *      mounts then stay in this mount namespace, beneath the tmpfs and out of reach of any path;
 *      leaving a chroot takes CAP_SYS_CHROOT, dropped in step 7 (and a chrooted process can make
 *      no user namespace). --no-pivot takes that way anywhere (for the tests).
 *   7. securebits locked, bounding and ambient sets emptied, every capability dropped, checked
 *   8. execv() the program (--dry-run: check the host is gone, print "ok", exit 0)
 *
 * Exit statuses (once execv() succeeds, the status is the program's own):
 *
 *   120  usage    the arguments are wrong
 *   121  unshare  the namespaces could not be made (EINVAL: none in this kernel; EPERM: forbidden;
 *                 ENOSPC: the user.max_user_namespaces limit is reached)
 *   122  maps     the uid/gid maps could not be written (EPERM: forbidden, e.g. by AppArmor)
 *   123  root     a mount, an op or pivot_root failed (the message names the path)
 *   124  caps     a capability or securebit could not be dropped, or one is left
 *   125  check    --dry-run: the host's files are still visible
 *   126  exec     execv() failed
 *
 * Every failure prints one line, `strata-emptyroot: <step>: <ERRNO>: <reason>`, to stderr: the
 * layer's probe reads the errno name to say why the platform cannot provide the empty root.
 * Linux only.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Kernel headers on a build machine may predate these; the uapi values are stable. */
#define SB_NOROOT (1 << 0)
#define SB_NOROOT_LOCKED (1 << 1)
#define SB_NO_SETUID_FIXUP (1 << 2)
#define SB_NO_SETUID_FIXUP_LOCKED (1 << 3)
#define SB_KEEP_CAPS_LOCKED (1 << 5)
#define SB_NO_CAP_AMBIENT_RAISE (1 << 6)
#define SB_NO_CAP_AMBIENT_RAISE_LOCKED (1 << 7)

#ifndef SYS_mount_setattr
#define SYS_mount_setattr 442 /* Linux 5.12; the same number on x86_64 and aarch64 */
#endif
#define MOUNT_ATTR_RDONLY_ 0x00000001
#define MOUNT_ATTR_NOSUID_ 0x00000002
#define MOUNT_ATTR_NODEV_ 0x00000004
#define AT_RECURSIVE_ 0x8000

struct mount_attr_ {
  uint64_t attr_set, attr_clr, propagation, userns_fd;
};

enum exit_status {
  EXIT_USAGE = 120,
  EXIT_UNSHARE = 121,
  EXIT_MAPS = 122,
  EXIT_ROOT = 123,
  EXIT_CAPS = 124,
  EXIT_CHECK = 125,
  EXIT_EXEC = 126,
};

#define PATH_MAX_ 4096

/* The errno names the probe tells apart, and a few more that make a message clearer. */
static const char *errno_name(int e) {
  switch (e) {
    case EPERM: return "EPERM";
    case EINVAL: return "EINVAL";
    case ENOSPC: return "ENOSPC";
    case EUSERS: return "EUSERS";
    case ENOSYS: return "ENOSYS";
    case EACCES: return "EACCES";
    case ENOENT: return "ENOENT";
    case EEXIST: return "EEXIST";
    case ENOTDIR: return "ENOTDIR";
    case EBUSY: return "EBUSY";
    case ENOMEM: return "ENOMEM";
    case ENAMETOOLONG: return "ENAMETOOLONG";
    default: return "E?";
  }
}

static void die(int status, const char *step, int err, const char *what) {
  fprintf(stderr, "strata-emptyroot: %s: %s: %s: %s\n", step, errno_name(err), what, strerror(err));
  exit(status);
}

static void usage(const char *what) {
  fprintf(stderr, "strata-emptyroot: usage: %s; usage: --stage DIR [--dry-run] [--no-pivot] [--mkdir P | --symlink T P | --bind-dir P | --bind-file P]... -- /abs/program [arg...]\n", what);
  exit(EXIT_USAGE);
}

enum op_kind { OP_MKDIR, OP_SYMLINK, OP_BIND_DIR, OP_BIND_FILE };

struct op {
  enum op_kind kind;
  const char *path;
  const char *target; /* OP_SYMLINK only */
};

struct options {
  const char *stage;
  bool dry_run;
  bool no_pivot;
  struct op *ops;
  int op_count;
  char **program; /* argv of the program, NULL-terminated */
};

/* Absolute, no empty, "." or ".." component, not "/" itself: a path the new root can hold. */
static bool clean_path(const char *path) {
  if (path[0] != '/' || path[1] == '\0' || strlen(path) >= PATH_MAX_ / 2) return false;
  for (const char *p = path; *p != '\0';) {
    const char *component = p + 1;
    const char *end = strchr(component, '/');
    size_t length = end == NULL ? strlen(component) : (size_t)(end - component);
    if (length == 0 || (length == 1 && component[0] == '.') || (length == 2 && component[0] == '.' && component[1] == '.')) return false;
    p = component + length;
  }
  return true;
}

/* Step 1. */
static void parse_arguments(int argc, char **argv, struct options *opt) {
  opt->ops = calloc((size_t)argc, sizeof *opt->ops);
  if (opt->ops == NULL) die(EXIT_USAGE, "usage", ENOMEM, "allocating the ops");
  int i = 1;
  for (; i < argc && strcmp(argv[i], "--") != 0; i++) {
    const char *flag = argv[i];
    struct op *op = &opt->ops[opt->op_count];
    if (strcmp(flag, "--dry-run") == 0) {
      opt->dry_run = true;
      continue;
    }
    if (strcmp(flag, "--no-pivot") == 0) {
      opt->no_pivot = true;
      continue;
    }
    if (i + 1 >= argc) usage("an option lacks its value");
    if (strcmp(flag, "--stage") == 0) {
      opt->stage = argv[++i];
      if (!clean_path(opt->stage)) usage("--stage takes a clean absolute path");
      continue;
    }
    if (strcmp(flag, "--mkdir") == 0) op->kind = OP_MKDIR;
    else if (strcmp(flag, "--bind-dir") == 0) op->kind = OP_BIND_DIR;
    else if (strcmp(flag, "--bind-file") == 0) op->kind = OP_BIND_FILE;
    else if (strcmp(flag, "--symlink") == 0) {
      op->kind = OP_SYMLINK;
      op->target = argv[++i];
      if (op->target[0] == '\0' || i + 1 >= argc) usage("--symlink takes a target and a path");
    } else usage("unknown option");
    op->path = argv[++i];
    if (!clean_path(op->path)) usage("an op's path must be a clean absolute path (no '.', '..' or empty component)");
    opt->op_count++;
  }
  if (opt->stage == NULL) usage("--stage is required");
  if (i >= argc || i + 1 >= argc) usage("the program to run follows --");
  opt->program = &argv[i + 1];
  if (opt->program[0][0] != '/') usage("the program must be an absolute path");
}

static void write_file(const char *path, const char *text) {
  int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) die(EXIT_MAPS, "maps", errno, path);
  ssize_t written = write(fd, text, strlen(text));
  if (written != (ssize_t)strlen(text)) die(EXIT_MAPS, "maps", written < 0 ? errno : EIO, path);
  close(fd);
}

/* Steps 2 and 3. */
static void enter_namespaces(void) {
  uid_t uid = getuid();
  gid_t gid = getgid();
  if (unshare(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWIPC) != 0) die(EXIT_UNSHARE, "unshare", errno, "new user, mount, network and IPC namespaces");
  char map[64];
  write_file("/proc/self/setgroups", "deny");
  snprintf(map, sizeof map, "%u %u 1\n", (unsigned)uid, (unsigned)uid);
  write_file("/proc/self/uid_map", map);
  snprintf(map, sizeof map, "%u %u 1\n", (unsigned)gid, (unsigned)gid);
  write_file("/proc/self/gid_map", map);
}

/* "<stage><path>", checked to fit. */
static void in_root(char *out, const char *stage, const char *path) {
  int n = snprintf(out, PATH_MAX_, "%s%s", stage, path);
  if (n < 0 || n >= PATH_MAX_) die(EXIT_ROOT, "root", ENAMETOOLONG, path);
}

/* Read-only, nosuid, nodev on the bind at `where` and everything beneath it. */
static void make_read_only(const char *where, const char *source) {
  struct mount_attr_ attr = { .attr_set = MOUNT_ATTR_RDONLY_ | MOUNT_ATTR_NOSUID_ | MOUNT_ATTR_NODEV_ };
  if (syscall(SYS_mount_setattr, AT_FDCWD, where, AT_RECURSIVE_, &attr, sizeof attr) == 0) return;
  if (errno != ENOSYS) die(EXIT_ROOT, "root", errno, where);
  /* Before Linux 5.12: remount the bind itself, keeping the flags the kernel locks from the source. */
  struct statvfs st;
  if (statvfs(source, &st) != 0) die(EXIT_ROOT, "root", errno, source);
  unsigned long locked = (st.f_flag & ST_NOEXEC ? MS_NOEXEC : 0) | (st.f_flag & ST_NOATIME ? MS_NOATIME : 0) |
                         (st.f_flag & ST_NODIRATIME ? MS_NODIRATIME : 0) | (st.f_flag & ST_RELATIME ? MS_RELATIME : 0);
  if (mount(NULL, where, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV | locked, NULL) != 0) die(EXIT_ROOT, "root", errno, where);
}

static void run_op(const char *stage, const struct op *op) {
  char where[PATH_MAX_];
  in_root(where, stage, op->path);
  switch (op->kind) {
    case OP_MKDIR:
      if (mkdir(where, 0755) != 0) die(EXIT_ROOT, "root", errno, op->path);
      return;
    case OP_SYMLINK:
      if (symlink(op->target, where) != 0) die(EXIT_ROOT, "root", errno, op->path);
      return;
    case OP_BIND_DIR:
      if (mkdir(where, 0755) != 0) die(EXIT_ROOT, "root", errno, op->path);
      break;
    case OP_BIND_FILE: {
      int fd = open(where, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0444);
      if (fd < 0) die(EXIT_ROOT, "root", errno, op->path);
      close(fd);
      break;
    }
  }
  /* The source is the host's path: the tmpfs on the stage covers nothing that is bound. */
  if (mount(op->path, where, NULL, MS_BIND | MS_REC, NULL) != 0) die(EXIT_ROOT, "root", errno, op->path);
  make_read_only(where, op->path);
}

/* Whether "/" is on this mount namespace's root mount, the one with no parent: the initramfs's
 * rootfs, which pivot_root(2) cannot move. /proc/self/mountinfo gives it as its own parent. */
static bool root_is_rootfs(void) {
  FILE *mountinfo = fopen("/proc/self/mountinfo", "re");
  if (mountinfo == NULL) return false;
  char *line = NULL;
  size_t size = 0;
  bool rootfs = false;
  while (!rootfs && getline(&line, &size, mountinfo) > 0) {
    int id, parent, end = 0;
    /* "ID PARENT MAJOR:MINOR ROOT MOUNT-POINT ...": the mount point "/" is written as "/ ". */
    if (sscanf(line, "%d %d %*s %*s /%n", &id, &parent, &end) == 2 && end > 0 && line[end] == ' ') rootfs = id == parent;
  }
  free(line);
  fclose(mountinfo);
  return rootfs;
}

/* Step 6 on the rootfs (the working directory is the new root): runc's way without pivot_root. */
static void move_root(void) {
  if (mount(".", "/", NULL, MS_MOVE, NULL) != 0) die(EXIT_ROOT, "root", errno, "moving the new root onto / (the rootfs, where pivot_root cannot be used)");
  if (chroot(".") != 0) die(EXIT_ROOT, "root", errno, "chroot into the new root");
}

/* Steps 4 to 6. */
static void build_root(const struct options *opt) {
  if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0) die(EXIT_ROOT, "root", errno, "making every mount private");
  if (mount("tmpfs", opt->stage, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=1m,nr_inodes=16384,mode=0755") != 0) die(EXIT_ROOT, "root", errno, "mounting the tmpfs on the stage");
  for (int i = 0; i < opt->op_count; i++) run_op(opt->stage, &opt->ops[i]);
  if (mount(NULL, opt->stage, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) != 0) die(EXIT_ROOT, "root", errno, "making the new root read-only");
  /* pivot_root(".", "."): the old root ends up on top of the new one, and is then detached. */
  if (chdir(opt->stage) != 0) die(EXIT_ROOT, "root", errno, opt->stage);
  if (opt->no_pivot) {
    move_root();
  } else if (syscall(SYS_pivot_root, ".", ".") == 0) {
    if (umount2(".", MNT_DETACH) != 0) die(EXIT_ROOT, "root", errno, "detaching the old root");
  } else {
    int err = errno;
    if (err != EINVAL || !root_is_rootfs()) die(EXIT_ROOT, "root", err, "pivot_root");
    move_root();
  }
  if (chdir("/") != 0) die(EXIT_ROOT, "root", errno, "/");
}

/* Step 7. The uid inside is the uid outside (not 0), so execve() would clear the capabilities
 * anyway; they are dropped here explicitly and locked so that nothing can bring them back. */
static void drop_capabilities(void) {
  int securebits = SB_NOROOT | SB_NOROOT_LOCKED | SB_NO_SETUID_FIXUP | SB_NO_SETUID_FIXUP_LOCKED | SB_KEEP_CAPS_LOCKED |
                   SB_NO_CAP_AMBIENT_RAISE | SB_NO_CAP_AMBIENT_RAISE_LOCKED;
  if (prctl(PR_SET_SECUREBITS, securebits, 0, 0, 0) != 0) die(EXIT_CAPS, "caps", errno, "locking the securebits");
  for (int cap = 0;; cap++) {
    if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) == 0) continue;
    if (errno == EINVAL && cap > 0) break; /* past the last capability this kernel knows */
    die(EXIT_CAPS, "caps", errno, "emptying the bounding set");
  }
  if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0) die(EXIT_CAPS, "caps", errno, "clearing the ambient set");
  struct __user_cap_header_struct header = { .version = _LINUX_CAPABILITY_VERSION_3, .pid = 0 };
  struct __user_cap_data_struct data[2];
  memset(data, 0, sizeof data);
  if (syscall(SYS_capset, &header, data) != 0) die(EXIT_CAPS, "caps", errno, "dropping every capability");
  if (syscall(SYS_capget, &header, data) != 0) die(EXIT_CAPS, "caps", errno, "reading the capabilities back");
  for (int i = 0; i < 2; i++) {
    if (data[i].effective != 0 || data[i].permitted != 0 || data[i].inheritable != 0) die(EXIT_CAPS, "caps", EPERM, "a capability is left after dropping them all");
  }
}

/* --dry-run: the host's files must be gone (its /proc/1 and /etc/passwd, neither of which is ever bound). */
static void check_host_is_gone(void) {
  const char *host_paths[] = { "/proc/1", "/etc/passwd" };
  for (size_t i = 0; i < sizeof host_paths / sizeof host_paths[0]; i++) {
    struct stat st;
    if (lstat(host_paths[i], &st) == 0) die(EXIT_CHECK, "check", EEXIST, host_paths[i]);
    if (errno != ENOENT) die(EXIT_CHECK, "check", errno, host_paths[i]);
  }
  printf("ok\n");
  exit(0);
}

int main(int argc, char **argv) {
  struct options opt = { 0 };
  parse_arguments(argc, argv, &opt);
  enter_namespaces();
  build_root(&opt);
  drop_capabilities();
  if (opt.dry_run) check_host_is_gone();
  execv(opt.program[0], opt.program);
  die(EXIT_EXEC, "exec", errno, opt.program[0]);
  return EXIT_EXEC;
}
