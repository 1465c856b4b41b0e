/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Sources of GPU activity for the injection library: CUPTI on a real
 * driver (backend_cupti.c); the simulator's variant of the library
 * (build/sim/libgpubpf_cupti.so) adds the simulated driver's profiler
 * hooks (sim/backend_sim.c).  inject.c takes the first of backends[] that
 * applies at InitializeInjection and drives it: enable when a recorder
 * attaches, flush periodically while recording, disable when it detaches.
 * Each backend converts what it gets into gpu_activity.h records and
 * hands them to publish.h; announces correlation ids with publish_api().
 */
#ifndef GPUBPF_BACKEND_H
#define GPUBPF_BACKEND_H

struct backend {
	const char *name;
	/*
	 * 1 if this backend applies to the driver in this process (called
	 * once, from InitializeInjection, on the thread that runs cuInit).
	 */
	int (*probe)(void);
	/* Start collecting: 0, or -errno with publish_error() already called. */
	int (*enable)(void);
	/* Deliver what has been collected so far; forced: include unfinished buffers. */
	void (*flush)(int forced);
	/* Stop collecting, after a forced flush. */
	void (*disable)(void);
	/* Optional: why probe() returned 0, as one lowercase phrase. */
	const char *(*why_not)(void);
};

extern const struct backend backend_cupti;

/*
 * The backends this variant of the library tries, in order, NULL-ended:
 * backends.c in the shipped library, sim/backend_sim.c in the simulator's.
 */
extern const struct backend *const backends[];

#endif
