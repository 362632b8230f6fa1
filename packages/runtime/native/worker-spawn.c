/*
 * strata_spawn.node — how the parent starts a worker on Linux, as a plain-C Node-API addon.
 *
 *   spawn(file, argv, stdioCount, onExit, inheritFd)
 *                                          starts `file` (an absolute path) with `argv` and an
 *                                          empty environment; its fds 0 .. stdioCount-1 are one
 *                                          end of a Unix socket pair each, and inheritFd (when
 *                                          given) its fd stdioCount. Returns
 *                                          [child, pid, fd0, fd1, ...]: `child` the handle the
 *                                          functions below take, the fds the parent's ends.
 *                                          onExit(code, signal) once, when the child has ended
 *                                          and been reaped (code -1 when a signal ended it,
 *                                          signal 0 when none did)
 *   refExit(child, ref)                    whether waiting for that end keeps the event loop
 *                                          alive (it does at first)
 *   signal(child, signo)                   pidfd_send_signal: 0, or the errno (ESRCH once the
 *                                          child was reaped)
 *   unsupportedReason()                    why this kernel cannot (no pidfd_open), or ''
 *
 *   makeFrameRing()                        the frame rings (frame-ring.h): [ring, fd], the fd a
 *                                          sealed memfd to pass to the child (spawn's inheritFd),
 *                                          closed by the caller once the child has it
 *   takeFrames(ring, spinMicros)           the bytes the worker published since the last take (a
 *                                          Buffer), after a spin of up to spinMicros for them;
 *                                          undefined when there are none. Throws
 *                                          ERR_STRATA_FRAME_RING when the ring's tail is not
 *                                          possible (more unread than its capacity)
 *   putFrames(ring, which, bytes, offset)  bytes[offset..] onto ring `which` (1 the commands, 2
 *                                          the replies) as room allows, never waiting:
 *                                          [written, ring], ring saying that a doorbell byte
 *                                          must go to that ring's pipe (the worker's fd 0 or 3)
 *
 * Why not node:child_process: libuv starts a child with fork(), which copies the parent's page
 * tables, and the parent then takes a fault on each page it writes first. From a Node process of
 * 52 MiB that cost 4.2 ms a spawn on this project's VM, 17 ms from one of 342 MiB; glibc's
 * posix_spawn (clone with CLONE_VM | CLONE_VFORK: the child shares the parent's memory until its
 * exec) 0.6-0.8 ms from either. The child is the same: fds 0.. its socket pairs (libuv's "pipes"
 * are socket pairs too), every signal's disposition reset and none blocked, nothing else inherited
 * (every other fd of a Node process is close-on-exec, and strata-exec closes any that is not).
 *
 * The parent learns of the end through a pidfd watched by the event loop (a libuv poll handle),
 * and reaps the child itself with waitpid: libuv reaps only the children it started. Signals go
 * through the pidfd too, so a signal never reaches another process that got the pid again.
 */
#define _GNU_SOURCE
#define NAPI_VERSION 8
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <node_api.h>
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/futex.h>
#include <uv.h>

#include "frame-ring.h"
#include "strata-napi.h"

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434 /* Linux 5.3; the same number on x86-64 and arm64 */
#endif
#ifndef SYS_pidfd_send_signal
#define SYS_pidfd_send_signal 424 /* Linux 5.1 */
#endif

enum { MAX_STDIO = 8, MAX_ARGS = 4096, MAX_ARG_BYTES = 1 << 20 };
/* What each kind of handle is tagged with (napi_type_tag_object), so that neither is taken for the other. */
static const napi_type_tag CHILD_TAG = {0x5a1c7e3f0b2d4e61u, 0x9f8e7d6c5b4a3921u};
static const napi_type_tag RINGS_TAG = {0x2c4e6a8b0d1f3e5au, 0x7b9d1f3e5a7c9e0bu};

/* Every fd the child gets is moved above this first, so that no dup2 onto 0 .. stdioCount can overwrite a later one's source. */
enum { FIRST_SOURCE_FD = MAX_STDIO + 1 };

/* One started child. Freed when both its poll handle is closed and its JavaScript handle is collected. */
struct child {
  uv_poll_t poll; /* first, so that the handle is the child */
  napi_env env;
  napi_ref on_exit;
  napi_async_context context;
  pid_t pid;
  int pidfd;   /* -1 once the child was reaped (or the environment went away) */
  int holders; /* the poll handle, the JavaScript handle */
};

