/*
 * strata_watchdog.node — a memory watchdog for Strata's worker, as a plain-C Node-API addon.
 *
 *   start(limitBytes, intervalMs, exitCode)  one detached thread checks the resident set size
 *                                            every intervalMs; over limitBytes it writes
 *                                            `strata-watchdog: resident memory <n> bytes is over
 *                                            maxMemory <limit> bytes` to fd 2 and _exit(exitCode)s
 *   rss()                                    the resident set size now, in bytes
 *   threads()                                how many threads the process has now
 *   setCpuSoftLimit(seconds)                 RLIMIT_CPU soft limit = CPU used so far, rounded up
 *                                            to a second, + seconds + 1 (capped at the hard
 *                                            limit): a per-command CPU cap of seconds to
 *                                            seconds + 2. Set again only once the process may
 *                                            have used a second of CPU since (wall time since x
 *                                            CPUs): between, it reads no clock but the vDSO's
 *   disableDumping()                         PR_SET_DUMPABLE 0 (execve() resets it, so the
 *                                            worker sets it itself once Node is running)
 *   readInput(fd, buffer, spinMicros, idle, waited)
 *                                            the worker's blocking read of what it waits for (its
 *                                            next command, a host call's reply): a spin of up to
 *                                            spinMicros first; around a read that sleeps on a
 *                                            command (idle: no guest code runs until it comes)
 *                                            the watchdog thread waits instead of polling, so an
 *                                            idle worker costs no CPU. Returns the bytes read, and
 *                                            puts the microseconds waited in waited[0]. One call
 *                                            where a --jitless worker made five
 *   writeAll(fd, bytes)                      every byte written to fd (blocking), in one call
 *                                            instead of fs.writeSync's interpreted wrapper
 *   attachFrameRing(fd, outBellFd, commandBellFd, replyBellFd)
 *                                            maps the frame rings the parent passed as fd (a
 *                                            sealed memfd of the rings' size: anything else is
 *                                            refused) and closes fd; each ring's doorbell rings
 *                                            on its fd (frame-ring.h)
 *   writeFrames(bytes)                       every byte onto the frames' ring, waiting for room
 *                                            while it is full (blocking, as a full pipe was),
 *                                            ringing the parent's doorbell unless it spins
 *   readRing(which, buffer, spinMicros, idle, waited)
 *                                            readInput for ring `which` (1 the commands, 2 the
 *                                            replies): what is there, or a spin for it, or a
 *                                            sleep on its doorbell; 0 at the end (the parent
 *                                            closed the doorbell's pipe)
 *   takeRing(which, buffer)                  what is on ring `which` now, never waiting
 *   streamInput(fd, onChunk)                makes fd non-blocking and watches it from the
 *                                            main thread's event loop (a libuv poll handle):
 *                                            onChunk(buffer) for each chunk read, then
 *                                            onChunk(undefined) once at end of file or an error.
 *                                            The worker reads the pipes it must hear from while
 *                                            it runs (host-call settlements, a worker of many
 *                                            isolates' commands) so: node:net would do it, and
 *                                            cost every worker ~15 ms to compile its streams
 *                                            under --jitless; a reader thread handing chunks to
 *                                            the main thread would cost every chunk a second
 *                                            wake-up (about 0.3 ms on this project's VM after a
 *                                            moment idle)
 *   tcpConnect(ipv4, port, timeoutMs)        one TCP connect attempt: 0 when it connected (and
 *                                            was closed again), an errno when refused, -1 when
 *                                            timeoutMs passed (the layers' self-tests, without
 *                                            node:net)
 *   fingerprint(bytes)                       the FNV-1a 64-bit hash of a Uint8Array's bytes, as
 *                                            16 hex digits: what a layer bundle's code cache is
 *                                            filed under (src/worker/layer-scripts.ts), since
 *                                            node:crypto costs a --jitless worker ~7 ms to load.
 *                                            Not a MAC: it tells a bundle from an edited or
 *                                            half-upgraded one, not from a forged one (whoever can
 *                                            write the package's files runs code anyway)
 *
 * Why a native thread: the guest runs synchronously on the worker's main thread, so no
 * JavaScript timer can run while it does. Why resident memory and not the V8 heap: it also
 * counts ArrayBuffers, Wasm memory and anything native.
 *
 * /proc/self/statm and /proc/self/task are opened once, on first use, and kept open: the worker
 * later restricts itself (Landlock, seccomp, an empty root) and may no longer be able to open
 * them. The watchdog thread only uses async-signal-safe calls (pread, nanosleep, write, _exit),
 * and its own mutex and condition variable, which no other code takes: it may have to end the
 * process while another thread holds a malloc or stdio lock.
 *
 * Linux only (it reads /proc).
 */
#define _GNU_SOURCE
#define NAPI_VERSION 8
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <node_api.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <uv.h>

#include "frame-ring.h"
#include "strata-napi.h"

/* ---- /proc, opened once -------------------------------------------------------------------- */

static pthread_once_t proc_once = PTHREAD_ONCE_INIT;
static int statm_fd = -1;
static int task_fd = -1;
static int proc_errno; /* why an open failed */
static uint64_t page_size;
static pthread_mutex_t task_lock = PTHREAD_MUTEX_INITIALIZER; /* task_fd's offset is shared */

