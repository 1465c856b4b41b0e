// SPDX-License-Identifier: BSD-2-Clause
/*
 * gpuwork - launch work on the simulated driver and time it (bench/run.sh,
 * section 4: GPU timing).
 *
 *	gpuwork [-l LIB] [-m launch|rounds|graph] [-n LAUNCHES] [-k KERNELS]
 *	        [-r REPLAYS] [-W WARMUP] [-g] [-i TURN_IN -o TURN_OUT]
 *
 * dlopens LIB (default libcuda.so.1, i.e. the simulated driver through
 * LD_LIBRARY_PATH=build/sim), calls cuInit (which loads
 * CUDA_INJECTION64_PATH when set), gets "bench_kernel" with
 * cuModuleGetFunction(&f, NULL, ...) and creates a stream.  Every kernel
 * takes 0 us (kernelParams[0] points to a uint32_t 0).
 *
 *  -m launch  WARMUP launches + sync (untimed: starts the stream's worker,
 *             interns the kernel name), then LAUNCHES back-to-back
 *             cuLaunchKernel calls on the stream (timed: ns_per_launch),
 *             then cuStreamSynchronize (timed separately: sync_ms).
 *             -g (gated): first queue a host function (cuLaunchHostFunc)
 *             that holds the stream's worker until the timed loop is over,
 *             so no kernel runs and no GPU record is published during it:
 *             the launching thread's own cost alone.
 *  -m rounds  REPLAYS rounds, each LAUNCHES launches (timed) and a
 *             synchronisation, 100 ms apart; one line per round (round=,
 *             t_ms= CLOCK_MONOTONIC ms at its start, ns_per_launch=,
 *             cpu_ns_per_launch=: the launching thread's CPU time, which
 *             other jobs on the machine disturb far less, and
 *             round_ns_per_launch=: launches and synchronisation, the
 *             stream's worker's share included): for attaching to the
 *             process between rounds (bench/inject_bench.sh).  With -i and
 *             -o, a round starts when a byte arrives on the FIFO TURN_IN
 *             rather than 100 ms after the last, and ends by writing one to
 *             TURN_OUT: processes in a ring of FIFOs take turns, and their
 *             rounds, a few milliseconds apart, see the same speed of these
 *             VMs (bench/inject_bench.sh).
 *  -m graph   captures KERNELS launches into a graph
 *             (cuStreamBeginCapture/cuStreamEndCapture), instantiates it,
 *             then launches it REPLAYS times and synchronises (timed
 *             together: KERNELS*REPLAYS kernel records from REPLAYS host
 *             calls; records_per_s).
 *
 * Prints one line of key=value pairs on stdout; kernels= is every kernel
 * that ran, warm-up included (what a trace must hold).
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef int CUresult;
typedef void *CUfunction, *CUstream, *CUgraph, *CUgraphExec, *CUmodule;

static CUresult (*p_cuInit)(unsigned);
static CUresult (*p_cuModuleGetFunction)(CUfunction *, CUmodule, const char *);
static CUresult (*p_cuStreamCreate)(CUstream *, unsigned);
static CUresult (*p_cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned,
				    unsigned, unsigned, unsigned, CUstream, void **, void **);
static CUresult (*p_cuStreamSynchronize)(CUstream);
static CUresult (*p_cuStreamBeginCapture)(CUstream, int);
static CUresult (*p_cuStreamEndCapture)(CUstream, CUgraph *);
static CUresult (*p_cuGraphInstantiate)(CUgraphExec *, CUgraph, unsigned long long);
static CUresult (*p_cuGraphLaunch)(CUgraphExec, CUstream);
static CUresult (*p_cuLaunchHostFunc)(CUstream, void (*)(void *), void *);

/* -g: a host function that holds the stream's worker until the timed loop is over */
static int gate_open;

static void gate(void *arg)
{
	struct timespec ts = { 0, 50000 };

	while (!__atomic_load_n(&gate_open, __ATOMIC_ACQUIRE))
		nanosleep(&ts, NULL);
}

static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static void *sym(void *h, const char *name)
{
	void *p = dlsym(h, name);

	if (!p) {
		fprintf(stderr, "gpuwork: %s: %s\n", name, dlerror());
		exit(1);
	}
	return p;
}

