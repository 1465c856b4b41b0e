/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The bench programs' handshake with a tracer (bench/callcost.c,
 * bench/sidecost.c): write our pid to a file, then wait for SIGUSR1, so
 * that a tracer can attach with -p before timing starts; with -H, once
 * done, write FILE.done and wait for SIGUSR1 again, so that the tracer's
 * programs are still loaded when their run-time statistics are read
 * (a tracer detaches as soon as its target exits).
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

/* -H: our output flushed, path.done written, wait for SIGUSR1 (still blocked); 0 or -1. */
static int done_hold(const char *prog, const char *path)
{
	char done[4096];
	sigset_t set;
	FILE *f;
	int sig;

	fflush(stdout);
	snprintf(done, sizeof(done), "%s.done", path);
	f = fopen(done, "w");
	if (!f || fclose(f)) {
		fprintf(stderr, "%s: cannot write %s: %s\n", prog, done, strerror(errno));
		return -1;
	}
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	sigwait(&set, &sig);
	return 0;
}

#endif