static void open_proc(void) {
  statm_fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
  if (statm_fd < 0) proc_errno = errno;
  task_fd = open("/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (task_fd < 0 && proc_errno == 0) proc_errno = errno;
  long size = sysconf(_SC_PAGESIZE);
  page_size = size > 0 ? (uint64_t)size : 4096;
}

/* Resident bytes, or 0 when /proc cannot be read. Async-signal-safe: pread and arithmetic. */
static uint64_t read_rss(void) {
  char text[128];
  ssize_t length = pread(statm_fd, text, sizeof text - 1, 0);
  if (length <= 0) return 0;
  text[length] = '\0';
  /* "size resident shared text lib data dt", in pages: skip size, read resident. */
  const char *p = text;
  while (*p >= '0' && *p <= '9') p++;
  if (*p != ' ') return 0;
  p++;
  uint64_t pages = 0;
  bool digits = false;
  for (; *p >= '0' && *p <= '9'; p++, digits = true) pages = pages * 10 + (uint64_t)(*p - '0');
  return digits ? pages * page_size : 0;
}

struct linux_dirent64 {
  uint64_t d_ino;
  int64_t d_off;
  unsigned short d_reclen;
  unsigned char d_type;
  char d_name[];
};

/* Entries of /proc/self/task other than "." and "..", or -1 with errno set. */
static long count_threads(void) {
  pthread_mutex_lock(&task_lock);
  long count = 0;
  _Alignas(struct linux_dirent64) char buffer[4096];
  if (lseek(task_fd, 0, SEEK_SET) != 0) count = -1;
  while (count >= 0) {
    long size = syscall(SYS_getdents64, task_fd, buffer, sizeof buffer);
    if (size <= 0) {
      if (size < 0) count = -1;
      break;
    }
    for (long offset = 0; offset < size;) {
      const struct linux_dirent64 *entry = (const struct linux_dirent64 *)(buffer + offset);
      offset += entry->d_reclen;
      if (entry->d_name[0] != '.') count++;
    }
  }
  int error = errno;
  pthread_mutex_unlock(&task_lock);
  errno = error;
  return count;
}

/* ---- the watchdog thread ------------------------------------------------------------------- */

static atomic_bool started;
static uint64_t limit_bytes;
static long interval_ms;
static int exit_code;

/* Appends the decimal digits of value; snprintf is not async-signal-safe. */
static char *append_number(char *out, uint64_t value) {
  char digits[20];
  int n = 0;
  do digits[n++] = (char)('0' + value % 10);
  while ((value /= 10) != 0);
  while (n > 0) *out++ = digits[--n];
  return out;
}

static char *append_text(char *out, const char *text) {
  while (*text) *out++ = *text++;
  return out;
}

/* Writes one line and ends the process, without atexit handlers, destructors or locks. */
static void die_over_limit(uint64_t rss) {
  char line[160];
  char *p = line;
  if (rss == 0) {
    p = append_text(p, "strata-watchdog: cannot read /proc/self/statm; ending the process rather than run unwatched\n");
  } else {
    p = append_text(p, "strata-watchdog: resident memory ");
    p = append_number(p, rss);
    p = append_text(p, " bytes is over maxMemory ");
    p = append_number(p, limit_bytes);
    p = append_text(p, " bytes\n");
  }
  ssize_t ignored = write(2, line, (size_t)(p - line));
  (void)ignored;
  _exit(exit_code);
}

/* Set while the worker sleeps on its next command (readInput with idle); the watchdog waits on `wake` then. */
static pthread_mutex_t idle_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wake = PTHREAD_COND_INITIALIZER;
static bool idle;

static void *watch(void *unused) {
  (void)unused;
  const struct timespec interval = {.tv_sec = interval_ms / 1000, .tv_nsec = (interval_ms % 1000) * 1000000L};
  for (;;) {
    /* No guest code runs while the worker is idle, so its memory cannot grow: nothing to watch. */
    pthread_mutex_lock(&idle_lock);
    while (idle) pthread_cond_wait(&wake, &idle_lock);
    pthread_mutex_unlock(&idle_lock);
    struct timespec left = interval;
    while (nanosleep(&left, &left) != 0 && errno == EINTR) {
    }
    uint64_t rss = read_rss();
    if (rss == 0 || rss > limit_bytes) die_over_limit(rss);
  }
  return NULL;
}

/* ---- JavaScript bindings ------------------------------------------------------------------- */

/* Throws a JS Error naming the /proc file and the errno; returns false then. */
static bool proc_ready(napi_env env) {
  pthread_once(&proc_once, open_proc);
  if (statm_fd >= 0 && task_fd >= 0) return true;
  char message[200];
  snprintf(message, sizeof message, "strata-watchdog: cannot open /proc/self: %s — mount /proc (Linux only)",
           strerror(proc_errno));
  napi_throw_error(env, "ERR_STRATA_WATCHDOG_PROC", message);
  return false;
}

/* An integer argument in [min, max], or throws a TypeError / RangeError and returns false. */
static bool integer_arg(napi_env env, napi_value value, const char *name, double min, double max, double *out) {
  napi_valuetype type;
  if (napi_typeof(env, value, &type) != napi_ok || type != napi_number) {
    char message[120];
    snprintf(message, sizeof message, "strata-watchdog: %s must be a number", name);
    napi_throw_type_error(env, "ERR_INVALID_ARG_TYPE", message);
    return false;
  }
  double number;
  napi_get_value_double(env, value, &number);
  if (!(number >= min && number <= max) || number != (double)(int64_t)number) {
    char message[160];
    snprintf(message, sizeof message, "strata-watchdog: %s must be an integer from %.0f to %.0f", name, min, max);
    napi_throw_range_error(env, "ERR_OUT_OF_RANGE", message);
    return false;
  }
  *out = number;
  return true;
}

static napi_value start(napi_env env, napi_callback_info info) {
  size_t argc = 3;
  napi_value argv[3];
  CHECK(env, napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  if (argc < 3) {
    napi_throw_type_error(env, "ERR_MISSING_ARGS", "strata-watchdog: start(limitBytes, intervalMs, exitCode)");
    return NULL;
  }
  double limit, interval, code;
  if (!integer_arg(env, argv[0], "limitBytes", 1, 9007199254740991.0, &limit)) return NULL;
  if (!integer_arg(env, argv[1], "intervalMs", 1, 60000, &interval)) return NULL;
  if (!integer_arg(env, argv[2], "exitCode", 1, 255, &code)) return NULL;
  if (!proc_ready(env)) return NULL;
  if (read_rss() == 0) {
    napi_throw_error(env, "ERR_STRATA_WATCHDOG_PROC", "strata-watchdog: cannot read /proc/self/statm");
    return NULL;
  }

  bool expected = false;
  if (!atomic_compare_exchange_strong(&started, &expected, true)) {
    napi_throw_error(env, "ERR_STRATA_WATCHDOG_STARTED",
                     "strata-watchdog: already started; there is one watchdog per process");
    return NULL;
  }
  limit_bytes = (uint64_t)limit;
  interval_ms = (long)interval;
  exit_code = (int)code;

  /* The thread blocks every signal (it inherits the mask at creation), so signals meant for the
     process keep going to Node's threads. */
  sigset_t all, previous;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &previous);
  pthread_attr_t attributes;
  pthread_attr_init(&attributes);
  pthread_attr_setdetachstate(&attributes, PTHREAD_CREATE_DETACHED);
  pthread_attr_setstacksize(&attributes, 64 * 1024);
  pthread_t thread;
  int error = pthread_create(&thread, &attributes, watch, NULL);
  pthread_attr_destroy(&attributes);
  pthread_sigmask(SIG_SETMASK, &previous, NULL);
  if (error != 0) {
    atomic_store(&started, false);
    char message[160];
    snprintf(message, sizeof message, "strata-watchdog: cannot start its thread: %s", strerror(error));
    napi_throw_error(env, "ERR_STRATA_WATCHDOG_THREAD", message);
  }
  return NULL;
}

static napi_value rss(napi_env env, napi_callback_info info) {
  (void)info;
  if (!proc_ready(env)) return NULL;
  uint64_t bytes = read_rss();
  if (bytes == 0) {
    napi_throw_error(env, "ERR_STRATA_WATCHDOG_PROC", "strata-watchdog: cannot read /proc/self/statm");
    return NULL;
  }
  return strata_number(env, (double)bytes);
}

static napi_value threads(napi_env env, napi_callback_info info) {
  (void)info;
  if (!proc_ready(env)) return NULL;
  long count = count_threads();
  if (count < 0) {
    char message[160];
    snprintf(message, sizeof message, "strata-watchdog: cannot list /proc/self/task: %s", strerror(errno));
    napi_throw_error(env, "ERR_STRATA_WATCHDOG_PROC", message);
    return NULL;
  }
  return strata_number(env, (double)count);
}

/* When setCpuSoftLimit last set the limit (CLOCK_MONOTONIC, µs; 0: never) and for how many seconds. */
static uint64_t cpu_limit_set_at_us;
static double cpu_limit_seconds;
/* The CPUs this process could ever run on at once: its CPU time grows at most this fast. */
static long cpu_count;

static uint64_t monotonic_us(void);

static napi_value set_cpu_soft_limit(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  CHECK(env, napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  double seconds;
  if (argc < 1 || !integer_arg(env, argv[0], "seconds", 1, 2147483647.0, &seconds)) return NULL;
  /* The limit set last left at least seconds + 1 of CPU above what was used then. Until the
   * process may have used one of them (every CPU busy for the wall time since), at least
   * `seconds` remain: no syscall (two, getrusage and getrlimit, cost every command microseconds). */
  uint64_t now_us = monotonic_us();
  if (cpu_limit_set_at_us != 0 && cpu_limit_seconds == seconds && (now_us - cpu_limit_set_at_us) * (uint64_t)cpu_count < 1000000u) return NULL;
  struct rusage usage;
  struct rlimit limit;
  if (getrusage(RUSAGE_SELF, &usage) != 0 || getrlimit(RLIMIT_CPU, &limit) != 0) {
    napi_throw_error(env, "ERR_STRATA_CPU_LIMIT", "strata-watchdog: cannot read the CPU time or its limit");
    return NULL;
  }
  /* CPU used so far, rounded up to a whole second: the guest gets at least `seconds` + 1 more,
   * never less (summing the two whole-second parts alone could lose almost two seconds). */
  uint64_t used_us = (uint64_t)(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) * 1000000u + (uint64_t)usage.ru_utime.tv_usec + (uint64_t)usage.ru_stime.tv_usec;
  rlim_t used = (rlim_t)((used_us + 999999u) / 1000000u);
  rlim_t soft = used + (rlim_t)seconds + 1;
  if (limit.rlim_max != RLIM_INFINITY && soft > limit.rlim_max) soft = limit.rlim_max;
  /* Commands within the same second of CPU time ask for the limit already set: no third syscall. */
  if (limit.rlim_cur != soft) {
    limit.rlim_cur = soft;
    if (setrlimit(RLIMIT_CPU, &limit) != 0) {
      char message[160];
      snprintf(message, sizeof message, "strata-watchdog: cannot set RLIMIT_CPU: %s", strerror(errno));
      napi_throw_error(env, "ERR_STRATA_CPU_LIMIT", message);
      return NULL;
    }
  }
  /* Capped at the hard limit, the margin is not there: set it again at every command. */
  cpu_limit_set_at_us = soft == used + (rlim_t)seconds + 1 ? now_us : 0;
  cpu_limit_seconds = seconds;
  return NULL;
}

static napi_value disable_dumping(napi_env env, napi_callback_info info) {
  (void)info;
  if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) {
    char message[160];
    snprintf(message, sizeof message, "strata-watchdog: PR_SET_DUMPABLE: %s", strerror(errno));
    napi_throw_error(env, "ERR_STRATA_DUMPABLE", message);
  }
  return NULL;
}

/* The watchdog thread waits while the worker is idle, and is woken when it is not. */
static void set_idle_state(bool value) {
  pthread_mutex_lock(&idle_lock);
  idle = value;
  if (!value) pthread_cond_signal(&wake);
  pthread_mutex_unlock(&idle_lock);
}

static uint64_t monotonic_us(void) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return (uint64_t)now.tv_sec * 1000000u + (uint64_t)now.tv_nsec / 1000u;
}

