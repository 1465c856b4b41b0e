/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A queue of records (byte strings of any size) from one producer thread
 * to one consumer thread, in chunks of memory reused as they empty.
 *
 *	producer                         consumer
 *	rec_queue_push(&q, data, size)   rec_queue_take(&q, ms, fn, ctx)
 *	rec_queue_publish(&q, wake)
 *	rec_queue_end(&q)
 *
 * Pushed records reach the consumer when published: at each
 * rec_queue_publish(), and by themselves every REC_QUEUE_PUBLISH bytes
 * (which wakes a consumer waiting for them, as a full queue does).
 * At most cap bytes wait: a push past that waits until the consumer takes
 * some, unless the consumer lifted the cap (rec_queue_uncap()).
 */
#ifndef GPUBPF_REC_QUEUE_H
#define GPUBPF_REC_QUEUE_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#define REC_QUEUE_PUBLISH (64u << 10)

struct rq_chunk;

struct rec_queue {
	size_t cap;
	pthread_mutex_t lock;
	pthread_cond_t more;    /* records published, or the end */
	pthread_cond_t room;    /* bytes taken, or the cap lifted */
	/* under lock */
	struct rq_chunk *head;  /* the oldest chunk, which the consumer reads */
	struct rq_chunk *spare; /* emptied chunks kept for reuse */
	int nspare;
	size_t queued;          /* bytes published and not taken yet */
	size_t queued_max;      /* the most that waited at once */
	size_t full_waits;      /* pushes that waited for room */
	uint64_t full_ns;       /* how long they waited, in all */
	int uncapped;
	int ended;
	/* the producer's own */
	struct rq_chunk *tail;  /* written past what is published of it */
	size_t unpublished;     /* bytes pushed since the last publish */
	size_t queued_seen;     /* queued then (it only falls since) */
	size_t mapped;          /* chunks mapped so far (reuse maps none) */
	/* the consumer's own */
	size_t head_off;
};

/* An empty queue of at most cap bytes (more than 0).  0 or -ENOMEM. */
int rec_queue_init(struct rec_queue *q, size_t cap);

/* Free it, with anything left in it; a zeroed one too. */
void rec_queue_release(struct rec_queue *q);

/*
 * Producer: append a record of size bytes, waiting for room while the
 * queue holds cap bytes.  0, or -ENOMEM (the record is not queued).
 */
int rec_queue_push(struct rec_queue *q, const void *data, size_t size);

/*
 * Producer: let the consumer see what was pushed; wake: wake it if it
 * waits for records, else it sees them when its wait times out (a wakeup
 * for a few records costs more than they do).
 */
void rec_queue_publish(struct rec_queue *q, int wake);

/* Producer: publish; nothing more comes, so a take waits no more. */
void rec_queue_end(struct rec_queue *q);

/* Consumer: pushes no longer wait for room. */
void rec_queue_uncap(struct rec_queue *q);

/*
 * Consumer: hand the records published, oldest first, to fn, waiting up
 * to timeout_ms for one when none is there (not after the end).  Stops at
 * fn's first negative return and returns it (that record counts as
 * taken), else the number of records handed; it returns after some
 * megabytes even while more wait.
 */
int rec_queue_take(struct rec_queue *q, int timeout_ms,
		   int (*fn)(void *ctx, void *data, size_t size), void *ctx);

/* Consumer: 1 when the queue has ended and everything was taken. */
int rec_queue_done(struct rec_queue *q);

#endif
