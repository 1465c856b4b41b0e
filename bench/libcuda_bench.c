// SPDX-License-Identifier: BSD-2-Clause
/*
 * libcuda_bench.c - a do-nothing "libcuda" for measuring probe cost.
 *
 * Built as build/bench/libcuda.so.1.  Exports the three entry points the
 * cost benchmark needs, each a separate, non-inlined function that returns
 * CUDA_SUCCESS (0) at once, so a timed loop measures only the call plus
 * whatever probes are attached to it.  gpubpf probes cuLaunchKernel at entry
 * only and cuStreamSynchronize at entry and return.
 */
#include <stdint.h>

#define EXPORT __attribute__((visibility("default"), noinline, used))

/* keep the bodies distinct and non-empty for the optimiser */
static volatile unsigned long sink_;

EXPORT int cuInit(unsigned int flags)
{
	sink_ = flags;
	return 0;
}

EXPORT int cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz,
			  unsigned bx, unsigned by, unsigned bz, unsigned shmem,
			  void *stream, void **params, void **extra)
{
	__asm__ volatile("" ::: "memory");
	return 0;
}

EXPORT int cuStreamSynchronize(void *stream)
{
	__asm__ volatile("" ::: "memory");
	return 0;
}
