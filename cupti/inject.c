// SPDX-License-Identifier: BSD-2-Clause
/*
 * libgpubpf_cupti.so: loaded by the CUDA driver through
 * CUDA_INJECTION64_PATH, which calls InitializeInjection() from cuInit.
 *
 * The library stays dormant, costing one wake-up of a sleeping thread every
 * POLL_MS, until gpubpf attaches to its markers (the kernel raises the
 * markers' semaphore).  Then it enables the backend (backend.h: CUPTI,
 * or the simulated driver's hooks in the simulator's variant), delivers
 * records every POLL_MS, and when gpubpf detaches it flushes and disables
 * again: a job started once with the variable set can be recorded many
 * times, by several recorders at once (one that joins others says so
 * through gpubpf_joins, publish.h).  Nothing here may break or slow down
 * the program: errors are reported once and the library goes dormant.  Where no backend applies
 * (no usable libcupti), the thread still runs, to tell each recorder why.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include "backend.h"
#include "inject.h"
#include "publish.h"

#define POLL_MS 50

static const struct backend *backend;   /* NULL: none applies, for no_backend */
static char no_backend[512];
static int quiet;                       /* loaded by late attach: stderr is the job's */
static pthread_mutex_t state_lock = PTHREAD_MUTEX_INITIALIZER;
static int enabled;
static int attach_seen;         /* polls in a row that saw a recorder attached, not enabled */
static uint32_t joins_seen;     /* publish_joins() when the last recorder was answered */
static pid_t owner;             /* the process the poll thread runs in */

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

/*
 * Follow the recorder: enable on attach, flush while attached, disable on
 * detach.  The kernel raises a marker's semaphore before the recorder's
 * program is attached to it: a recorder seen arriving by the poll thread
 * (now = 0) is given one more period to finish attaching, so the first
 * records (GA_WINDOW, the first correlation ids) are not lost.
 */
static void follow_locked(int forced, int now)
{
	int attached = publish_attached();
	uint32_t joins = publish_joins();

	if (!attached)
		attach_seen = 0;
	if (attached && !enabled && !now && attach_seen++ < 1)
		return;
	if (attached && !enabled) {
		attach_seen = 0;
		publish_reset();
		/* a failed enable stays off until the next attach */
		enabled = backend && backend->enable() == 0 ? 1 : -1;
		if (!backend)
			publish_error(no_backend);
		else if (enabled > 0)
			publish_window(now_ns());
		joins_seen = joins;
	} else if (attached && joins != joins_seen) {
		/* one more recorder, which missed the names and the window */
		joins_seen = joins;
		publish_joined(enabled > 0, now_ns());
	} else if (!attached && enabled) {
		if (enabled > 0) {
			backend->flush(1);
			backend->disable();
		}
		enabled = 0;
	}
	if (enabled > 0) {
		backend->flush(forced);
		publish_flush();
	}
}

static void *poll_thread(void *arg)
{
	struct timespec ts = { .tv_sec = 0, .tv_nsec = POLL_MS * 1000000L };

	/* not its creator's name (a late attach borrows any of the job's threads) */
	pthread_setname_np(pthread_self(), "gpubpf-cupti");

	for (;;) {
		nanosleep(&ts, NULL);
		pthread_mutex_lock(&state_lock);
		follow_locked(0, 0);
		pthread_mutex_unlock(&state_lock);
	}
	return arg;
}

void inject_say(const char *fmt, ...)
{
	char line[640];
	va_list ap;

	if (quiet)
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	fprintf(stderr, "gpubpf: %s\n", line);
}

/* The first backend that applies to this process's driver, else NULL, said once. */
static const struct backend *pick_backend(void)
{
	const char *why = "no backend applies";

	for (const struct backend *const *b = backends; *b; b++) {
		if ((*b)->probe())
			return *b;
		if ((*b)->why_not && *(*b)->why_not())
			why = (*b)->why_not();
	}
	snprintf(no_backend, sizeof(no_backend), "%s", why);
	inject_say("GPU timing off: %s", why);
	return NULL;
}

static void at_exit(void)
{
	pthread_mutex_lock(&state_lock);
	if (enabled > 0 && owner == getpid()) {
		backend->flush(1);
		publish_flush();
	}
	pthread_mutex_unlock(&state_lock);
}

int inject_start(int late)
{
	static int probed;
	pthread_attr_t attr;
	pthread_t t;
	int ret = 1;

	pthread_mutex_lock(&state_lock);
	if (owner == getpid())
		goto out;       /* already running in this process */
	quiet |= late;          /* a child of a late-attached job inherits its stderr */
	if (!probed) {
		probed = 1;
		backend = pick_backend();
		atexit(at_exit);
	}
	/* in a forked child, the parent's state does not apply */
	enabled = 0;
	owner = getpid();
	/* recorded from the start (record -- CMD): enable before cuInit returns */
	follow_locked(0, 1);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	if (pthread_create(&t, &attr, poll_thread, NULL)) {
		inject_say("GPU timing off: cannot start the library's thread");
		owner = 0;
		ret = 0;
	}
	pthread_attr_destroy(&attr);
out:
	pthread_mutex_unlock(&state_lock);
	return ret;
}

__attribute__((visibility("default"))) int InitializeInjection(void)
{
	return inject_start(0);
}
