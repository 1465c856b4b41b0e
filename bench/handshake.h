/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The bench programs' handshake with a tracer (bench/callcost.c,
 * bench/sidecost.c): write our pid to a file, then wait for SIGUSR1, so
 * that a tracer can attach with -p before timing starts.
 */
#ifndef GPUBPF_BENCH_HANDSHAKE_H
#define GPUBPF_BENCH_HANDSHAKE_H

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* Our pid into path (atomically: a rename), then wait for SIGUSR1; 0 or -1. */
static int ready_handshake(const char *prog, const char *path)
{
	char tmp[4096];
	sigset_t set;
	FILE *f;
	int sig;

	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	sigprocmask(SIG_BLOCK, &set, NULL);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "w");
	if (!f || fprintf(f, "%d\n", getpid()) < 0 || fclose(f) || rename(tmp, path)) {
		fprintf(stderr, "%s: cannot write %s: %s\n", prog, path, strerror(errno));
		return -1;
	}
	sigwait(&set, &sig);
	return 0;
}

#endif