static void release(struct child *child) {
  if (--child->holders == 0) free(child);
}

static void on_closed(uv_handle_t *handle) { release((struct child *)handle); }

static void on_collected(napi_env env, void *data, void *hint) {
  (void)env;
  (void)hint;
  release(data);
}

/* Stops watching: the pidfd closed, the callback released, the handle closed (it releases itself). */
static void stop_watching(struct child *child) {
  if (child->pidfd < 0) return;
  uv_poll_stop(&child->poll);
  close(child->pidfd);
  child->pidfd = -1;
  napi_async_destroy(child->env, child->context);
  napi_delete_reference(child->env, child->on_exit);
  uv_close((uv_handle_t *)&child->poll, on_closed);
}

/* The environment is going away (a Worker thread's end, or the process's): stop without calling back. */
static void cleanup_hook(void *argument) { stop_watching(argument); }

static void call_on_exit(struct child *child, int code, int signal_number) {
  napi_env env = child->env;
  napi_handle_scope scope;
  if (napi_open_handle_scope(env, &scope) != napi_ok) return;
  napi_value callback, receiver, argv[2];
  bool made = napi_get_reference_value(env, child->on_exit, &callback) == napi_ok && napi_get_global(env, &receiver) == napi_ok &&
              napi_create_int32(env, code, &argv[0]) == napi_ok && napi_create_int32(env, signal_number, &argv[1]) == napi_ok;
  if (made && napi_make_callback(env, child->context, receiver, callback, 2, argv, NULL) == napi_pending_exception) {
    napi_value error;
    if (napi_get_and_clear_last_exception(env, &error) == napi_ok) napi_fatal_exception(env, error);
  }
  napi_close_handle_scope(env, scope);
}

/* The pidfd is readable: the child ended. Reap it, stop watching, call back once. */
static void on_pidfd(uv_poll_t *handle, int status, int events) {
  (void)status;
  (void)events;
  struct child *child = (struct child *)handle;
  if (child->pidfd < 0) return;
  int wait_status = 0;
  pid_t reaped;
  do reaped = waitpid(child->pid, &wait_status, WNOHANG);
  while (reaped < 0 && errno == EINTR);
  if (reaped == 0) return; /* woken for nothing: wait again */
  /* reaped < 0 (ECHILD: something else in this process reaped it) reports an end with no status */
  int code = reaped > 0 && WIFEXITED(wait_status) ? WEXITSTATUS(wait_status) : -1;
  int signal_number = reaped > 0 && WIFSIGNALED(wait_status) ? WTERMSIG(wait_status) : 0;
  napi_remove_env_cleanup_hook(child->env, cleanup_hook, child);
  call_on_exit(child, code, signal_number); /* before the stop, which releases the callback */
  stop_watching(child);
}

/* An Error with code ERR_STRATA_SPAWN, its message naming what failed and why, and `errno` the number. */
static void throw_errno(napi_env env, const char *what, int error) {
  char message[256];
  snprintf(message, sizeof message, "strata-spawn: %s: %s", what, strerror(error));
  napi_value code, text, thrown, number;
  if (napi_create_string_utf8(env, "ERR_STRATA_SPAWN", NAPI_AUTO_LENGTH, &code) != napi_ok ||
      napi_create_string_utf8(env, message, NAPI_AUTO_LENGTH, &text) != napi_ok || napi_create_error(env, code, text, &thrown) != napi_ok)
    return;
  if (napi_create_int32(env, error, &number) == napi_ok) napi_set_named_property(env, thrown, "errno", number);
  napi_throw(env, thrown);
}

