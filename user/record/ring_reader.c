// SPDX-License-Identifier: BSD-2-Clause
/* The ring buffer's reader; see ring_reader.h. */
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/eventfd.h>
#include <bpf/libbpf.h>
#include "gpubpf.h"
#include "record/ring_reader.h"

#define READ_MS 100             /* read at least this often: wakeups are batched */
#define FIRST_EVERY (256u << 10) /* read the first ring between so many bytes of the others */

/* The thread's: the per-CPU call rings' records into the queue. */
static int on_call(void *ctx, void *data, size_t size)
{
	struct ring_reader *rr = ctx;

	return rec_queue_push(&rr->q, data, size);
}

/*
 * libbpf's callbacks, on the thread: the first ring's records; a kick
 * (the per-CPU rings want reading) is not one.
 */
static int on_first(void *ctx, void *data, size_t size)
{
	if (size == sizeof(uint32_t) && *(const uint32_t *)data == GB_REC_KICK)
		return 0;
	return on_call(ctx, data, size);
}

/* The small rings: the per-CPU call rings, then the first ring buffer. */
static int read_small(struct ring_reader *rr)
{
	int ret = cpu_rings_drain(&rr->crings, on_call, rr);

	return ret < 0 ? ret : ring_buffer__consume(rr->first);
}

/*
 * The other rings': while a burst there is read, which can take a while,
 * the first ring, small, must not fill.
 */
static int on_rest(void *ctx, void *data, size_t size)
{
	struct ring_reader *rr = ctx;
	int ret = rec_queue_push(&rr->q, data, size);

	rr->rest_bytes += size;
	if (ret || rr->rest_bytes < FIRST_EVERY)
		return ret;
	rr->rest_bytes = 0;
	ret = read_small(rr);
	return ret < 0 ? ret : 0;
}

/*
 * The thread: sleep until the BPF programs wake it (a record crossing a
 * ring's wakeup threshold, or one that must be read at once), a stop, or
 * READ_MS; read everything the rings hold; repeat.  Whatever a read
 * brought wakes the taker, also after the timeout: a record that must be
 * read at once (a new Python stack, named from the process's memory while
 * the process still runs) may land while a read begun by the timeout is
 * under way, which takes it, and its own wakeup then finds the ring empty
 * and is lost (before: the record waited for the taker's own timeout, up
 * to 100 ms more, and a process ending meanwhile left its stack unnamed;
 * t0330 once in ~100 recordings).  After a stop, one last read.
 *
 * It runs at the highest priority of its class (nice -20, where the
 * recorder may set it: root may).  A wakeup means a ring is a quarter
 * full; at an ordinary priority the thread waited for the collector's
 * thread, or the traced program's, to use up its time slice, up to a few
 * milliseconds, while a program calling at 1M/s fills a CPU's ring in
 * two (a million launches at 1M/s from the bench's push stub, on two
 * CPUs: 0.5-3% lost in 4 runs of 13 at nice 0, none in 14 at -20).
 * Its work per wakeup is bounded by what the rings hold, and it blocks
 * when the queue is full, so it takes no more CPU than before, only
 * sooner.
 */
static void *reader_main(void *arg)
{
	struct ring_reader *rr = arg;
	struct epoll_event ev[4];
	int stop = 0, err = 0;

	(void)setpriority(PRIO_PROCESS, gettid(), RECORD_NICE);
	while (!stop && err >= 0) {
		(void)epoll_wait(rr->epoll_fd, ev, sizeof(ev) / sizeof(ev[0]), READ_MS);
		if (rr->alive)
			rr->alive(rr->alive_ctx);
		stop = __atomic_load_n(&rr->stopping, __ATOMIC_ACQUIRE);
		err = read_small(rr);
		if (err >= 0 && rr->rest)
			err = ring_buffer__consume(rr->rest);
		rec_queue_publish(&rr->q, 1);
	}
	rr->error = err < 0 ? err : 0;
	rec_queue_end(&rr->q);
	return NULL;
}

int ring_reader_init(struct ring_reader *rr, const int *ring_fds, int n,
		     const struct cpu_rings *crings, size_t cap,
		     void (*alive)(void *ctx), void *ctx)
{
	struct epoll_event ev = { .events = EPOLLIN | EPOLLET };
	sigset_t all, old;
	int ret;

	memset(rr, 0, sizeof(*rr));
	rr->epoll_fd = rr->stop_fd = -1;
	if (crings)
		rr->crings = *crings;
	rr->alive = alive;
	rr->alive_ctx = ctx;
	ret = rec_queue_init(&rr->q, cap);
	if (ret)
		return ret;
	rr->first = ring_buffer__new(ring_fds[0], on_first, rr, NULL);
	if (!rr->first) {
		ret = -errno;
		goto cleanup;
	}
	for (int i = 1; i < n; i++) {
		if (rr->rest ? ring_buffer__add(rr->rest, ring_fds[i], on_rest, rr) :
		    !(rr->rest = ring_buffer__new(ring_fds[i], on_rest, rr, NULL))) {
			ret = -errno;
			goto cleanup;
		}
	}
	rr->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
	rr->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (rr->epoll_fd < 0 || rr->stop_fd < 0) {
		ret = -errno;
		goto cleanup;
	}
	/* edge-triggered: woken by the programs' wakeups, not by data sitting there */
	for (int i = 0; i < n; i++) {
		ev.data.fd = ring_fds[i];
		if (epoll_ctl(rr->epoll_fd, EPOLL_CTL_ADD, ring_fds[i], &ev)) {
			ret = -errno;
			goto cleanup;
		}
	}
	ev.events = EPOLLIN;
	ev.data.fd = rr->stop_fd;
	if (epoll_ctl(rr->epoll_fd, EPOLL_CTL_ADD, rr->stop_fd, &ev)) {
		ret = -errno;
		goto cleanup;
	}
	/* signals stay with the thread that handles them */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	ret = -pthread_create(&rr->thread, NULL, reader_main, rr);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (ret)
		goto cleanup;
	rr->started = 1;
	return 0;
cleanup:
	ring_reader_release(rr);
	return ret;
}

int ring_reader_take(struct ring_reader *rr, int timeout_ms,
		     int (*fn)(void *ctx, void *data, size_t size), void *ctx)
{
	int n = rec_queue_take(&rr->q, timeout_ms, fn, ctx);

	/* the thread's error is written before the queue's end */
	if (!n && rec_queue_done(&rr->q) && rr->error)
		return rr->error;
	return n;
}

void ring_reader_stop(struct ring_reader *rr)
{
	uint64_t one = 1;
	ssize_t w;

	if (!rr->started)
		return;
	__atomic_store_n(&rr->stopping, 1, __ATOMIC_RELEASE);
	/* the last read must not wait for room from a taker waiting for it */
	rec_queue_uncap(&rr->q);
	/* should the write fail, the thread still looks within READ_MS */
	w = write(rr->stop_fd, &one, sizeof(one));
	(void)w;
	pthread_join(rr->thread, NULL);
	rr->started = 0;
}

void ring_reader_release(struct ring_reader *rr)
{
	if (!rr->q.cap)
		return;         /* never initialised */
	ring_reader_stop(rr);
	ring_buffer__free(rr->first);
	ring_buffer__free(rr->rest);
	if (rr->epoll_fd >= 0)
		close(rr->epoll_fd);
	if (rr->stop_fd >= 0)
		close(rr->stop_fd);
	rec_queue_release(&rr->q);
	memset(rr, 0, sizeof(*rr));
}
