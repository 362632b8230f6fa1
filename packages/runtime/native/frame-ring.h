/*
 * The frame rings: the bytes between a worker and its parent, through memory both map instead of
 * pipes (Linux). Three rings in one sealed memfd, each a byte stream exactly as its pipe was, with
 * one writer and one reader:
 *
 *   ring 0, FRAME_RING_OUT:      the worker's frames (writer: the watchdog addon's writeFrames;
 *                                reader: the spawn addon's takeFrames); the parent's
 *                                FrameReader decodes them as before
 *   ring 1, FRAME_RING_COMMANDS: the parent's commands (writer: the spawn addon's putFrames;
 *                                reader: the watchdog addon's readRing / takeRing)
 *   ring 2, FRAME_RING_REPLIES:  the parent's answers to the host call the guest is blocked on
 *                                (the same functions)
 *
 * Why: a round trip through pipes pays two system calls each way and two wake-ups. With the
 * rings a write is a copy, and a side that expects bytes within microseconds spins on the ring's
 * tail instead of sleeping (a one-byte ping-pong between a Node parent and a --jitless child
 * here: 24 µs through pipes, 9 µs with the answer on a ring, 3 µs with both on rings).
 *
 * The doorbell: when its reader is not spinning, a writer writes one byte to the pipe the ring
 * replaced (fd 1 for ring 0, fd 0 for ring 1, fd 3 for ring 2), so that a sleeping reader wakes; one byte at a time
 * is pending (`bell`). Both sides use sequentially consistent operations on the flags, so that
 * either the writer sees the reader's flag or the reader sees the writer's tail: no wake-up is
 * lost.
 *
 *   writer: publish tail;           if (!reader_spinning && !exchange(bell, 1)) ring
 *   reader: reader_spinning = 0;    bell = 0;  read tail
 *
 * A full ring: its writer sets `writer_waiting`. The worker then sleeps on the futex word `head`
 * until the parent wakes it; the parent, which must not block, keeps the rest and is told by a
 * byte on fd 1 when the worker has taken some. The memory is a sealed memfd (no shrink, no grow:
 * a worker can never make the parent's mapping fault). The parent keeps its own count of what it
 * took and of what it wrote: a tail of ring 0 more than the capacity ahead is a protocol
 * violation, and the `head` of rings 1 and 2 (which the worker writes) only ever limits how much
 * the parent writes, always within the ring.
 */
#ifndef STRATA_FRAME_RING_H
#define STRATA_FRAME_RING_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

/* Data bytes of one ring: a power of two, as large as a pipe's default buffer. */
#define FRAME_RING_CAPACITY (64u * 1024u)
/* A ring's header takes one page; its data follows. */
#define FRAME_RING_HEADER_BYTES 4096u
#define FRAME_RING_BYTES (FRAME_RING_HEADER_BYTES + FRAME_RING_CAPACITY)
/* The memfd: its rings one after the other. */
enum { FRAME_RING_OUT = 0, FRAME_RING_COMMANDS = 1, FRAME_RING_REPLIES = 2, FRAME_RING_COUNT = 3 };
#define FRAME_RINGS_BYTES (FRAME_RING_COUNT * FRAME_RING_BYTES)

/* Counters run modulo 2^32 (futex words are 32 bits); tail - head is what is unread. */
struct frame_ring_header {
  _Atomic uint32_t tail;           /* written by the writer: bytes published so far */
  _Atomic uint32_t writer_waiting; /* the writer waits for room */
  _Atomic uint32_t bell;           /* a doorbell byte is on its way (set by the writer, cleared by the reader) */
  uint8_t writer_line[52];         /* the reader's fields on a cache line of their own */
  _Atomic uint32_t head;           /* written by the reader: bytes taken so far; the worker's futex word */
  _Atomic uint32_t reader_spinning;
};