/* A string argument copied into a new buffer; NULL (with a TypeError thrown) for anything else or too long. */
static char *string_arg(napi_env env, napi_value value, const char *what, size_t max_bytes, size_t *total) {
  size_t length;
  if (napi_get_value_string_utf8(env, value, NULL, 0, &length) != napi_ok || length > max_bytes || (*total += length + 1) > MAX_ARG_BYTES) {
    char message[128];
    snprintf(message, sizeof message, "strata-spawn: %s must be a string of at most %zu bytes", what, max_bytes);
    napi_throw_type_error(env, "ERR_INVALID_ARG_TYPE", message);
    return NULL;
  }
  char *text = malloc(length + 1);
  if (text == NULL) {
    napi_throw_error(env, "ERR_STRATA_SPAWN", "strata-spawn: out of memory");
    return NULL;
  }
  napi_get_value_string_utf8(env, value, text, length + 1, &length);
  if (strlen(text) != length) { /* a NUL inside would cut the argument short */
    free(text);
    napi_throw_type_error(env, "ERR_INVALID_ARG_VALUE", "strata-spawn: an argument holds a NUL character");
    return NULL;
  }
  return text;
}

static void free_strings(char **strings, size_t count) {
  for (size_t i = 0; i < count; i++) free(strings[i]);
  free(strings);
}

static void close_all(int *fds, size_t count) {
  for (size_t i = 0; i < count; i++)
    if (fds[i] >= 0) close(fds[i]);
}

/* Our own child that nobody will watch: killed and reaped at once (not yet reaped, the pid is still its). */
static void kill_and_reap(pid_t pid) {
  kill(pid, SIGKILL);
  while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) {
  }
}

/*
 * Makes the socket pairs: parent[i] stays here, child[i] becomes the child's fd i. Every child end
 * is moved to an fd >= FIRST_SOURCE_FD first. All of them are close-on-exec: only the dup2'd
 * copies survive the exec.
 */
static int make_pairs(size_t count, int *parent, int *child) {
  for (size_t i = 0; i < count; i++) parent[i] = child[i] = -1;
  for (size_t i = 0; i < count; i++) {
    int pair[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0) return errno;
    parent[i] = pair[0];
    child[i] = fcntl(pair[1], F_DUPFD_CLOEXEC, FIRST_SOURCE_FD);
    int error = errno;
    close(pair[1]);
    if (child[i] < 0) return error;
  }
  return 0;
}

/* posix_spawn with the child's stdio (and inherit_fd, unless -1, as its fd `count`) and a clean signal state; 0 or the errno (of the exec, too). */
static int start_child(const char *file, char **argv, const int *child_fds, size_t count, int inherit_fd, pid_t *pid) {
  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attributes;
  int error = posix_spawn_file_actions_init(&actions);
  if (error != 0) return error;
  error = posix_spawnattr_init(&attributes);
  if (error != 0) {
    posix_spawn_file_actions_destroy(&actions);
    return error;
  }
  for (size_t i = 0; i < count && error == 0; i++) error = posix_spawn_file_actions_adddup2(&actions, child_fds[i], (int)i);
  if (inherit_fd >= 0 && error == 0) error = posix_spawn_file_actions_adddup2(&actions, inherit_fd, (int)count);
  /* What libuv does in its child: every disposition back to the default (Node ignores SIGPIPE,
   * and an ignored signal stays ignored across exec), no signal blocked. */
  sigset_t all, none;
  sigfillset(&all);
  sigemptyset(&none);
  if (error == 0) error = posix_spawnattr_setsigdefault(&attributes, &all);
  if (error == 0) error = posix_spawnattr_setsigmask(&attributes, &none);
  if (error == 0) error = posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
  char *empty_environment[] = {NULL};
  if (error == 0) error = posix_spawn(pid, file, &actions, &attributes, argv, empty_environment);
  posix_spawnattr_destroy(&attributes);
  posix_spawn_file_actions_destroy(&actions);
  return error;
}

