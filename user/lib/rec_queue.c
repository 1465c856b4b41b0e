// SPDX-License-Identifier: BSD-2-Clause
/* The record queue; see rec_queue.h. */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <sys/mman.h>
#include "lib/rec_queue.h"

/*
 * Chunks are mapped whole, populated at once: a queue that grows through a
 * burst would otherwise take a page fault every 4 KiB, each as dear as a
 * system call, on the thread that must keep up with the burst.  And on
 * huge pages where the kernel lends them (transparent huge pages, even in
 * "madvise" mode): on a VM whose hypervisor shadows the page tables, the
 * first write to each 4 KiB page costs ~10 us even once populated, which
 * made copying out an 8 KiB batch of GPU records cost ~20 us, not ~1.
 */
#define RQ_MAP (2u << 20)       /* a chunk's mapping (a huge page); a larger record gets its own */
#define RQ_MIN_SPARES 4         /* emptied chunks kept, whatever the cap */
#define RQ_TAKE_MAX (16u << 20) /* what one take hands over before it returns */
#define RQ_HDR 8                /* before each record: its size (keeps it 8-aligned) */

struct rq_chunk {
	struct rq_chunk *next;  /* set, under lock, as it is sealed */
	size_t size;            /* bytes of data[] */
	size_t used;            /* the producer's: bytes written */
	size_t published;       /* under lock: bytes the consumer may read */
	int sealed;             /* under lock: complete, next follows */
	_Alignas(8) char data[]; /* records 8-aligned, as in the BPF ring */
};

#define RQ_CHUNK (RQ_MAP - sizeof(struct rq_chunk))

static size_t entry_bytes(size_t size)
{
	return RQ_HDR + ((size + 7) & ~(size_t)7);
}

static void chunk_unmap(struct rq_chunk *c)
{
	munmap(c, sizeof(*c) + c->size);
}