/* Polls fd without blocking for up to micros: true as soon as it is readable, hung up, or in an
 * error the read that follows will report; false when the time is up. */
static bool spin_until_readable(int fd, uint64_t micros) {
  struct pollfd watched = {.fd = fd, .events = POLLIN};
  const uint64_t until = monotonic_us() + micros;
  do {
    int n = poll(&watched, 1, 0);
    if (n > 0 || (n < 0 && errno != EINTR)) return true;
  } while (monotonic_us() < until);
  return false;
}

/* The bytes of a Uint8Array argument, or throws a TypeError naming the call and returns false. */
static bool bytes_arg(napi_env env, napi_value value, const char *call, uint8_t **data, size_t *length) {
  bool typed = false;
  napi_typedarray_type type = napi_int8_array;
  if (napi_is_typedarray(env, value, &typed) == napi_ok && typed &&
      napi_get_typedarray_info(env, value, &type, length, (void **)data, NULL, NULL) == napi_ok && type == napi_uint8_array)
    return true;
  char message[120];
  snprintf(message, sizeof message, "strata-watchdog: %s takes a Uint8Array", call);
  napi_throw_type_error(env, "ERR_INVALID_ARG_TYPE", message);
  return false;
}

/* Throws an Error for a failed read or write: its code is ERR_STRATA_CHANNEL, its message names errno. */
static void throw_channel_error(napi_env env, const char *call, int fd, int error) {
  char message[160];
  snprintf(message, sizeof message, "strata-watchdog: %s on fd %d: %s", call, fd, strerror(error));
  napi_throw_error(env, "ERR_STRATA_CHANNEL", message);
}

