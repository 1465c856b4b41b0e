// SPDX-License-Identifier: BSD-2-Clause
/*
 * nativestack: calls libcuda through named C++ functions, built with frame
 * pointers, so that native stacks have known frames (tests/t0310).
 *
 *	nativestack LIBPATH [SPIN_MS]
 *
 * Innermost first, the stacks are:
 *	cuLaunchKernel    <- gbtest::detail::launch_one(int)
 *	                  <- gbtest::Trainer<float>::step(int) <- gbtest::run(int) <- main
 *	cuCtxSynchronize  <- gbtest::detail::sync_all()
 *	                  <- gbtest::Trainer<float>::step(int) <- gbtest::run(int) <- main
 *	cuCtxSynchronize  <- gbtest::detail::sync_all() <- gbtest::recurse(int) x3
 *	                  <- gbtest::run(int) <- main
 * and then, for SPIN_MS milliseconds, it computes in gbtest::spin_inner(long)
 * <- gbtest::spin(int) <- main (CPU samples: t0310).
 */
#include <time.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

typedef int (*init_fn)(unsigned);
typedef int (*sync_fn)(void);
typedef int (*launch_fn)(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
			 unsigned, void *, void **, void **);

static init_fn cu_init;
static sync_fn cu_sync;
static launch_fn cu_launch;

#define NOINLINE __attribute__((noinline))

namespace gbtest {
namespace detail {

NOINLINE int launch_one(int i)
{
	/* no such kernel: the simulator refuses it, the probe sees it */
	return cu_launch(nullptr, 1 + i, 1, 1, 32, 1, 1, 0, nullptr, nullptr, nullptr);
}

NOINLINE int sync_all()
{
	return cu_sync();
}

} // namespace detail

template <typename T> struct Trainer {
	T scale;
	NOINLINE int step(int i)
	{
		int r = detail::launch_one(i);

		r |= detail::sync_all();
		return r + (int)scale;
	}
};

NOINLINE int recurse(int n)
{
	if (n > 1)
		return recurse(n - 1) + 1;
	return detail::sync_all();
}

/* n rounds of arithmetic, calling nothing */
NOINLINE long spin_inner(long n)
{
	volatile long x = 1;

	for (long i = 0; i < n; i++)
		x = x * 3 + i;
	return x;
}

NOINLINE long spin(int ms)
{
	struct timespec t0, t;
	long r = 0;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		r += spin_inner(1000000);
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 < ms);
	return r;
}

NOINLINE int run(int steps)
{
	Trainer<float> t{ 0.0f };
	int r = 0;

	for (int i = 0; i < steps; i++)
		r += t.step(i);
	r += recurse(3);
	return r;
}

} // namespace gbtest

int main(int argc, char **argv)
{
	void *h;

	if (argc != 2 && argc != 3) {
		fprintf(stderr, "usage: nativestack LIBPATH [SPIN_MS]\n");
		return 2;
	}
	h = dlopen(argv[1], RTLD_NOW);
	if (!h) {
		fprintf(stderr, "nativestack: %s\n", dlerror());
		return 1;
	}
	cu_init = (init_fn)dlsym(h, "cuInit");
	cu_sync = (sync_fn)dlsym(h, "cuCtxSynchronize");
	cu_launch = (launch_fn)dlsym(h, "cuLaunchKernel");
	if (!cu_init || !cu_sync || !cu_launch || cu_init(0)) {
		fprintf(stderr, "nativestack: not a usable libcuda\n");
		return 1;
	}
	gbtest::run(3);
	if (argc == 3)
		gbtest::spin(atoi(argv[2]));
	/*
	 * gpubpf names frames from the live process's mappings; a stack first
	 * seen in a process's last instant can miss them (documented): stay a
	 * moment so the test checks naming, not that race.
	 */
	usleep(200000);
	return 0;
}
