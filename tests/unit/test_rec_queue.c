// SPDX-License-Identifier: BSD-2-Clause
/*
 * The record queue (lib/rec_queue.h): records of every size, larger than
 * a chunk too, come out in order with their bytes; only what is published
 * shows, and everything once REC_QUEUE_PUBLISH bytes wait; a publish
 * wakes a waiting consumer only when asked to; each record
 * 8-aligned, as the BPF ring's are; a handler's
 * error stops a take at that record and the next take goes on after it;
 * a producer thread that outruns the consumer waits at the cap, which
 * never holds more, and is let through when the cap is lifted; a take
 * waits for its timeout, or not at all once the queue has ended; chunks
 * are 2 MiB aligned and populated, in a huge page where the kernel has
 * transparent ones; emptied chunks are kept for reuse while they fit in
 * the cap (4 at least), and a backlog as large again maps none anew.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tap.h"
#include "lib/rec_queue.h"

/* A record: its sequence number, then bytes that follow from it. */
static size_t rec_size(uint32_t seq)
{
	static const size_t sizes[] = { 4, 5, 8, 9, 15, 16, 17, 63, 64, 100, 1000, 4096, 8200 };

	return sizes[seq % (sizeof(sizes) / sizeof(sizes[0]))];
}

static void rec_fill(unsigned char *buf, uint32_t seq, size_t size)
{
	memcpy(buf, &seq, sizeof(seq));
	for (size_t i = sizeof(seq); i < size; i++)
		buf[i] = (unsigned char)(seq * 31 + i);
}

struct check {
	uint32_t next;          /* the sequence number expected */
	uint32_t bad;           /* records out of order or with wrong bytes */
	uint32_t misaligned;    /* records not 8-aligned, as the BPF ring's are */
	uint32_t stop_at;       /* return -EIO at this one (0: never) */
	size_t big;             /* a size expected for every record instead of rec_size() */
};

static int check_rec(void *ctx, void *data, size_t size)
{
	struct check *c = ctx;
	unsigned char want[1 << 14];
	size_t expect = c->big ? c->big : rec_size(c->next);
	uint32_t seq;

	memcpy(&seq, data, sizeof(seq));
	if ((uintptr_t)data % 8)
		c->misaligned++;
	if (seq != c->next || size != expect)
		c->bad++;
	else if (!c->big) {
		rec_fill(want, seq, size);
		if (memcmp(want, data, size))
			c->bad++;
	}
	c->next = seq + 1;
	return c->stop_at && seq == c->stop_at ? -EIO : 0;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void pause_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };

	nanosleep(&ts, NULL);
}

static void single_thread(void)
{
	struct rec_queue q;
	struct check c = { 0 };
	unsigned char buf[1 << 14];
	int n, total = 0;

	is_int(rec_queue_init(&q, 64u << 20), 0, "a queue of 64 MiB");
	for (uint32_t seq = 0; seq < 20; seq++) {
		rec_fill(buf, seq, rec_size(seq));
		rec_queue_push(&q, buf, rec_size(seq));
	}
	is_int(rec_queue_take(&q, 0, check_rec, &c), 0, "nothing shows before it is published");
	rec_queue_publish(&q, 1);
	is_int(rec_queue_take(&q, 0, check_rec, &c), 20, "20 records once published");
	is_int(c.bad, 0, "in order, sizes and bytes intact");
	/* enough to cross chunks and publish by itself, unpublished at the end */
	for (uint32_t seq = 20; seq < 20000; seq++) {
		rec_fill(buf, seq, rec_size(seq));
		rec_queue_push(&q, buf, rec_size(seq));
	}
	n = rec_queue_take(&q, 0, check_rec, &c);
	ok(n > 0 && n < 19980, "what waits past REC_QUEUE_PUBLISH shows by itself, not the rest (%d)", n);
	rec_queue_publish(&q, 1);
	while ((n = rec_queue_take(&q, 0, check_rec, &c)) > 0)
		total += n;
	is_int(c.next, 20000, "then all 20000, across chunks");
	is_int(c.bad, 0, "in order, intact");
	is_int(c.misaligned, 0, "each 8-aligned, as the ring's records are");
	ok(q.queued_max <= 64u << 20, "never more than the cap waited");
	is_int(q.full_waits, 0, "no push waited for room");

	/* the handler's error: that record is taken, the next take goes on */
	for (uint32_t seq = 20000; seq < 20010; seq++) {
		rec_fill(buf, seq, rec_size(seq));
		rec_queue_push(&q, buf, rec_size(seq));
	}
	rec_queue_publish(&q, 1);
	c.stop_at = 20004;
	is_int(rec_queue_take(&q, 0, check_rec, &c), -EIO, "the handler's error is returned");
	is_int(c.next, 20005, "after the record that failed");
	c.stop_at = 0;
	is_int(rec_queue_take(&q, 0, check_rec, &c), 5, "the next take hands the 5 after it");
	is_int(c.bad, 0, "none twice, none missed");
	is_int(q.queued, 0, "nothing waits");
	rec_queue_release(&q);
}

