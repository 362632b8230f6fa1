/*
 * The frame ring: the bytes a worker sends its parent, through memory both map instead of a pipe
 * (Linux). One writer (the worker, in the watchdog addon) and one reader (the parent, in the spawn
 * addon), a byte stream exactly as the pipe was: the parent's FrameReader decodes it as before.
 *
 * Why: a round trip through pipes pays two system calls and two wake-ups. With the ring, the
 * worker's write is a copy, and the parent, which expects an answer within microseconds, spins on
 * the ring's tail instead of sleeping in its event loop (a one-byte ping-pong between a Node
 * parent and a --jitless child here: 24 µs through pipes, 9 µs with the answer on the ring).
 *
 * The doorbell: when the parent is not spinning, the worker writes one byte to fd 1 (the pipe that
 * carried the frames before) so that the parent's event loop wakes; one byte at a time is
 * pending (`bell`). Both sides use sequentially consistent operations on the flags, so that either
 * the writer sees the reader's flag or the reader sees the writer's tail: no wake-up is lost.
 *
 *   writer: publish tail;           if (!reader_spinning && !exchange(bell, 1)) ring
 *   reader: reader_spinning = 0;    bell = 0;  read tail
 *
 * A full ring: the writer sets `writer_waiting` and sleeps on the futex word `head`; the reader
 * wakes it after it moved `head`. The memory is a sealed memfd (no shrink, no grow: a worker can
 * never make the parent's mapping fault), and the parent keeps its own copy of `head` and checks
 * every tail it reads: a tail more than the capacity ahead is a protocol violation.
 */
#ifndef STRATA_FRAME_RING_H
#define STRATA_FRAME_RING_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

/* Data bytes: a power of two, as large as a pipe's default buffer. */
#define FRAME_RING_CAPACITY (64u * 1024u)
/* The header takes one page; the data follows it. */
#define FRAME_RING_HEADER_BYTES 4096u
#define FRAME_RING_BYTES (FRAME_RING_HEADER_BYTES + FRAME_RING_CAPACITY)

/* Counters run modulo 2^32 (futex words are 32 bits); tail - head is what is unread. */
struct frame_ring_header {
  _Atomic uint32_t tail;           /* written by the worker: bytes published so far */
  _Atomic uint32_t writer_waiting; /* the worker sleeps on `head` for room */
  _Atomic uint32_t bell;           /* a doorbell byte is on its way (set by the worker, cleared by the parent) */
  uint8_t writer_line[52];         /* the parent's fields on a cache line of their own */
  _Atomic uint32_t head;           /* written by the parent: bytes consumed so far; the futex word */
  _Atomic uint32_t reader_spinning;
};

/* The tests forge a ring from JavaScript at these offsets (test/fixtures/ring-forger.ts). */
_Static_assert(offsetof(struct frame_ring_header, tail) == 0, "tail at 0");
_Static_assert(offsetof(struct frame_ring_header, head) == 64, "head at 64");

static inline uint8_t *frame_ring_data(void *base) { return (uint8_t *)base + FRAME_RING_HEADER_BYTES; }

#endif
