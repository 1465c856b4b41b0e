// SPDX-License-Identifier: BSD-2-Clause
/*
 * Context-switch cost (bench/sched_bench.sh): two threads hand a byte to
 * each other over two pipes N times; pinned to one CPU (taskset), each
 * hand-off is one thread blocking in read and the other being woken and
 * switched in.  Prints ns_per_switch=X (elapsed / 2N).
 *
 *	pingpong N
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static int ab[2], ba[2];
static long n;

static void *pong(void *arg)
{
	char c;

	(void)arg;
	for (long i = 0; i < n; i++)
		if (read(ab[0], &c, 1) != 1 || write(ba[1], &c, 1) != 1)
			exit(1);
	return NULL;
}

int main(int argc, char **argv)
{
	struct timespec t0, t1;
	pthread_t t;
	char c = 'x';

	n = argc > 1 ? atol(argv[1]) : 100000;
	if (pipe(ab) || pipe(ba) || pthread_create(&t, NULL, pong, NULL))
		return 1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (long i = 0; i < n; i++)
		if (write(ab[1], &c, 1) != 1 || read(ba[0], &c, 1) != 1)
			return 1;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	pthread_join(t, NULL);
	printf("ns_per_switch=%.0f\n",
	       ((t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec)) / (2.0 * n));
	return 0;
}