/* bytes of memory, populated: a chunk's RQ_MAP aligned, in a huge page if it can be. */
static void *chunk_map(size_t bytes)
{
	char *raw, *p;

	if (bytes != RQ_MAP) {
		p = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
		return p == MAP_FAILED ? NULL : p;
	}
	/* aligned: map twice the size, keep the aligned half */
	raw = mmap(NULL, 2 * bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (raw == MAP_FAILED)
		return NULL;
	p = (char *)(((uintptr_t)raw + bytes - 1) & ~(uintptr_t)(bytes - 1));
	if (p > raw)
		munmap(raw, p - raw);
	if (p + bytes < raw + 2 * bytes)
		munmap(p + bytes, raw + 2 * bytes - (p + bytes));
	madvise(p, bytes, MADV_HUGEPAGE);       /* no huge pages: 4 KiB ones */
	if (!madvise(p, bytes, MADV_POPULATE_WRITE))
		return p;
	if (errno == EINVAL) {                  /* before Linux 5.14 */
		for (size_t off = 0; off < bytes; off += 4096)
			p[off] = 0;
		return p;
	}
	munmap(p, bytes);                       /* no memory for it */
	return NULL;
}

/* A chunk with room for need bytes: a spare one if it fits. */
static struct rq_chunk *chunk_get(struct rec_queue *q, size_t need)
{
	struct rq_chunk *c = NULL;
	size_t size = need > RQ_CHUNK ? need : RQ_CHUNK;

	if (size == RQ_CHUNK) {
		pthread_mutex_lock(&q->lock);
		c = q->spare;
		if (c) {
			q->spare = c->next;
			q->nspare--;
		}
		pthread_mutex_unlock(&q->lock);
	}
	if (!c) {
		c = chunk_map(sizeof(*c) + size);
		if (!c)
			return NULL;
		c->size = size;
		q->mapped++;
	}
	c->next = NULL;
	c->used = c->published = 0;
	c->sealed = 0;
	return c;
}

/*
 * Under lock: a chunk the consumer is done with, kept for reuse while the
 * spares fit in the queue's cap (and 4 at least): a collector that
 * falls behind and catches up again, over and over, would otherwise have
 * the reader map and populate fresh memory at each backlog (on a VM that
 * hands freed pages back to its host, ~5 us a page: a tenth of the
 * reader's time at 1M calls/s), and itself unmap it under the lock.
 */
static void chunk_put(struct rec_queue *q, struct rq_chunk *c)
{
	if (c->size == RQ_CHUNK &&
	    (q->nspare < RQ_MIN_SPARES || (size_t)(q->nspare + 1) * RQ_MAP <= q->cap)) {
		c->next = q->spare;
		q->spare = c;
		q->nspare++;
	} else {
		chunk_unmap(c);
	}
}

static void chunks_unmap(struct rq_chunk *c)
{
	while (c) {
		struct rq_chunk *next = c->next;

		chunk_unmap(c);
		c = next;
	}
}

int rec_queue_init(struct rec_queue *q, size_t cap)
{
	pthread_condattr_t ca;

	memset(q, 0, sizeof(*q));
	q->cap = cap;
	pthread_mutex_init(&q->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&q->more, &ca);
	pthread_condattr_destroy(&ca);
	pthread_cond_init(&q->room, NULL);
	q->head = q->tail = chunk_get(q, 0);
	if (!q->head) {
		rec_queue_release(q);
		return -ENOMEM;
	}
	return 0;
}

void rec_queue_release(struct rec_queue *q)
{
	if (!q->cap)
		return;         /* never initialised (cap is never 0) */
	chunks_unmap(q->head);
	chunks_unmap(q->spare);
	pthread_cond_destroy(&q->more);
	pthread_cond_destroy(&q->room);
	pthread_mutex_destroy(&q->lock);
	memset(q, 0, sizeof(*q));
}

/* Under lock: show the consumer what was pushed; wake it if it waits and wake. */
static void publish_locked(struct rec_queue *q, int wake)
{
	if (!q->unpublished)
		return;
	q->tail->published = q->tail->used;
	q->queued += q->unpublished;
	if (q->queued > q->queued_max)
		q->queued_max = q->queued;
	q->queued_seen = q->queued;
	q->unpublished = 0;
	if (wake)
		pthread_cond_signal(&q->more);
}

void rec_queue_publish(struct rec_queue *q, int wake)
{
	pthread_mutex_lock(&q->lock);
	publish_locked(q, wake);
	pthread_mutex_unlock(&q->lock);
}

void rec_queue_end(struct rec_queue *q)
{
	pthread_mutex_lock(&q->lock);
	publish_locked(q, 1);
	q->ended = 1;
	pthread_cond_broadcast(&q->more);
	pthread_mutex_unlock(&q->lock);
}

void rec_queue_uncap(struct rec_queue *q)
{
	pthread_mutex_lock(&q->lock);
	q->uncapped = 1;
	pthread_cond_broadcast(&q->room);
	pthread_mutex_unlock(&q->lock);
}

/* The queue may be full: publish, and wait for room for need more bytes. */
static void wait_room(struct rec_queue *q, size_t need)
{
	struct timespec t0, t1;
	int waited = 0;

	pthread_mutex_lock(&q->lock);
	publish_locked(q, 1);
	while (q->queued && q->queued + need > q->cap && !q->uncapped) {
		if (!waited++)
			clock_gettime(CLOCK_MONOTONIC, &t0);
		pthread_cond_wait(&q->room, &q->lock);
	}
	if (waited) {
		clock_gettime(CLOCK_MONOTONIC, &t1);
		q->full_waits++;
		q->full_ns += (uint64_t)(t1.tv_sec - t0.tv_sec) * 1000000000u + t1.tv_nsec - t0.tv_nsec;
	}
	q->queued_seen = q->queued;
	pthread_mutex_unlock(&q->lock);
}

int rec_queue_push(struct rec_queue *q, const void *data, size_t size)
{
	size_t need = entry_bytes(size);
	struct rq_chunk *t = q->tail;

	if (size > UINT32_MAX)
		return -EINVAL;
	/* an upper bound of queued + unpublished, without the lock */
	if (q->queued_seen + q->unpublished + need > q->cap)
		wait_room(q, need);
	if (t->used + need > t->size) {
		struct rq_chunk *n = chunk_get(q, need);

		if (!n)
			return -ENOMEM;
		pthread_mutex_lock(&q->lock);
		publish_locked(q, 1);
		t->next = n;
		t->sealed = 1;
		pthread_mutex_unlock(&q->lock);
		q->tail = t = n;
	}
	*(uint32_t *)(t->data + t->used) = size;
	memcpy(t->data + t->used + RQ_HDR, data, size);
	t->used += need;
	q->unpublished += need;
	if (q->unpublished >= REC_QUEUE_PUBLISH)
		rec_queue_publish(q, 1);
	return 0;
}

/* Under lock: wait up to ms for a record, unless one is there or the end. */
static void wait_more(struct rec_queue *q, int ms)
{
	struct timespec until;

	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_sec += ms / 1000;
	until.tv_nsec += (long)(ms % 1000) * 1000000;
	if (until.tv_nsec >= 1000000000) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000;
	}
	while (!q->queued && !q->ended &&
	       pthread_cond_timedwait(&q->more, &q->lock, &until) != ETIMEDOUT)
		;
}

int rec_queue_take(struct rec_queue *q, int timeout_ms,
		   int (*fn)(void *ctx, void *data, size_t size), void *ctx)
{
	size_t budget = RQ_TAKE_MAX;
	int n = 0, ret = 0;

	pthread_mutex_lock(&q->lock);
	if (timeout_ms > 0)
		wait_more(q, timeout_ms);
	while (budget && ret >= 0) {
		struct rq_chunk *c = q->head;
		size_t off = q->head_off, end = c->published, taken;

		if (off == end) {
			if (!c->sealed)
				break;
			q->head = c->next;
			q->head_off = 0;
			chunk_put(q, c);
			continue;
		}
		/* the producer writes past end meanwhile, never before it */
		pthread_mutex_unlock(&q->lock);
		while (off < end && ret >= 0) {
			uint32_t size = *(const uint32_t *)(c->data + off);

			ret = fn(ctx, c->data + off + RQ_HDR, size);
			off += entry_bytes(size);
			n++;
		}
		pthread_mutex_lock(&q->lock);
		taken = off - q->head_off;
		q->head_off = off;
		q->queued -= taken;
		pthread_cond_signal(&q->room);
		budget = taken < budget ? budget - taken : 0;
	}
	pthread_mutex_unlock(&q->lock);
	return ret < 0 ? ret : n;
}

int rec_queue_done(struct rec_queue *q)
{
	int done;

	pthread_mutex_lock(&q->lock);
	done = q->ended && !q->queued;
	pthread_mutex_unlock(&q->lock);
	return done;
}
