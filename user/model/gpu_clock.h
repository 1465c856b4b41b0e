/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * GPU work put back after the calls that caused it.  CUPTI converts the
 * GPU's timestamps to the host clock by linear interpolation between
 * calibration points; on an H200 its slope was seen off by several us per
 * second until the next calibration (more after a re-attach: kernels up to
 * 87 us early), so kernels drift before the launches that caused them.  No GPU work starts before its
 * call: that bound, per process and device, is what the repair restores,
 * and no more.
 *
 * In windows of GPU_CLOCK_WINDOW_NS of a (pid, device)'s GPU time, the
 * deficit is the largest lead of a record over its call, plus 1 ns (work
 * put at its call's very start could be ordered before it).  The shift is
 * piecewise linear over the windows' edges, each edge taking the larger
 * deficit of its two windows, so that every record's start lands at or
 * after its call's, then raised where needed so that it changes by at most
 * GPU_CLOCK_SLOPE_NS a window (1e-4: a record's duration changes by less
 * than 1e-4 of it, where windows whose work led no call lie between two
 * whose work did).  Every kernel, copy and memset of that process and
 * device moves by the shift at its start (its end by the shift at its end):
 * the shift varies by microseconds per window, so work on one stream keeps
 * its order.  Deficits over GPU_CLOCK_MAX_REPAIR_NS are not a drift: that
 * device is left as it is (and counted as skewed by model_finish), as is
 * one whose GPU time spans over GPU_CLOCK_MAX_WINDOWS windows.
 */
#ifndef GPUBPF_GPU_CLOCK_H
#define GPUBPF_GPU_CLOCK_H

#include <stdint.h>

struct model;

#define GPU_CLOCK_WINDOW_NS     100000000ULL    /* 100 ms */
#define GPU_CLOCK_SLOPE_NS      (GPU_CLOCK_WINDOW_NS / 10000)   /* 10 us a window */
#define GPU_CLOCK_MAX_REPAIR_NS 10000000ULL     /* 10 ms */
#define GPU_CLOCK_MAX_WINDOWS   (1ULL << 24)    /* 19 days of GPU time */

/*
 * Repair the GPU events of m (linked to their calls: e->link) in place:
 * their order in m->ev may change (the caller sorts again when *moved).
 * *moved: the records moved, also added to m->clock_repaired; the largest
 * shift is kept in m->max_clock_repair_ns.  0, or -ENOMEM.
 */
int gpu_clock_repair(struct model *m, uint64_t *moved);

#endif
