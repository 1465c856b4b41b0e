// SPDX-License-Identifier: BSD-2-Clause
/*
 * sidecost - one libcuda entry point under several tracers at once, side
 * by side in one process.
 *
 *	sidecost [-f launch|sync] [-k CALLS] [-r ROUNDS] [-R READYFILE] [-w] [-H] LIB...
 *
 * Each LIB is a copy of the same library at its own path (so that a tracer
 * can probe one copy and not the others); the first is the untraced
 * reference.  After cuInit of each, ROUNDS rounds, and in each round each
 * copy's cuLaunchKernel (or cuStreamSynchronize) is called CALLS times in a
 * row, the copies' order rotated from round to round.  These VMs change
 * speed from second to second (up to 2x): a round's blocks, a few hundred
 * microseconds apart, see the same speed, so ratios taken within a round
 * are stable where runs one after the other are not.
 *
 * Handshake, as callcost's: -R FILE writes our pid to FILE and waits for
 * SIGUSR1; -w then waits (up to 30 s) until every copy but the first has a
 * uprobe breakpoint (int3) in its entry point's first 8 bytes; -H, once
 * done, writes FILE.done and waits for SIGUSR1 again (bench/handshake.h).
 *
 * Prints one line a round: each copy's ns per call, in the order given.
 */
#include <dlfcn.h>
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

#define MAX_LIBS 8

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static void usage(void)
{
	fprintf(stderr, "usage: sidecost [-f launch|sync] [-k CALLS] [-r ROUNDS] "
		"[-R READYFILE] [-w] [-H] LIB...\n");
	exit(2);
}

int main(int argc, char **argv)
{
	const char *ready = NULL;
	unsigned long calls = 200, rounds = 500;
	int use_sync = 0, wait_probe = 0, hold = 0, nlibs, c;
	launch_fn launch[MAX_LIBS];
	sync_fn sync_[MAX_LIBS];
	double *ns;

	while ((c = getopt(argc, argv, "f:k:r:R:wH")) != -1) {
		switch (c) {
		case 'f':
			if (!strcmp(optarg, "sync"))
				use_sync = 1;
			else if (strcmp(optarg, "launch"))
				usage();
			break;
		case 'k': calls = strtoul(optarg, NULL, 0); break;
		case 'r': rounds = strtoul(optarg, NULL, 0); break;
		case 'R': ready = optarg; break;
		case 'w': wait_probe = 1; break;
		case 'H': hold = 1; break;
		default: usage();
		}
	}
	nlibs = argc - optind;
	if (nlibs < 1 || nlibs > MAX_LIBS || !calls || !rounds || rounds > 1000000)
		usage();
	for (int i = 0; i < nlibs; i++) {
		void *h = dlopen(argv[optind + i], RTLD_NOW | RTLD_LOCAL);
		init_fn init;

		if (!h) {
			fprintf(stderr, "sidecost: %s\n", dlerror());
			return 1;
		}
		init = (init_fn)dlsym(h, "cuInit");
		launch[i] = (launch_fn)dlsym(h, "cuLaunchKernel");
		sync_[i] = (sync_fn)dlsym(h, "cuStreamSynchronize");
		if (!init || !launch[i] || !sync_[i]) {
			fprintf(stderr, "sidecost: %s lacks cuInit/cuLaunchKernel/cuStreamSynchronize\n",
				argv[optind + i]);
			return 1;
		}
		init(0);
	}
	if (ready && ready_handshake("sidecost", ready))
		return 1;
	for (int i = 1; wait_probe && i < nlibs; i++) {
		const void *entry = use_sync ? (const void *)sync_[i] : (const void *)launch[i];
		uint64_t until = now_ns() + 30000000000ULL;

		while (!memchr(entry, 0xcc, 8)) {
			if (now_ns() > until) {
				fprintf(stderr, "sidecost: no probe at the entry of %s after 30 s\n",
					argv[optind + i]);
				return 1;
			}
			usleep(1000);
		}
	}
	ns = calloc(rounds * nlibs, sizeof(*ns));
	if (!ns)
		return 1;
	for (unsigned long r = 0; r < rounds; r++) {
		for (int j = 0; j < nlibs; j++) {
			int i = (j + r) % nlibs;
			uint64_t t0 = now_ns();

			for (unsigned long k = 0; k < calls; k++) {
				if (use_sync)
					sync_[i]((void *)(uintptr_t)(k & 7));
				else
					launch[i]((void *)0x1000, 128, 1, 1, 256, 1, 1, 0,
						  (void *)(uintptr_t)(k & 7), NULL, NULL);
			}
			ns[r * nlibs + i] = (double)(now_ns() - t0) / calls;
		}
	}
	for (unsigned long r = 0; r < rounds; r++)
		for (int i = 0; i < nlibs; i++)
			printf("%.1f%c", ns[r * nlibs + i], i + 1 < nlibs ? ' ' : '\n');
	free(ns);
	return ready && hold && done_hold("sidecost", ready) ? 1 : 0;
}