/* The (idle, waited) arguments of readInput and readRing: a boolean and a Float64Array of at least one element, or throws and returns false. */
static bool wait_args(napi_env env, napi_value idle, napi_value waited_value, const char *call, bool *sleeps_idle, double **waited) {
  bool typed = false;
  napi_typedarray_type type = napi_int8_array;
  size_t slots = 0;
  if (napi_get_value_bool(env, idle, sleeps_idle) == napi_ok && napi_is_typedarray(env, waited_value, &typed) == napi_ok && typed &&
      napi_get_typedarray_info(env, waited_value, &type, &slots, (void **)waited, NULL, NULL) == napi_ok && type == napi_float64_array && slots >= 1)
    return true;
  char message[160];
  snprintf(message, sizeof message, "strata-watchdog: %s's idle is a boolean and its waited a Float64Array of at least one element", call);
  napi_throw_type_error(env, "ERR_INVALID_ARG_TYPE", message);
  return false;
}

/* A blocking read (retried on EINTR); while it sleeps `idle`, the watchdog thread waits too. errno is the read's. */
static ssize_t sleeping_read(int fd, void *into, size_t length, bool idle) {
  if (idle) set_idle_state(true);
  ssize_t n;
  do n = read(fd, into, length);
  while (n < 0 && errno == EINTR);
  const int error = errno;
  if (idle) set_idle_state(false);
  errno = error;
  return n;
}

/*
 * readInput(fd, buffer, spinMicros, idle, waited): one blocking read of fd into buffer, after a
 * spin of up to spinMicros for it; when the spin did not find it and `idle` is true, the watchdog
 * thread waits while the read sleeps (no guest code runs until a command comes). The bytes read
 * (0 at the end of the stream); waited[0] is set to the microseconds it waited, spun and slept.
 * One call where a --jitless worker made three (spin, fs.readSync, and a clock read each side).
 */