static napi_value spawn(napi_env env, napi_callback_info info) {
  size_t argc = 5;
  napi_value args[5];
  CHECK(env, napi_get_cb_info(env, info, &argc, args, NULL, NULL));
  bool is_array = false;
  int32_t inherit = -1;
  napi_valuetype inherit_type = napi_undefined;
  if (argc >= 5 && (napi_typeof(env, args[4], &inherit_type) != napi_ok ||
                    (inherit_type != napi_undefined && (napi_get_value_int32(env, args[4], &inherit) != napi_ok || inherit < 0)))) {
    napi_throw_type_error(env, "ERR_INVALID_ARG_TYPE", "strata-spawn: spawn's inheritFd is a file descriptor or undefined");
    return NULL;
  }
  napi_valuetype callback_type = napi_undefined;
  uint32_t stdio_count = 0, arg_count = 0;
  if (argc < 4 || napi_is_array(env, args[1], &is_array) != napi_ok || !is_array || napi_get_array_length(env, args[1], &arg_count) != napi_ok ||
      arg_count > MAX_ARGS || napi_get_value_uint32(env, args[2], &stdio_count) != napi_ok || stdio_count < 1 || stdio_count > MAX_STDIO ||
      napi_typeof(env, args[3], &callback_type) != napi_ok || callback_type != napi_function) {
    napi_throw_type_error(env, "ERR_INVALID_ARG_TYPE",
                          "strata-spawn: spawn(file, argv, stdioCount, onExit, inheritFd) takes a path, an array of at most 4096 strings, 1-8 and a function");
    return NULL;
  }
  size_t total = 0;
  char *file = string_arg(env, args[0], "file", PATH_MAX, &total);
  if (file == NULL) return NULL;
  if (file[0] != '/') {
    free(file);
    napi_throw_type_error(env, "ERR_INVALID_ARG_VALUE", "strata-spawn: file must be an absolute path");
    return NULL;
  }
  char **argv = calloc((size_t)arg_count + 1, sizeof *argv);
  if (argv == NULL) {
    free(file);
    napi_throw_error(env, "ERR_STRATA_SPAWN", "strata-spawn: out of memory");
    return NULL;
  }
  for (uint32_t i = 0; i < arg_count; i++) {
    napi_value element;
    if (napi_get_element(env, args[1], i, &element) != napi_ok || (argv[i] = string_arg(env, element, "each argument", MAX_ARG_BYTES, &total)) == NULL) {
      free(file);
      free_strings(argv, i);
      return NULL;
    }
  }

  struct child *child = calloc(1, sizeof *child);
  int parent_fds[MAX_STDIO], child_fds[MAX_STDIO];
  int error = child == NULL ? ENOMEM : make_pairs(stdio_count, parent_fds, child_fds);
  /* moved up too, like the pairs' ends (and close-on-exec: only its dup2'd copy survives) */
  int inherit_source = -1;
  if (error == 0 && inherit >= 0 && (inherit_source = fcntl(inherit, F_DUPFD_CLOEXEC, FIRST_SOURCE_FD)) < 0) error = errno;
  pid_t pid = -1;
  if (error == 0) error = start_child(file, argv, child_fds, stdio_count, inherit_source, &pid);
  free(file);
  free_strings(argv, arg_count);
  close_all(child_fds, stdio_count);
  if (inherit_source >= 0) close(inherit_source);
  int pidfd = -1;
  if (error == 0) {
    pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
    if (pidfd < 0) {
      error = errno;
      kill_and_reap(pid);
    }
  }
  uv_loop_t *loop = NULL;
  if (error == 0 && napi_get_uv_event_loop(env, &loop) != napi_ok) error = EINVAL;
  if (error == 0) error = -uv_poll_init(loop, &child->poll, pidfd);
  if (error != 0) {
    if (pidfd >= 0) {
      kill_and_reap(pid);
      close(pidfd);
    }
    close_all(parent_fds, child == NULL ? 0 : stdio_count);
    free(child);
    throw_errno(env, "spawn", error);
    return NULL;
  }
  /* From here the poll handle exists: a failure closes it, and its close frees the child. */
  child->env = env;
  child->pid = pid;
  child->pidfd = pidfd;
  child->holders = 2;
  napi_value name, handle, result, number;
  bool ready = napi_create_string_utf8(env, "strata-child", NAPI_AUTO_LENGTH, &name) == napi_ok &&
               napi_async_init(env, NULL, name, &child->context) == napi_ok;
  if (ready && napi_create_reference(env, args[3], 1, &child->on_exit) != napi_ok) {
    napi_async_destroy(env, child->context);
    ready = false;
  }
  if (ready) error = -uv_poll_start(&child->poll, UV_READABLE, on_pidfd);
  if (!ready || error != 0) {
    if (ready) {
      napi_delete_reference(env, child->on_exit);
      napi_async_destroy(env, child->context);
    }
    kill_and_reap(pid);
    close(pidfd);
    close_all(parent_fds, stdio_count);
    child->holders = 1;
    uv_close((uv_handle_t *)&child->poll, on_closed);
    throw_errno(env, "watch the child's end", error != 0 ? error : ENOMEM);
    return NULL;
  }
  napi_add_env_cleanup_hook(env, cleanup_hook, child);
  /* The JavaScript handle: its collection is the second release. */
  if (napi_create_external(env, child, on_collected, NULL, &handle) != napi_ok || napi_type_tag_object(env, handle, &CHILD_TAG) != napi_ok) {
    /* never expected; the child runs, watched, and is freed with its handle */
    child->holders = 1;
    napi_throw_error(env, "ERR_STRATA_SPAWN", "strata-spawn: cannot make the child's handle");
    return NULL;
  }
  CHECK(env, napi_create_array_with_length(env, stdio_count + 2, &result));
  CHECK(env, napi_set_element(env, result, 0, handle));
  CHECK(env, napi_create_int32(env, pid, &number));
  CHECK(env, napi_set_element(env, result, 1, number));
  for (uint32_t i = 0; i < stdio_count; i++) {
    CHECK(env, napi_create_int32(env, parent_fds[i], &number));
    CHECK(env, napi_set_element(env, result, i + 2, number));
  }
  return result;
}

