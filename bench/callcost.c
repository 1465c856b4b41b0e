// SPDX-License-Identifier: BSD-2-Clause
/*
 * callcost - call one libcuda entry point in a loop and report its cost.
 *
 *	callcost [-l LIB] [-f launch|sync] [-n CALLS | -T SECONDS] [-r RATE]
 *	         [-t THREADS] [-R READYFILE] [-w] [-H]
 *
 * dlopens LIB (default build/bench/libcuda.so.1), calls cuInit, then from
 * each of THREADS threads calls cuLaunchKernel (11 arguments) or
 * cuStreamSynchronize CALLS times, or for SECONDS.  -r limits the total
 * rate to RATE calls/s (spread evenly over the threads; 0: as fast as
 * possible).
 *
 * Handshake, so that a tracer can attach with -p before timing starts:
 *  -R FILE  when loaded, write our pid to FILE and wait for SIGUSR1;
 *  -w       then wait (up to 30 s) until a uprobe breakpoint (int3) shows in
 *           the function's first 8 bytes (at its entry, or after an endbr64
 *           where gpubpf probes), i.e. until the probe is really in place;
 *           the bench library's functions hold no 0xcc byte of their own;
 *  -H       once done, write FILE.done and wait for SIGUSR1 again, so that
 *           a tracer's programs stay loaded until their statistics are read.
 *
 * Prints one line of key=value pairs on stdout:
 *	func=launch threads=1 calls=N secs=S ns_per_call=X rate=Y
 * ns_per_call is wall time over calls per thread (the latency one thread
 * sees); rate is total calls over wall time.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "handshake.h"

typedef int (*launch_fn)(void *, unsigned, unsigned, unsigned, unsigned, unsigned,
			 unsigned, unsigned, void *, void **, void **);
typedef int (*sync_fn)(void *);
typedef int (*init_fn)(unsigned);

static launch_fn launch;
static sync_fn sync_;
static int use_sync;
static uint64_t ncalls = 1000000, duration_ns;
static double rate;             /* total calls/s, 0 unlimited */
static int nthreads = 1;
static pthread_barrier_t barrier;
static uint64_t t_start;

struct worker {
	pthread_t th;
	uint64_t done;
	uint64_t t_end;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static inline void one_call(uint64_t i)
{
	if (use_sync)
		sync_((void *)(uintptr_t)(i & 7));
	else
		launch((void *)0x1000, 128, 1, 1, 256, 1, 1, 0,
		       (void *)(uintptr_t)(i & 7), NULL, NULL);
}

static void *run(void *arg)
{
	struct worker *w = arg;
	double per = rate > 0 ? 1e9 / (rate / nthreads) : 0;  /* ns between calls */
	uint64_t t0, now, i = 0;

	pthread_barrier_wait(&barrier);
	t0 = t_start;
	for (;;) {
		if (duration_ns) {
			if ((i & 63) == 0 || per > 0) {
				now = now_ns();
				if (now - t0 >= duration_ns)
					break;
			}
		} else if (i >= ncalls) {
			break;
		}
		if (per > 0) {
			uint64_t due = t0 + (uint64_t)(i * per);

			now = now_ns();
			if (due > now + 20000) {
				struct timespec ts = { due / 1000000000ULL, due % 1000000000ULL };

				clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
			} else {
				while (now_ns() < due)
					;
			}
		}
		one_call(i);
		i++;
	}
	w->done = i;
	w->t_end = now_ns();
	return NULL;
}

static void usage(void)
{
	fprintf(stderr, "usage: callcost [-l LIB] [-f launch|sync] [-n CALLS | -T SECONDS] "
		"[-r RATE] [-t THREADS] [-R READYFILE] [-w] [-H]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	const char *lib = "build/bench/libcuda.so.1", *ready = NULL;
	int wait_probe = 0, hold = 0, c;
	struct worker *w;
	volatile unsigned char *entry;
	init_fn init;
	void *h;
	uint64_t total = 0, t_end = 0;
	double secs;

	while ((c = getopt(argc, argv, "l:f:n:T:r:t:R:wH")) != -1) {
		switch (c) {
		case 'l': lib = optarg; break;
		case 'f':
			if (!strcmp(optarg, "sync"))
				use_sync = 1;
			else if (strcmp(optarg, "launch"))
				usage();
			break;
		case 'n': ncalls = strtoull(optarg, NULL, 0); break;
		case 'T': duration_ns = (uint64_t)(atof(optarg) * 1e9); break;
		case 'r': rate = atof(optarg); break;
		case 't': nthreads = atoi(optarg); break;
		case 'R': ready = optarg; break;
		case 'w': wait_probe = 1; break;
		case 'H': hold = 1; break;
		default: usage();
		}
	}
	if (nthreads < 1 || nthreads > 256)
		usage();
	h = dlopen(lib, RTLD_NOW);
	if (!h) {
		fprintf(stderr, "callcost: %s\n", dlerror());
		return 1;
	}
	init = (init_fn)dlsym(h, "cuInit");
	launch = (launch_fn)dlsym(h, "cuLaunchKernel");
	sync_ = (sync_fn)dlsym(h, "cuStreamSynchronize");
	if (!init || !launch || !sync_) {
		fprintf(stderr, "callcost: %s lacks cuInit/cuLaunchKernel/cuStreamSynchronize\n", lib);
		return 1;
	}
	init(0);
	entry = use_sync ? (volatile unsigned char *)sync_ : (volatile unsigned char *)launch;

	if (ready && ready_handshake("callcost", ready))
		return 1;
	if (wait_probe) {
		uint64_t until = now_ns() + 30000000000ULL;

		while (!memchr((const void *)entry, 0xcc, 8)) {
			if (now_ns() > until) {
				fprintf(stderr, "callcost: no probe at the entry after 30 s\n");
				return 1;
			}
			usleep(1000);
		}
	}

	w = calloc(nthreads, sizeof(*w));
	pthread_barrier_init(&barrier, NULL, nthreads + 1);
	for (int i = 0; i < nthreads; i++)
		pthread_create(&w[i].th, NULL, run, &w[i]);
	t_start = now_ns();
	pthread_barrier_wait(&barrier);
	for (int i = 0; i < nthreads; i++) {
		pthread_join(w[i].th, NULL);
		total += w[i].done;
		if (w[i].t_end > t_end)
			t_end = w[i].t_end;
	}
	secs = (t_end - t_start) / 1e9;
	printf("func=%s threads=%d calls=%llu secs=%.4f ns_per_call=%.1f rate=%.0f\n",
	       use_sync ? "sync" : "launch", nthreads, (unsigned long long)total, secs,
	       total ? (t_end - t_start) / ((double)total / nthreads) : 0.0, total / secs);
	free(w);
	return ready && hold && done_hold("callcost", ready) ? 1 : 0;
}
