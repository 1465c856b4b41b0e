/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The ring buffer's reader: a thread of its own that moves the records
 * the BPF programs submit into a queue in memory (lib/rec_queue.h) as
 * they come, so that whatever holds up the collector (a part written out
 * past --memory, a process's symbols read, a burst of GPU records) makes
 * records wait in memory, not in the kernel's ring, which would refuse
 * them once full.
 *
 *	ring_reader_init(&rr, fds, n, crings, cap, alive, ctx)
 *						the thread starts reading
 *	ring_reader_take(&rr, ms, fn, ctx)      records, in the order read
 *	ring_reader_stop(&rr)                   a last read; the thread ends
 *	ring_reader_release(&rr)
 *
 * At most cap bytes wait: past that the thread stops reading until the
 * taker catches up, the ring fills, and the BPF programs count what it
 * refuses, as they always do.  One thread takes.
 */
#ifndef GPUBPF_RING_READER_H
#define GPUBPF_RING_READER_H

#include <pthread.h>
#include <stddef.h>
#include "lib/rec_queue.h"
#include "record/cpu_rings.h"

struct ring_buffer;

/*
 * The reader thread's priority, and the collector's while it records
 * (record_loop()): the highest of their class, where root may set it.
 */
#define RECORD_NICE (-20)

struct ring_reader {
	struct rec_queue q;
	struct ring_buffer *first;      /* the first ring */
	struct ring_buffer *rest;       /* the others, NULL if none */
	struct cpu_rings crings;        /* read with the first ring, before it */
	size_t rest_bytes;              /* the thread's: read from them since the first was */
	int epoll_fd;           /* the rings' wakeups (edge-triggered) and stop_fd */
	int stop_fd;            /* an eventfd: wakes the thread to stop */
	pthread_t thread;
	void (*alive)(void *ctx);       /* called at each wake of the thread, or NULL */
	void *alive_ctx;
	int started;
	int stopping;           /* atomic: read a last time and end */
	int error;              /* -errno the thread ended on, read after it ended */
};

/*
 * Read the n BPF ring buffer maps ring_fds, and the per-CPU call rings
 * crings (NULL: none), on a new thread, into a queue of at most cap bytes
 * (more than 0): each ring's records in their order, the rings' between
 * them in the order read.  The per-CPU rings and the first ring are read
 * again between every 256 KiB read from the others, so that a burst there
 * does not leave them to fill.  alive (NULL: none) is called with ctx
 * each time the thread wakes, at least every 100 ms while the process
 * runs, from that thread.  0 or -errno, the reader released.
 */
int ring_reader_init(struct ring_reader *rr, const int *ring_fds, int n,
		     const struct cpu_rings *crings, size_t cap,
		     void (*alive)(void *ctx), void *ctx);

/*
 * Hand the records waiting, oldest first, to fn (libbpf's ring_buffer
 * callback shape), waiting up to timeout_ms for one when none waits:
 * rec_queue_take().  Once the thread has ended on an error and all it
 * read was taken, that -errno.
 */
int ring_reader_take(struct ring_reader *rr, int timeout_ms,
		     int (*fn)(void *ctx, void *data, size_t size), void *ctx);

/*
 * Read the ring a last time and end the thread; what it read is still
 * there to take.  Safe to call twice, and on a reader never started.
 */
void ring_reader_stop(struct ring_reader *rr);

/* Stop, and free the queue with anything left in it; a zeroed one too. */
void ring_reader_release(struct ring_reader *rr);

#endif