static void records_larger_than_a_chunk(void)
{
	struct rec_queue q;
	struct check c = { .big = 3u << 20 };
	unsigned char *buf = calloc(1, c.big);

	rec_queue_init(&q, 4u << 20);
	for (uint32_t seq = 0; seq < 3; seq++) {
		memcpy(buf, &seq, sizeof(seq));
		buf[c.big - 1] = (unsigned char)seq;
		is_int(rec_queue_push(&q, buf, c.big), 0, "a 3 MiB record %u (larger than a chunk) is pushed", seq);
		rec_queue_publish(&q, 1);
		is_int(rec_queue_take(&q, 0, check_rec, &c), 1, "and taken whole");
	}
	is_int(c.bad, 0, "in order, of their size");
	rec_queue_release(&q);
	free(buf);
}

struct producer {
	struct rec_queue *q;
	uint32_t n;
	int failed;
	int done;
};

static void *produce(void *arg)
{
	struct producer *p = arg;
	unsigned char buf[1 << 14];

	for (uint32_t seq = 0; seq < p->n; seq++) {
		rec_fill(buf, seq, rec_size(seq));
		if (rec_queue_push(p->q, buf, rec_size(seq)))
			p->failed++;
		if (seq % 97 == 0)
			rec_queue_publish(p->q, 1);
	}
	rec_queue_end(p->q);
	__atomic_store_n(&p->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

static void two_threads_at_the_cap(void)
{
	struct rec_queue q;
	struct check c = { 0 };
	struct producer p = { .q = &q, .n = 200000 };
	pthread_t t;
	int n;

	rec_queue_init(&q, 256u << 10);
	pthread_create(&t, NULL, produce, &p);
	pause_ms(100);          /* the producer fills the queue meanwhile */
	while (!rec_queue_done(&q)) {
		n = rec_queue_take(&q, 20, check_rec, &c);
		if (n < 0)
			break;
	}
	pthread_join(t, NULL);
	is_int(p.failed, 0, "every push succeeded");
	is_int(c.next, p.n, "the consumer got all %u records", p.n);
	is_int(c.bad, 0, "in order, intact");
	ok(q.queued_max <= q.cap, "at most the cap waited (%zu of %zu bytes)", q.queued_max, q.cap);
	ok(q.queued_max > q.cap / 2, "the producer did fill the queue (%zu bytes)", q.queued_max);
	rec_queue_release(&q);
}

static void uncap_lets_a_waiting_producer_through(void)
{
	struct rec_queue q;
	struct check c = { 0 };
	struct producer p = { .q = &q, .n = 5000 };
	pthread_t t;
	size_t queued;

	rec_queue_init(&q, 64u << 10);
	pthread_create(&t, NULL, produce, &p);
	pause_ms(300);
	ok(!__atomic_load_n(&p.done, __ATOMIC_ACQUIRE), "a producer of ~6 MB waits at a cap of 64 KiB");
	pthread_mutex_lock(&q.lock);
	queued = q.queued;
	pthread_mutex_unlock(&q.lock);
	ok(queued <= q.cap, "with no more than the cap queued (%zu)", queued);
	rec_queue_uncap(&q);
	pthread_join(t, NULL);
	ok(p.done && !p.failed, "once the cap is lifted it pushes everything without a take");
	is_int(q.full_waits, 1, "one push waited for room");
	ok(q.full_ns >= 250000000ull && q.full_ns < 10000000000ull,
	   "for about as long as the consumer took none (%.3f s; 0.3 s)", q.full_ns / 1e9);
	while (rec_queue_take(&q, 0, check_rec, &c) > 0)
		;
	is_int(c.next, p.n, "all %u records are there", p.n);
	is_int(c.bad, 0, "in order, intact");
	ok(rec_queue_done(&q), "ended and empty: done");
	rec_queue_release(&q);
}

static void *publish_twice(void *arg)
{
	struct rec_queue *q = arg;
	unsigned char buf[16];

	pause_ms(50);
	rec_fill(buf, 0, rec_size(0));
	rec_queue_push(q, buf, rec_size(0));
	rec_queue_publish(q, 0);
	pause_ms(350);
	rec_fill(buf, 1, rec_size(1));
	rec_queue_push(q, buf, rec_size(1));
	rec_queue_publish(q, 1);
	return NULL;
}

static void publish_wakes_or_not(void)
{
	struct rec_queue q;
	struct check c = { 0 };
	pthread_t t;
	double t0, el;
	int n;

	rec_queue_init(&q, 1u << 20);
	pthread_create(&t, NULL, publish_twice, &q);
	t0 = now_s();
	n = rec_queue_take(&q, 300, check_rec, &c);
	el = now_s() - t0;
	ok(n == 1 && el >= 0.29, "published without a wakeup at 50 ms: taken when the 300 ms wait "
	   "times out (%d after %.3f s)", n, el);
	t0 = now_s();
	n = rec_queue_take(&q, 300, check_rec, &c);
	el = now_s() - t0;
	ok(n == 1 && el < 0.28, "published with one ~100 ms later: taken then (%d after %.3f s)", n, el);
	pthread_join(t, NULL);
	is_int(c.bad, 0, "in order, intact");
	rec_queue_release(&q);
}

static void take_waits(void)
{
	struct rec_queue q;
	struct check c = { 0 };
	double t0, el;

	rec_queue_init(&q, 1u << 20);
	ok(!rec_queue_done(&q), "a new queue is not done");
	t0 = now_s();
	is_int(rec_queue_take(&q, 150, check_rec, &c), 0, "an empty queue: no record");
	el = now_s() - t0;
	ok(el >= 0.14 && el < 2, "after waiting its timeout of 150 ms (%.3f s)", el);
	rec_queue_end(&q);
	t0 = now_s();
	is_int(rec_queue_take(&q, 5000, check_rec, &c), 0, "an ended queue: no record");
	el = now_s() - t0;
	ok(el < 0.5, "and no wait (%.3f s of a 5 s timeout)", el);
	ok(rec_queue_done(&q), "ended and empty: done");
	rec_queue_release(&q);
	rec_queue_release(&q);
	ok(1, "released twice, and a zeroed queue released: no crash");
}

/* The "Rss" and "AnonHugePages" kB of the mapping at addr, from /proc/self/smaps. */
static void mapping_kb(uintptr_t addr, long *rss, long *huge)
{
	FILE *f = fopen("/proc/self/smaps", "r");
	char line[256];
	uintptr_t lo, hi;
	int in = 0;

	*rss = *huge = -1;
	while (f && fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%" SCNxPTR "-%" SCNxPTR " ", &lo, &hi) == 2) {     /* a mapping's line */
			in = addr >= lo && addr < hi;
			continue;
		}
		if (in) {
			sscanf(line, "Rss: %ld kB", rss);
			sscanf(line, "AnonHugePages: %ld kB", huge);
		}
	}
	if (f)
		fclose(f);
}

static void chunks_in_huge_pages(void)
{
	struct rec_queue q;
	unsigned char buf[64] = { 0 };
	char thp[128] = "";
	FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
	long rss, huge;
	uintptr_t head;

	if (f) {
		if (!fgets(thp, sizeof(thp), f))
			thp[0] = 0;
		fclose(f);
	}
	rec_queue_init(&q, 64u << 20);
	rec_queue_push(&q, buf, sizeof(buf));
	rec_queue_publish(&q, 0);
	head = (uintptr_t)q.head;
	is_int(head % (2u << 20), 0, "a chunk is 2 MiB aligned");
	mapping_kb(head, &rss, &huge);
	ok(rss >= 2048, "and populated whole (%ld kB resident)", rss);
	if (!thp[0] || strstr(thp, "[never]"))
		diag("skip: no transparent huge pages here (%s)", thp[0] ? thp : "none");
	else
		is_int(huge, 2048, "in one huge page (transparent huge pages: %.*s)",
		       (int)strcspn(thp, "\n"), thp);
	rec_queue_release(&q);
}

/* Push bytes of 64 KiB records (seq from *seq on); publish. */
static void push_bytes(struct rec_queue *q, size_t bytes, uint32_t *seq)
{
	static unsigned char buf[65536];

	for (size_t done = 0; done < bytes; done += sizeof(buf)) {
		memcpy(buf, seq, sizeof(*seq));
		(*seq)++;
		rec_queue_push(q, buf, sizeof(buf));
	}
	rec_queue_publish(q, 0);
}

/* Take every record published, checked in order from seq first; their number. */
static int take_all(struct rec_queue *q, uint32_t first)
{
	struct check c = { .next = first, .big = 65536 };
	int n = 0, got;

	while ((got = rec_queue_take(q, 0, check_rec, &c)) > 0)
		n += got;
	return c.bad || c.misaligned ? -1 : n;
}

static void spares_kept_to_the_cap(void)
{
	struct rec_queue q;
	uint32_t seq = 0;
	size_t mapped;

	/* a 40 MiB cap: a 24 MiB backlog (12-13 chunks of ~2 MiB) taken */
	rec_queue_init(&q, 40u << 20);
	push_bytes(&q, 24u << 20, &seq);
	is_int(take_all(&q, 0), 384, "backlog: 384 records of 64 KiB taken, in order");
	ok(q.nspare >= 11 && q.nspare <= 13, "its emptied chunks kept as spares (%d), not 4", q.nspare);
	mapped = q.mapped;
	push_bytes(&q, 24u << 20, &seq);
	is_int(q.mapped, mapped, "a second backlog as large maps no chunk anew (%zu mapped)", mapped);
	is_int(take_all(&q, 384), 384, "and its 384 records are taken, in order");
	rec_queue_release(&q);

	/* a 16 MiB cap keeps 8 at most, and 4 whatever the cap */
	rec_queue_init(&q, 16u << 20);
	push_bytes(&q, 14u << 20, &seq);
	is_int(take_all(&q, seq - 224), 224, "a 16 MiB cap: 224 records taken, in order");
	ok(q.nspare >= 4 && q.nspare <= 8, "a 16 MiB cap: spares within it (%d)", q.nspare);
	rec_queue_release(&q);
}

int main(void)
{
	struct rec_queue zero = { 0 };

	rec_queue_release(&zero);
	single_thread();
	records_larger_than_a_chunk();
	two_threads_at_the_cap();
	uncap_lets_a_waiting_producer_through();
	publish_wakes_or_not();
	take_waits();
	chunks_in_huge_pages();
	spares_kept_to_the_cap();
	return done_testing();
}