static napi_value read_input(napi_env env, napi_callback_info info) {
  size_t argc = 5;
  napi_value argv[5];
  CHECK(env, napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  double fd, micros;
  uint8_t *data;
  size_t length;
  bool sleeps_idle;
  double *waited = NULL;
  if (argc < 5 || !integer_arg(env, argv[0], "fd", 0, 1048576, &fd) || !bytes_arg(env, argv[1], "readInput's buffer", &data, &length) ||
      !integer_arg(env, argv[2], "spinMicros", 0, 1000000, &micros) || !wait_args(env, argv[3], argv[4], "readInput", &sleeps_idle, &waited))
    return NULL;
  const uint64_t began = monotonic_us();
  const bool found = micros > 0 && spin_until_readable((int)fd, (uint64_t)micros);
  const ssize_t n = sleeping_read((int)fd, data, length, sleeps_idle && !found);
  const int error = errno;
  waited[0] = (double)(monotonic_us() - began);
  if (n < 0) {
    throw_channel_error(env, "read", (int)fd, error);
    return NULL;
  }
  napi_value result;
  CHECK(env, napi_create_double(env, (double)n, &result));
  return result;
}

/* writeAll(fd, bytes): writes every byte to fd (blocking: a reader that stops reading stalls the writer). */
static napi_value write_all(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2];
  CHECK(env, napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  double fd;
  uint8_t *data;
  size_t length;
  if (argc < 2 || !integer_arg(env, argv[0], "fd", 0, 1048576, &fd) || !bytes_arg(env, argv[1], "writeAll", &data, &length)) return NULL;
  size_t done = 0;
  while (done < length) {
    ssize_t n = write((int)fd, data + done, length - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      throw_channel_error(env, "write", (int)fd, errno);
      return NULL;
    }
    done += (size_t)n;
  }
  return NULL;
}

/* ---- a pipe read on the main thread's event loop ------------------------------------------- */

enum { READ_CHUNK_BYTES = 64 * 1024 };

/* One descriptor watched by the main thread's event loop (libuv's poll handle: epoll or kqueue). */
struct input_stream {
  uv_poll_t poll; /* first, so that the handle is the stream */
  napi_env env;
  napi_ref on_chunk;
  napi_async_context context;
  int fd;
  bool stopped;
  char buffer[READ_CHUNK_BYTES];
};

static void free_stream(uv_handle_t *handle) { free(handle); }

/* Stops watching: the handle is closed (and freed by libuv's close callback), the callback released. */
static void stop_stream(struct input_stream *stream) {
  if (stream->stopped) return;
  stream->stopped = true;
  uv_poll_stop(&stream->poll);
  napi_async_destroy(stream->env, stream->context);
  napi_delete_reference(stream->env, stream->on_chunk);
  uv_close((uv_handle_t *)&stream->poll, free_stream);
}

/* The environment is going away (a Worker thread's end, or the process's): stop without calling back. */
static void stream_cleanup_hook(void *argument) { stop_stream(argument); }

/* onChunk(Buffer) for `length` bytes, onChunk(undefined) for none, as a callback from the event
 * loop: its microtasks run after it. An exception it throws is uncaught (the worker ends). */
static void deliver_input(struct input_stream *stream, size_t length) {
  napi_env env = stream->env;
  napi_handle_scope scope;
  if (napi_open_handle_scope(env, &scope) != napi_ok) return;
  napi_value callback, receiver, argument;
  /* the receiver is the global object: napi_make_callback takes an object, not undefined */
  bool made = napi_get_reference_value(env, stream->on_chunk, &callback) == napi_ok && napi_get_global(env, &receiver) == napi_ok &&
              (length == 0 ? napi_get_undefined(env, &argument) == napi_ok
                           : napi_create_buffer_copy(env, length, stream->buffer, NULL, &argument) == napi_ok);
  if (made && napi_make_callback(env, stream->context, receiver, callback, 1, &argument, NULL) == napi_pending_exception) {
    napi_value error;
    if (napi_get_and_clear_last_exception(env, &error) == napi_ok) napi_fatal_exception(env, error);
  }
  napi_close_handle_scope(env, scope);
}

/* The descriptor is readable (or hung up): one read(), its bytes delivered; at the end or on an
 * error, the stream stops and onChunk(undefined) is called once. */
static void on_readable(uv_poll_t *handle, int status, int events) {
  (void)events;
  struct input_stream *stream = (struct input_stream *)handle;
  if (stream->stopped) return;
  ssize_t n = 0;
  if (status == 0) {
    do n = read(stream->fd, stream->buffer, sizeof stream->buffer);
    while (n < 0 && errno == EINTR);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return; /* woken for nothing: wait again */
  }
  if (n > 0) {
    deliver_input(stream, (size_t)n);
    return;
  }
  napi_remove_env_cleanup_hook(stream->env, stream_cleanup_hook, stream);
  deliver_input(stream, 0); /* before the stop, which releases the callback */
  stop_stream(stream);
}

static napi_value stream_input(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2];
  CHECK(env, napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  double fd;
  if (argc < 2 || !integer_arg(env, argv[0], "fd", 0, 1048576, &fd)) return NULL;
  napi_valuetype type;
  CHECK(env, napi_typeof(env, argv[1], &type));
  if (type != napi_function) {
    napi_throw_type_error(env, "ERR_INVALID_ARG_TYPE", "strata-watchdog: streamInput(fd, onChunk) takes a function");
    return NULL;
  }
  /* Non-blocking, so that a read after a wake-up for nothing never holds the main thread. */
  int flags = fcntl((int)fd, F_GETFL);
  if (flags < 0 || fcntl((int)fd, F_SETFL, flags | O_NONBLOCK) < 0) {
    char message[160];
    snprintf(message, sizeof message, "strata-watchdog: streamInput: fd %d: %s", (int)fd, strerror(errno));
    napi_throw_error(env, "ERR_STRATA_READER", message);
    return NULL;
  }
  uv_loop_t *loop;
  CHECK(env, napi_get_uv_event_loop(env, &loop));
  struct input_stream *stream = calloc(1, sizeof *stream);
  if (stream == NULL) {
    napi_throw_error(env, "ERR_STRATA_READER", "strata-watchdog: streamInput: out of memory");
    return NULL;
  }
  stream->env = env;
  stream->fd = (int)fd;
  napi_value name;
  if (napi_create_string_utf8(env, "strata-read", NAPI_AUTO_LENGTH, &name) != napi_ok ||
      napi_async_init(env, NULL, name, &stream->context) != napi_ok) {
    free(stream);
    napi_throw_error(env, "ERR_STRATA_READER", "strata-watchdog: streamInput: cannot make its async context");
    return NULL;
  }
  if (napi_create_reference(env, argv[1], 1, &stream->on_chunk) != napi_ok) {
    napi_async_destroy(env, stream->context);
    free(stream);
    napi_throw_error(env, "ERR_STRATA_READER", "strata-watchdog: streamInput: cannot keep the callback");
    return NULL;
  }
  /* Referenced (libuv's default): while the worker waits for a chunk, this keeps its event loop alive. */
  int error = uv_poll_init(loop, &stream->poll, stream->fd);
  bool initialized = error == 0;
  if (initialized) error = uv_poll_start(&stream->poll, UV_READABLE | UV_DISCONNECT, on_readable);
  if (error != 0) {
    char message[160];
    snprintf(message, sizeof message, "strata-watchdog: streamInput: cannot watch fd %d: %s", stream->fd, uv_strerror(error));
    napi_delete_reference(env, stream->on_chunk);
    napi_async_destroy(env, stream->context);
    /* a handle libuv knows is released through uv_close, one it never knew directly */
    if (initialized) uv_close((uv_handle_t *)&stream->poll, free_stream);
    else free(stream);
    napi_throw_error(env, "ERR_STRATA_READER", message);
    return NULL;
  }
  napi_add_env_cleanup_hook(env, stream_cleanup_hook, stream);
  return NULL;
}

/* ---- a TCP connect attempt ------------------------------------------------------------------ */

static napi_value tcp_connect(napi_env env, napi_callback_info info) {
  size_t argc = 3;
  napi_value argv[3];
  CHECK(env, napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  char address_text[INET_ADDRSTRLEN + 1];
  size_t length = 0;
  double port, timeout_ms;
  if (argc < 3 || napi_get_value_string_utf8(env, argv[0], address_text, sizeof address_text, &length) != napi_ok) {
    napi_throw_type_error(env, "ERR_INVALID_ARG_TYPE", "strata-watchdog: tcpConnect(ipv4, port, timeoutMs) takes an IPv4 address string");
    return NULL;
  }
  if (!integer_arg(env, argv[1], "port", 1, 65535, &port) || !integer_arg(env, argv[2], "timeoutMs", 1, 60000, &timeout_ms)) return NULL;
  struct sockaddr_in address = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
  if (length >= INET_ADDRSTRLEN || inet_pton(AF_INET, address_text, &address.sin_addr) != 1) {
    napi_throw_type_error(env, "ERR_INVALID_ARG_VALUE", "strata-watchdog: tcpConnect: not an IPv4 address");
    return NULL;
  }
  int outcome = 0;
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) outcome = errno;
  else {
    if (connect(fd, (const struct sockaddr *)&address, sizeof address) != 0) {
      outcome = errno;
      if (outcome == EINPROGRESS) {
        struct pollfd watched = {.fd = fd, .events = POLLOUT};
        int n;
        do n = poll(&watched, 1, (int)timeout_ms);
        while (n < 0 && errno == EINTR);
        socklen_t size = sizeof outcome;
        if (n == 0) outcome = -1;
        else if (n < 0) outcome = errno;
        else if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &outcome, &size) != 0) outcome = errno;
      }
    }
    close(fd);
  }
  return strata_number(env, outcome);
}

