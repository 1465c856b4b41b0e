/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The simulated driver's profiler interface: what CUPTI is to the real
 * driver.  A profiler loaded into the process (by CUDA_INJECTION64_PATH,
 * which the simulated cuInit honours like the real one: dlopen the library
 * and call its InitializeInjection) subscribes and is then told
 *  - on the calling thread, inside each launch, copy, memset and graph
 *    launch call, the correlation id that call's GPU work will carry (and
 *    a kernel launch's function and arguments);
 *  - when each simulated kernel, copy or memset has finished, when it ran;
 *  - on the calling thread, as each launch, copy, memset or graph launch
 *    call returns, its result (what CUPTI's API-exit callback sees).
 * The driver knows nothing of who subscribes.
 */
#ifndef SIMCU_PROFILER_H
#define SIMCU_PROFILER_H

#include <stdint.h>

enum simcu_kind {
	SIMCU_KERNEL = 1,
	SIMCU_MEMCPY = 2,
	SIMCU_MEMSET = 3,
};

struct simcu_activity {
	uint32_t kind;          /* enum simcu_kind */
	uint32_t correlation;   /* of the call that enqueued the work */
	uint32_t device;        /* always 0 */
	uint32_t stream;        /* small stream id: 1 for the default stream, then 2, 3... */
	uint64_t start, end;    /* CLOCK_MONOTONIC ns, the simulated GPU's clock */
	const char *name;       /* kernels: the kernel name; valid during the call */
	uint32_t grid[3], block[3];
	uint32_t shared_mem;    /* dynamic shared memory of the launch */
	uint32_t copy_kind;     /* copies: 1 HtoD, 2 DtoH, 8 DtoD, 9 HtoH, 10 peer (as CUPTI) */
	uint64_t bytes;         /* copies and memsets */
	uint64_t graph_node;    /* work launched from a graph: its node id, else 0 */
};

/* A kernel launch's function and arguments, as cuLaunchKernel takes them. */
struct simcu_launch {
	void *func;             /* CUfunction */
	void **params;          /* kernelParams */
	void **extra;
};

struct simcu_profiler {
	/*
	 * On the calling thread, during the driver call; function: its
	 * exported name; launch: a kernel launch's, else NULL.
	 */
	void (*api_enter)(void *ctx, uint32_t correlation, const char *function,
			  const struct simcu_launch *launch);
	/* From a stream's worker thread, once the work has finished. */
	void (*activity)(void *ctx, const struct simcu_activity *a);
	void *ctx;
	/*
	 * On the calling thread, as the call returns: the correlation id its
	 * api_enter had (0 if it failed before drawing one), its exported name
	 * and CUresult.  May unsubscribe (as CUPTI's cuptiFinalize from an
	 * API-exit callback).
	 */
	void (*api_exit)(void *ctx, uint32_t correlation, const char *function, int result);
};

/*
 * Exported by the simulated libcuda.so.1.  Subscribe p (copied), or
 * unsubscribe with NULL; returns 0.  Only one subscriber at a time: a
 * second subscription while one is active returns 1 (like CUPTI's
 * CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED).
 */
typedef int (*simcu_subscribe_fn)(const struct simcu_profiler *p);
#define SIMCU_SUBSCRIBE "simcuProfilerSubscribe"

#endif