/*
 * The data behind a handle this addon made with `tag` (spawn's child, makeFrameRing's rings); NULL
 * (a TypeError saying `usage` thrown) for anything else, the other kind of handle included: a
 * child taken for rings would be memory read as a ring.
 */
static void *handle_arg(napi_env env, napi_value value, const napi_type_tag *tag, const char *usage) {
  napi_valuetype type;
  void *data = NULL;
  bool tagged = false;
  if (napi_typeof(env, value, &type) != napi_ok || type != napi_external || napi_check_object_type_tag(env, value, tag, &tagged) != napi_ok || !tagged ||
      napi_get_value_external(env, value, &data) != napi_ok || data == NULL) {
    napi_throw_type_error(env, "ERR_INVALID_ARG_TYPE", usage);
    return NULL;
  }
  return data;
}

/* The child behind a handle spawn returned; NULL (a TypeError thrown) for anything else. */
static struct child *child_arg(napi_env env, napi_value value) {
  return handle_arg(env, value, &CHILD_TAG, "strata-spawn: takes the child handle spawn returned");
}

static napi_value ref_exit(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value args[2];
  CHECK(env, napi_get_cb_info(env, info, &argc, args, NULL, NULL));
  bool ref = false;
  struct child *child = argc < 2 ? NULL : child_arg(env, args[0]);
  if (child == NULL || napi_get_value_bool(env, args[1], &ref) != napi_ok) {
    napi_throw_type_error(env, "ERR_INVALID_ARG_TYPE", "strata-spawn: refExit(child, ref) takes the child handle and a boolean");
    return NULL;
  }
  if (child->pidfd < 0) return NULL; /* already ended: its handle is closing */
  if (ref) uv_ref((uv_handle_t *)&child->poll);
  else uv_unref((uv_handle_t *)&child->poll);
  return NULL;
}

static napi_value send_signal(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value args[2];
  CHECK(env, napi_get_cb_info(env, info, &argc, args, NULL, NULL));
  int32_t signal_number = 0;
  struct child *child = argc < 2 ? NULL : child_arg(env, args[0]);
  if (child == NULL || napi_get_value_int32(env, args[1], &signal_number) != napi_ok || signal_number < 1 || signal_number > 64) {
    napi_throw_type_error(env, "ERR_INVALID_ARG_TYPE", "strata-spawn: signal(child, signo) takes the child handle and a signal number");
    return NULL;
  }
  int error = ESRCH;
  if (child->pidfd >= 0) error = syscall(SYS_pidfd_send_signal, child->pidfd, signal_number, NULL, 0) == 0 ? 0 : errno;
  napi_value result;
  CHECK(env, napi_create_int32(env, error, &result));
  return result;
}

/* pidfd_open on this process: what spawn needs beyond posix_spawn. */
static napi_value unsupported_reason(napi_env env, napi_callback_info info) {
  (void)info;
  char reason[160] = "";
  int pidfd = (int)syscall(SYS_pidfd_open, getpid(), 0);
  if (pidfd < 0) snprintf(reason, sizeof reason, "pidfd_open: %s (Linux 5.3 or newer has it)", strerror(errno));
  else close(pidfd);
  napi_value result;
  CHECK(env, napi_create_string_utf8(env, reason, NAPI_AUTO_LENGTH, &result));
  return result;
}