#define CK(call) do { CUresult rc_ = (call); if (rc_) { \
	fprintf(stderr, "gpuwork: %s failed: %d\n", #call, rc_); exit(1); } } while (0)

static void usage(void)
{
	fprintf(stderr, "usage: gpuwork [-l LIB] [-m launch|rounds|graph] [-n LAUNCHES] "
		"[-k KERNELS] [-r REPLAYS] [-W WARMUP] [-g] [-i TURN_IN -o TURN_OUT]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	const char *lib = "libcuda.so.1", *mode = "launch", *turn_in = NULL, *turn_out = NULL;
	uint64_t n = 20000, k = 1000, r = 100, warm = 100, i, t0, t1, t2;
	static uint32_t dur_us;             /* 0-us kernels */
	void *params[] = { &dur_us };
	CUfunction f;
	CUstream s;
	void *h;
	int c, gated = 0, tin = -1, tout = -1;

	while ((c = getopt(argc, argv, "l:m:n:k:r:W:gi:o:")) != -1) {
		switch (c) {
		case 'l': lib = optarg; break;
		case 'm': mode = optarg; break;
		case 'n': n = strtoull(optarg, NULL, 0); break;
		case 'k': k = strtoull(optarg, NULL, 0); break;
		case 'r': r = strtoull(optarg, NULL, 0); break;
		case 'W': warm = strtoull(optarg, NULL, 0); break;
		case 'g': gated = 1; break;
		case 'i': turn_in = optarg; break;
		case 'o': turn_out = optarg; break;
		default: usage();
		}
	}
	if (strcmp(mode, "launch") && strcmp(mode, "graph") && strcmp(mode, "rounds"))
		usage();
	if (!turn_in != !turn_out)
		usage();
	/* read-write: opening never blocks, and a write never fails when the
	 * next process has gone */
	if (turn_in && ((tin = open(turn_in, O_RDWR)) < 0 || (tout = open(turn_out, O_RDWR)) < 0)) {
		fprintf(stderr, "gpuwork: cannot open %s or %s\n", turn_in, turn_out);
		return 1;
	}
	h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		fprintf(stderr, "gpuwork: %s\n", dlerror());
		return 1;
	}
	p_cuInit = sym(h, "cuInit");
	p_cuModuleGetFunction = sym(h, "cuModuleGetFunction");
	p_cuStreamCreate = sym(h, "cuStreamCreate");
	p_cuLaunchKernel = sym(h, "cuLaunchKernel");
	p_cuStreamSynchronize = sym(h, "cuStreamSynchronize");
	p_cuStreamBeginCapture = sym(h, "cuStreamBeginCapture_v2");
	p_cuStreamEndCapture = sym(h, "cuStreamEndCapture");
	p_cuGraphInstantiate = sym(h, "cuGraphInstantiateWithFlags");
	p_cuGraphLaunch = sym(h, "cuGraphLaunch");
	p_cuLaunchHostFunc = sym(h, "cuLaunchHostFunc");

	CK(p_cuInit(0));
	CK(p_cuModuleGetFunction(&f, NULL, "bench_kernel"));
	CK(p_cuStreamCreate(&s, 0));

#define LAUNCH() CK(p_cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, s, params, NULL))
	if (!strcmp(mode, "launch")) {
		for (i = 0; i < warm; i++)
			LAUNCH();
		CK(p_cuStreamSynchronize(s));
		if (gated)
			CK(p_cuLaunchHostFunc(s, gate, NULL));
		t0 = now_ns();
		for (i = 0; i < n; i++)
			LAUNCH();
		t1 = now_ns();
		__atomic_store_n(&gate_open, 1, __ATOMIC_RELEASE);
		CK(p_cuStreamSynchronize(s));
		t2 = now_ns();
		printf("mode=launch gated=%d launches=%llu kernels=%llu ns_per_launch=%.1f sync_ms=%.2f\n",
		       gated, (unsigned long long)n, (unsigned long long)(n + warm),
		       (double)(t1 - t0) / n, (t2 - t1) / 1e6);
	} else if (!strcmp(mode, "rounds")) {
		for (i = 0; i < warm; i++)
			LAUNCH();
		CK(p_cuStreamSynchronize(s));
		for (uint64_t round = 0; round < r; round++) {
			struct timespec ts = { 0, 100000000 };
			uint64_t c0, c1;
			char b;

			while (tin >= 0 && read(tin, &b, 1) != 1)
				if (errno != EINTR)
					return 1;
			t0 = now_ns();
			c0 = thread_cpu_ns();
			for (i = 0; i < n; i++)
				LAUNCH();
			c1 = thread_cpu_ns();
			t1 = now_ns();
			CK(p_cuStreamSynchronize(s));
			t2 = now_ns();
			printf("round=%llu t_ms=%.0f ns_per_launch=%.1f cpu_ns_per_launch=%.1f "
			       "round_ns_per_launch=%.1f\n", (unsigned long long)round, t0 / 1e6,
			       (double)(t1 - t0) / n, (double)(c1 - c0) / n, (double)(t2 - t0) / n);
			fflush(stdout);
			if (tout < 0)
				nanosleep(&ts, NULL);
			while (tout >= 0 && write(tout, ".", 1) != 1)
				if (errno != EINTR)
					return 1;
		}
	} else {
		CUgraph g;
		CUgraphExec e;

		CK(p_cuStreamBeginCapture(s, 0 /* CU_STREAM_CAPTURE_MODE_GLOBAL */));
		for (i = 0; i < k; i++)
			LAUNCH();
		CK(p_cuStreamEndCapture(s, &g));
		CK(p_cuGraphInstantiate(&e, g, 0));
		t0 = now_ns();
		for (i = 0; i < r; i++)
			CK(p_cuGraphLaunch(e, s));
		t1 = now_ns();
		CK(p_cuStreamSynchronize(s));
		t2 = now_ns();
		printf("mode=graph kernels_per_graph=%llu replays=%llu kernels=%llu launch_ms=%.2f "
		       "total_ms=%.2f records_per_s=%.0f\n",
		       (unsigned long long)k, (unsigned long long)r, (unsigned long long)(k * r),
		       (t1 - t0) / 1e6, (t2 - t0) / 1e6, (double)(k * r) * 1e9 / (t2 - t0));
	}
	fflush(stdout);
	return 0;
}