/* The tests forge a ring from JavaScript at these offsets (test/fixtures/ring-forger.ts). */
_Static_assert(offsetof(struct frame_ring_header, tail) == 0, "tail at 0");
_Static_assert(offsetof(struct frame_ring_header, head) == 64, "head at 64");

static inline struct frame_ring_header *frame_ring(void *rings, int which) {
  return (struct frame_ring_header *)((uint8_t *)rings + (size_t)which * FRAME_RING_BYTES);
}

static inline uint8_t *frame_ring_data(struct frame_ring_header *ring) { return (uint8_t *)ring + FRAME_RING_HEADER_BYTES; }

/* The writer: copies up to `length` bytes in after `*tail` as room allows and publishes them; how many. */
static inline uint32_t frame_ring_put(struct frame_ring_header *ring, uint32_t *tail, const uint8_t *bytes, size_t length) {
  const uint32_t unread = *tail - atomic_load(&ring->head);
  const uint32_t room = unread >= FRAME_RING_CAPACITY ? 0 : FRAME_RING_CAPACITY - unread;
  const uint32_t count = length < room ? (uint32_t)length : room;
  if (count == 0) return 0;
  const uint32_t start = *tail % FRAME_RING_CAPACITY;
  const uint32_t first = count < FRAME_RING_CAPACITY - start ? count : FRAME_RING_CAPACITY - start;
  memcpy(frame_ring_data(ring) + start, bytes, first);
  memcpy(frame_ring_data(ring), bytes + first, count - first);
  *tail += count;
  atomic_store(&ring->tail, *tail);
  return count;
}

/* The writer, after a put: whether it must write a doorbell byte (the reader does not spin, and none is pending). */
static inline bool frame_ring_must_ring(struct frame_ring_header *ring) {
  return atomic_load(&ring->reader_spinning) == 0 && atomic_exchange(&ring->bell, 1) == 0;
}

/* The reader: the bell down, then the tail (a tail published after this read rings again). */
static inline uint32_t frame_ring_tail(struct frame_ring_header *ring) {
  atomic_store(&ring->bell, 0);
  return atomic_load(&ring->tail);
}

/* The reader: copies `count` unread bytes after `*head` out and moves head past them. */
static inline void frame_ring_take(struct frame_ring_header *ring, uint32_t *head, uint8_t *into, uint32_t count) {
  const uint32_t start = *head % FRAME_RING_CAPACITY;
  const uint32_t first = count < FRAME_RING_CAPACITY - start ? count : FRAME_RING_CAPACITY - start;
  memcpy(into, frame_ring_data(ring) + start, first);
  memcpy(into + first, frame_ring_data(ring), count - first);
  *head += count;
  atomic_store(&ring->head, *head);
}

#if defined(__x86_64__) || defined(__i386__)
#define FRAME_RING_RELAX() __builtin_ia32_pause()
#elif defined(__aarch64__)
#define FRAME_RING_RELAX() __asm__ volatile("yield")
#else
#define FRAME_RING_RELAX() ((void)0)
#endif

static inline uint64_t frame_ring_now_ns(void) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
}

/*
 * The reader: spins until the tail moves past `head` or `micros` have passed, with its flag up
 * (the writer rings no bell meanwhile); the tail last read, after the flag is down (a tail
 * published while it was up rang no bell).
 */
static inline uint32_t frame_ring_spin(struct frame_ring_header *ring, uint32_t head, double micros) {
  atomic_store(&ring->reader_spinning, 1);
  const uint64_t deadline = frame_ring_now_ns() + (uint64_t)(micros * 1000);
  for (unsigned turn = 1; atomic_load_explicit(&ring->tail, memory_order_acquire) == head; turn++) {
    FRAME_RING_RELAX();
    if (turn % 64 == 0 && frame_ring_now_ns() >= deadline) break;
  }
  atomic_store(&ring->reader_spinning, 0);
  return atomic_load(&ring->tail);
}

#endif