/* ---- the parent's ends of the frame rings (frame-ring.h) ---- */

struct rings {
  uint8_t *base;                     /* FRAME_RINGS_BYTES, shared with the worker */
  uint32_t out_head;                 /* this side's own count of the frames' bytes taken: the shared `head` is for the worker only */
  uint32_t tails[FRAME_RING_COUNT];  /* this side's own count of the bytes written to rings 1 and 2 */
};

static void on_rings_collected(napi_env env, void *data, void *hint) {
  (void)env;
  (void)hint;
  struct rings *rings = data;
  munmap(rings->base, FRAME_RINGS_BYTES);
  free(rings);
}

/* A sealed memfd of both rings (it can neither shrink nor grow: the mapping never faults), mapped here. */
static napi_value make_frame_ring(napi_env env, napi_callback_info info) {
  (void)info;
  int fd = memfd_create("strata-frame-rings", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  int error = fd < 0 ? errno : 0;
  if (error == 0 && ftruncate(fd, FRAME_RINGS_BYTES) != 0) error = errno;
  if (error == 0 && fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) error = errno;
  void *base = MAP_FAILED;
  if (error == 0 && (base = mmap(NULL, FRAME_RINGS_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) == MAP_FAILED) error = errno;
  struct rings *rings = error == 0 ? calloc(1, sizeof *rings) : NULL;
  if (error == 0 && rings == NULL) error = ENOMEM;
  if (error != 0) {
    if (base != MAP_FAILED) munmap(base, FRAME_RINGS_BYTES);
    if (fd >= 0) close(fd);
    throw_errno(env, "make the frame rings", error);
    return NULL;
  }
  rings->base = base;
  napi_value handle, number, result;
  if (napi_create_external(env, rings, on_rings_collected, NULL, &handle) != napi_ok) {
    on_rings_collected(env, rings, NULL);
    close(fd);
    napi_throw_error(env, "ERR_STRATA_SPAWN", "strata-spawn: cannot make the rings' handle");
    return NULL;
  }
  if (napi_type_tag_object(env, handle, &RINGS_TAG) != napi_ok) { /* the handle frees the rings when collected */
    close(fd);
    napi_throw_error(env, "ERR_STRATA_SPAWN", "strata-spawn: cannot make the rings' handle");
    return NULL;
  }
  CHECK(env, napi_create_array_with_length(env, 2, &result));
  CHECK(env, napi_set_element(env, result, 0, handle));
  CHECK(env, napi_create_int32(env, fd, &number));
  CHECK(env, napi_set_element(env, result, 1, number));
  return result;
}

/* The rings behind a handle makeFrameRing returned; NULL (a TypeError thrown) for anything else. */
static struct rings *rings_arg(napi_env env, napi_value value, const char *usage) { return handle_arg(env, value, &RINGS_TAG, usage); }

static napi_value take_frames(napi_env env, napi_callback_info info) {
  static const char usage[] = "strata-spawn: takeFrames(ring, spinMicros) takes a ring makeFrameRing made and 0-1000000";
  size_t argc = 2;
  napi_value args[2];
  CHECK(env, napi_get_cb_info(env, info, &argc, args, NULL, NULL));
  struct rings *rings = argc < 2 ? NULL : rings_arg(env, args[0], usage);
  double micros = 0;
  if (rings == NULL || napi_get_value_double(env, args[1], &micros) != napi_ok || !(micros >= 0 && micros <= 1000000)) {
    if (rings != NULL) napi_throw_type_error(env, "ERR_INVALID_ARG_TYPE", usage);
    return NULL;
  }
  struct frame_ring_header *ring = frame_ring(rings->base, FRAME_RING_OUT);
  uint32_t tail = frame_ring_tail(ring);
  if (tail == rings->out_head && micros > 0) tail = frame_ring_spin(ring, rings->out_head, micros);
  const uint32_t unread = tail - rings->out_head;
  napi_value result;
  if (unread == 0) {
    CHECK(env, napi_get_undefined(env, &result));
    return result;
  }
  if (unread > FRAME_RING_CAPACITY) {
    char message[160];
    snprintf(message, sizeof message, "strata-spawn: the frame ring's tail says %u bytes are unread, more than its %u", unread, FRAME_RING_CAPACITY);
    napi_throw_error(env, "ERR_STRATA_FRAME_RING", message);
    return NULL;
  }
  uint8_t *bytes;
  CHECK(env, napi_create_buffer(env, unread, (void **)&bytes, &result));
  frame_ring_take(ring, &rings->out_head, bytes, unread);
  /* after `head` moved: a writer that saw no room either sees this head or is woken here */
  if (atomic_load(&ring->writer_waiting) != 0) syscall(SYS_futex, &ring->head, FUTEX_WAKE, 1, NULL, NULL, 0);
  return result;
}

/*
 * putFrames(ring, which, bytes, offset): writes bytes[offset..] onto ring `which` (1, the commands;
 * 2, the replies) as room allows, never waiting. Returns [written, ring]: how many bytes went on,
 * and whether the caller must write a doorbell byte to that ring's pipe (the worker's fd 0 or 3).
 * When not all went on, the worker is asked to say (a byte on fd 1) once it has taken some.
 */
static napi_value put_frames(napi_env env, napi_callback_info info) {
  static const char usage[] =
      "strata-spawn: putFrames(ring, which, bytes, offset) takes a ring makeFrameRing made, 1 or 2, a Uint8Array and an offset in it";
  size_t argc = 4;
  napi_value args[4];
  CHECK(env, napi_get_cb_info(env, info, &argc, args, NULL, NULL));
  struct rings *rings = argc < 4 ? NULL : rings_arg(env, args[0], usage);
  if (rings == NULL) return NULL;
  bool typed = false;
  napi_typedarray_type type;
  size_t length = 0;
  uint8_t *bytes = NULL;
  double offset = -1;
  int32_t which = -1;
  if (napi_get_value_int32(env, args[1], &which) != napi_ok || (which != FRAME_RING_COMMANDS && which != FRAME_RING_REPLIES) ||
      napi_is_typedarray(env, args[2], &typed) != napi_ok || !typed ||
      napi_get_typedarray_info(env, args[2], &type, &length, (void **)&bytes, NULL, NULL) != napi_ok || type != napi_uint8_array ||
      napi_get_value_double(env, args[3], &offset) != napi_ok || !(offset >= 0 && offset <= (double)length) || offset != (double)(size_t)offset) {
    napi_throw_type_error(env, "ERR_INVALID_ARG_TYPE", usage);
    return NULL;
  }
  struct frame_ring_header *ring = frame_ring(rings->base, which);
  uint32_t *tail = &rings->tails[which];
  const size_t from = (size_t)offset;
  uint32_t written = frame_ring_put(ring, tail, bytes + from, length - from);
  if (from + written < length) {
    /* full: say so, then look again (a reader that took some before the flag was up did not see it) */
    atomic_store(&ring->writer_waiting, 1);
    written += frame_ring_put(ring, tail, bytes + from + written, length - from - written);
  }
  const bool must_ring = written > 0 && frame_ring_must_ring(ring);
  napi_value result, number, flag;
  CHECK(env, napi_create_array_with_length(env, 2, &result));
  CHECK(env, napi_create_uint32(env, written, &number));
  CHECK(env, napi_get_boolean(env, must_ring, &flag));
  CHECK(env, napi_set_element(env, result, 0, number));
  CHECK(env, napi_set_element(env, result, 1, flag));
  return result;
}

NAPI_MODULE_INIT() {
  napi_property_descriptor functions[] = {
      {"spawn", NULL, spawn, NULL, NULL, NULL, napi_enumerable, NULL},
      {"refExit", NULL, ref_exit, NULL, NULL, NULL, napi_enumerable, NULL},
      {"signal", NULL, send_signal, NULL, NULL, NULL, napi_enumerable, NULL},
      {"unsupportedReason", NULL, unsupported_reason, NULL, NULL, NULL, napi_enumerable, NULL},
      {"makeFrameRing", NULL, make_frame_ring, NULL, NULL, NULL, napi_enumerable, NULL},
      {"takeFrames", NULL, take_frames, NULL, NULL, NULL, napi_enumerable, NULL},
      {"putFrames", NULL, put_frames, NULL, NULL, NULL, napi_enumerable, NULL},
  };
  CHECK(env, napi_define_properties(env, exports, sizeof functions / sizeof functions[0], functions));
  return exports;
}