/* ---- a fingerprint of some bytes ----------------------------------------------------------- */

static napi_value fingerprint(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  CHECK(env, napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  uint8_t *bytes = NULL;
  size_t length = 0;
  /* a missing argument is undefined (napi_get_cb_info fills the rest): refused as not a Uint8Array */
  if (!bytes_arg(env, argv[0], "fingerprint(bytes)", &bytes, &length)) return NULL;
  uint64_t hash = 0xcbf29ce484222325ULL; /* FNV-1a 64: offset basis, then xor and multiply by the prime per byte */
  for (size_t i = 0; i < length; i++) hash = (hash ^ bytes[i]) * 0x100000001b3ULL;
  char hex[17];
  snprintf(hex, sizeof hex, "%016llx", (unsigned long long)hash);
  napi_value result;
  CHECK(env, napi_create_string_latin1(env, hex, 16, &result));
  return result;
}

/* ---- the worker's ends of the frame rings (frame-ring.h) ------------------------------------- */

static uint8_t *rings_base;                /* NULL until attachFrameRing */
static uint32_t out_tail;                  /* this side's own count of the frames' bytes published */
static uint32_t heads[FRAME_RING_COUNT];   /* this side's own count of the bytes taken from rings 1 and 2 */
static int bell_fds[FRAME_RING_COUNT];     /* each ring's doorbell; bell_fds[0] (fd 1) also tells the parent of room */

static napi_value attach_frame_ring(napi_env env, napi_callback_info info) {
  size_t argc = 1 + FRAME_RING_COUNT;
  napi_value argv[1 + FRAME_RING_COUNT];
  CHECK(env, napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  double fd, bells[FRAME_RING_COUNT];
  if (argc < 1 + FRAME_RING_COUNT || !integer_arg(env, argv[0], "fd", 0, 1048576, &fd)) return NULL;
  for (int i = 0; i < FRAME_RING_COUNT; i++)
    if (!integer_arg(env, argv[1 + i], "a doorbell's fd", 0, 1048576, &bells[i])) return NULL;
  if (rings_base != NULL) {
    napi_throw_error(env, "ERR_STRATA_FRAME_RING", "strata-watchdog: the frame rings are attached already");
    return NULL;
  }
  struct stat about;
  const int seals = fcntl((int)fd, F_GET_SEALS);
  const int needed = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL;
  const bool stated = fstat((int)fd, &about) == 0;
  if (!stated || about.st_size != FRAME_RINGS_BYTES || seals < 0 || (seals & needed) != needed) {
    char message[200];
    snprintf(message, sizeof message, "strata-watchdog: fd %d is not the sealed frame rings of %u bytes (%s, seals %d)", (int)fd, FRAME_RINGS_BYTES,
             stated ? "its size differs" : strerror(errno), seals);
    napi_throw_error(env, "ERR_STRATA_FRAME_RING", message);
    return NULL;
  }
  void *base = mmap(NULL, FRAME_RINGS_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, (int)fd, 0);
  if (base == MAP_FAILED) {
    throw_channel_error(env, "mmap", (int)fd, errno);
    return NULL;
  }
  close((int)fd);
  rings_base = base;
  out_tail = atomic_load(&frame_ring(base, FRAME_RING_OUT)->tail);
  for (int i = 0; i < FRAME_RING_COUNT; i++) {
    heads[i] = atomic_load(&frame_ring(base, i)->head);
    bell_fds[i] = (int)bells[i];
  }
  return NULL;
}

static bool write_byte(int fd) {
  const uint8_t byte = 1;
  ssize_t n;
  do n = write(fd, &byte, 1);
  while (n < 0 && errno == EINTR);
  return n == 1;
}

static bool attached(napi_env env, const char *call) {
  if (rings_base != NULL) return true;
  char message[120];
  snprintf(message, sizeof message, "strata-watchdog: %s before attachFrameRing", call);
  napi_throw_error(env, "ERR_STRATA_FRAME_RING", message);
  return false;
}

static napi_value write_frames(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  CHECK(env, napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  uint8_t *bytes;
  size_t length;
  if (argc < 1 || !bytes_arg(env, argv[0], "writeFrames", &bytes, &length) || !attached(env, "writeFrames")) return NULL;
  struct frame_ring_header *ring = frame_ring(rings_base, FRAME_RING_OUT);
  size_t done = 0;
  while (done < length) {
    const uint32_t head = atomic_load(&ring->head);
    const uint32_t count = frame_ring_put(ring, &out_tail, bytes + done, length - done);
    done += count;
    if (count > 0 && frame_ring_must_ring(ring) && !write_byte(bell_fds[FRAME_RING_OUT])) {
      throw_channel_error(env, "write", bell_fds[FRAME_RING_OUT], errno);
      return NULL;
    }
    if (count > 0) continue;
    /* full (the parent was told of what is there): sleep until it takes some */
    atomic_store(&ring->writer_waiting, 1);
    if (atomic_load(&ring->head) == head) {
      const struct timespec patience = {1, 0}; /* woken by the parent; the timeout only looks again */
      syscall(SYS_futex, &ring->head, FUTEX_WAIT, head, &patience, NULL, 0);
    }
    atomic_store(&ring->writer_waiting, 0);
  }
  return NULL;
}

/* Takes what is unread on ring `which` (up to `length`) into `into`; when the parent waits for room there, tells it (a byte on fd 1). */
static uint32_t take_ring(int which, uint8_t *into, size_t length, int *error) {
  struct frame_ring_header *ring = frame_ring(rings_base, which);
  const uint32_t unread = frame_ring_tail(ring) - heads[which];
  const uint32_t count = unread < length ? unread : (uint32_t)length;
  if (count == 0) return 0;
  frame_ring_take(ring, &heads[which], into, count);
  if (atomic_exchange(&ring->writer_waiting, 0) != 0 && !write_byte(bell_fds[FRAME_RING_OUT])) *error = errno;
  return count;
}

/* Ring `which` (1 or 2) and the buffer to take into, or throws and returns false. */
static bool ring_args(napi_env env, napi_value which_value, napi_value buffer, const char *call, int *which, uint8_t **data, size_t *length) {
  double number;
  if (!integer_arg(env, which_value, "which", FRAME_RING_COMMANDS, FRAME_RING_REPLIES, &number) || !bytes_arg(env, buffer, call, data, length) ||
      !attached(env, call))
    return false;
  *which = (int)number;
  return true;
}

/*
 * readRing(which, buffer, spinMicros, idle, waited): the worker's blocking read of ring `which`
 * (1, its commands; 2, the replies to a host call it is blocked on), as readInput was on the pipe:
 * what is there; else a spin of up to spinMicros for it; else a sleep on its doorbell (fd 0 or 3),
 * with the watchdog waiting too when `idle`. The bytes taken (0 once the parent closed the
 * doorbell's pipe and the ring is empty); waited[0] the microseconds it waited.
 */
static napi_value read_ring(napi_env env, napi_callback_info info) {
  size_t argc = 5;
  napi_value argv[5];
  CHECK(env, napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  int which;
  uint8_t *data;
  size_t length;
  double micros;
  bool sleeps_idle;
  double *waited = NULL;
  if (argc < 5 || !ring_args(env, argv[0], argv[1], "readRing", &which, &data, &length) || !integer_arg(env, argv[2], "spinMicros", 0, 1000000, &micros) ||
      !wait_args(env, argv[3], argv[4], "readRing", &sleeps_idle, &waited))
    return NULL;
  struct frame_ring_header *ring = frame_ring(rings_base, which);
  const int bell_fd = bell_fds[which];
  const uint64_t began = monotonic_us();
  int error = 0;
  bool spun = micros <= 0;
  uint32_t count;
  while ((count = take_ring(which, data, length, &error)) == 0 && error == 0) {
    if (!spun) {
      frame_ring_spin(ring, heads[which], micros);
      spun = true;
      continue;
    }
    uint8_t bells[4096]; /* every byte rung while the worker found its input by spinning: one read takes them all */
    const ssize_t n = sleeping_read(bell_fd, bells, sizeof bells, sleeps_idle);
    error = n < 0 ? errno : 0;
    if (n == 0) { /* the parent closed the doorbell's pipe: what is left on the ring, then the end */
      count = take_ring(which, data, length, &error);
      break;
    }
  }
  waited[0] = (double)(monotonic_us() - began);
  if (error != 0) {
    throw_channel_error(env, "read", bell_fd, error);
    return NULL;
  }
  return strata_number(env, count);
}

/* takeRing(which, buffer): what is on ring `which` now (up to the buffer's length), never waiting; 0 for nothing. */
static napi_value take_ring_now(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2];
  CHECK(env, napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  int which;
  uint8_t *data;
  size_t length;
  if (argc < 2 || !ring_args(env, argv[0], argv[1], "takeRing", &which, &data, &length)) return NULL;
  int error = 0;
  const uint32_t count = take_ring(which, data, length, &error);
  if (error != 0) {
    throw_channel_error(env, "write", bell_fds[FRAME_RING_OUT], error);
    return NULL;
  }
  return strata_number(env, count);
}

NAPI_MODULE_INIT() {
  /* Configured, not online: a CPU brought online later counts already. Read at load, before a
   * layer takes /sys away; unknown: as if every second of wall time could be a second per CPU of 1024. */
  cpu_count = sysconf(_SC_NPROCESSORS_CONF);
  if (cpu_count < 1) cpu_count = 1024;
  napi_property_descriptor properties[] = {
      {"start", NULL, start, NULL, NULL, NULL, napi_enumerable, NULL},
      {"rss", NULL, rss, NULL, NULL, NULL, napi_enumerable, NULL},
      {"threads", NULL, threads, NULL, NULL, NULL, napi_enumerable, NULL},
      {"setCpuSoftLimit", NULL, set_cpu_soft_limit, NULL, NULL, NULL, napi_enumerable, NULL},
      {"disableDumping", NULL, disable_dumping, NULL, NULL, NULL, napi_enumerable, NULL},
      {"readInput", NULL, read_input, NULL, NULL, NULL, napi_enumerable, NULL},
      {"writeAll", NULL, write_all, NULL, NULL, NULL, napi_enumerable, NULL},
      {"attachFrameRing", NULL, attach_frame_ring, NULL, NULL, NULL, napi_enumerable, NULL},
      {"writeFrames", NULL, write_frames, NULL, NULL, NULL, napi_enumerable, NULL},
      {"readRing", NULL, read_ring, NULL, NULL, NULL, napi_enumerable, NULL},
      {"takeRing", NULL, take_ring_now, NULL, NULL, NULL, napi_enumerable, NULL},
      {"streamInput", NULL, stream_input, NULL, NULL, NULL, napi_enumerable, NULL},
      {"tcpConnect", NULL, tcp_connect, NULL, NULL, NULL, napi_enumerable, NULL},
      {"fingerprint", NULL, fingerprint, NULL, NULL, NULL, napi_enumerable, NULL},
  };
  CHECK(env, napi_define_properties(env, exports, sizeof properties / sizeof properties[0], properties));
  return exports;
}
