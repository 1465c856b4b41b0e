// SPDX-License-Identifier: BSD-2-Clause
/*
 * Unit tests of the GPU clock repair (user/model/gpu_clock.c), through
 * model_finish(): GPU work that drifted before its calls is put back after
 * them, by no more than it has to, and nothing else moves.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "model/gpu_clock.h"
#include "model/model.h"
#include "model_util.h"
#include "tap.h"

#define T0 1000000000000ULL     /* 1000 s */
#define STEP 1000000ULL         /* a launch a millisecond */
#define N 1000                  /* for one second */
#define LAT 5000                /* launch to kernel start, ns */
#define DUR 50000               /* each kernel's */

/*
 * pid's launches at T0 + i ms, each with correlation base + i and its
 * kernel on device dev at LAT after it, minus drift_ns_per_s * its time
 * since T0 (a GPU clock running slow against the host's).
 */
static void add_loop(struct model *m, uint32_t pid, uint32_t dev, uint32_t base,
		     int64_t drift_ns_per_s)
{
	for (uint32_t i = 0; i < N; i++) {
		uint64_t t = T0 + i * STEP;
		struct model_event *k;

		/* each device's loop on a thread of its own */
		unit_event(m, t, 0, pid, pid + dev, "cuLaunchKernel");
		model_add_corr(m, t, pid, pid + dev, base + i);
		k = unit_event(m, t + LAT - drift_ns_per_s * (int64_t)(i * STEP) / 1000000000,
			       DUR, pid, 0x40000000, "k");
		k->kind = EV_KERNEL;
		k->device = dev;
		k->correlation = base + i;
	}
}

/* Per (pid, device) of the kernels: their starts after their calls. */
struct lat {
	int64_t min, max;
	uint64_t n, unmoved_early, out_of_order, bad_dur, bad_link;
};

static struct lat latencies(const struct model *m, uint32_t pid, uint32_t dev, uint32_t base)
{
	struct lat l = { .min = INT64_MAX, .max = INT64_MIN };
	uint64_t last_ts = 0;

	for (size_t i = 0; i < m->nev; i++) {
		const struct model_event *e = &m->ev[i], *h;
		int64_t d;

		if (e->kind != EV_KERNEL || e->pid != pid || e->device != dev)
			continue;
		l.n++;
		if (e->link == MODEL_NO_LINK) {
			l.bad_link++;
			continue;
		}
		h = &m->ev[e->link];
		if (h->kind != EV_API || h->correlation != e->correlation)
			l.bad_link++;
		d = (int64_t)(e->ts - h->ts);
		l.min = d < l.min ? d : l.min;
		l.max = d > l.max ? d : l.max;
		/* the first 100 ms drift less than LAT: untouched */
		if (h->ts < T0 + 100 * STEP && d != LAT - (int64_t)(h->ts - T0) / 100000)
			l.unmoved_early++;
		if (e->ts < last_ts || e->correlation - base != (uint32_t)((h->ts - T0) / STEP))
			l.out_of_order++;
		last_ts = e->ts;
		if (e->dur < DUR - 2 || e->dur > DUR + 2)
			l.bad_dur++;
	}
	return l;
}

static void test_drift_repaired(void)
{
	struct model m;
	struct lat l;
	int sorted = 1;

	model_init(&m);
	/* pid 100, device 0: 10 us/s slow: its last kernel starts 4.99 us before its call */
	add_loop(&m, 100, 0, 1, 10000);
	/* device 1 of the same process: no drift */
	add_loop(&m, 100, 1, 10001, 0);
	/* pid 200: 20 ms before its calls by the end: not a drift, left alone */
	add_loop(&m, 200, 0, 1, 20000000);
	ok(!model_finish(&m), "finish");
	for (size_t i = 1; i < m.nev; i++)
		sorted &= m.ev[i - 1].ts <= m.ev[i].ts;
	ok(sorted, "the events are in time order after the repair");

	l = latencies(&m, 100, 0, 1);
	is_int(l.n, N, "pid 100 device 0: every kernel is there");
	is_int(l.bad_link, 0, "each still linked to the call of its correlation");
	ok(l.min >= 1, "no kernel starts before its call, nor at its very start (min %lld ns)",
	   (long long)l.min);
	ok(l.max <= LAT + 2000, "none moved further than two windows' drift (max %lld ns)",
	   (long long)l.max);
	is_int(l.unmoved_early, 0, "the kernels of the first 100 ms, where no window drifted "
	       "past its calls, did not move");
	is_int(l.out_of_order, 0, "the kernels keep their order");
	is_int(l.bad_dur, 0, "durations change by at most 2 ns");
	/* the worst lead: the last kernel, 10 us/s * 0.999 s - LAT */
	is_int(m.max_clock_repair_ns, 9990 - LAT + 1, "the largest shift is the largest lead + 1 ns");
	ok(m.clock_repaired > 0 && m.clock_repaired < N,
	   "the kernels moved are counted (%llu)", (unsigned long long)m.clock_repaired);

	l = latencies(&m, 100, 1, 10001);
	ok(l.n == N && l.min == LAT && l.max == LAT && !l.bad_link,
	   "device 1, which did not drift, is untouched");

	l = latencies(&m, 200, 0, 1);
	is_int(l.min, LAT - 19980000, "pid 200 (20 ms off) is left as it was");
	ok(m.skewed > 0 && m.max_skew_ns == 19980000 - LAT,
	   "and counted as skewed: %llu, by up to %llu ns", (unsigned long long)m.skewed,
	   (unsigned long long)m.max_skew_ns);
	model_release(&m);
}

/* A model finished twice (a trace read back): the second finds nothing to do. */
static void test_idempotent_and_clean(void)
{
	struct model m;
	struct lat l;

	model_init(&m);
	add_loop(&m, 300, 0, 1, 0);
	ok(!model_finish(&m), "finish a model that never drifted");
	is_int(m.clock_repaired, 0, "nothing repaired");
	is_int(m.skewed, 0, "nothing skewed");
	l = latencies(&m, 300, 0, 1);
	ok(l.min == LAT && l.max == LAT, "nothing moved");
	model_release(&m);

	/* a GPU event with no call, far in time: its group is not repaired
	   beyond GPU_CLOCK_MAX_WINDOWS windows, and finish still succeeds */
	model_init(&m);
	add_loop(&m, 400, 0, 1, 10000);
	{
		struct model_event *k = unit_event(&m, UINT64_MAX / 2, DUR, 400, 0x40000000, "k");

		k->kind = EV_KERNEL;
	}
	ok(!model_finish(&m), "finish with a GPU timestamp gone wrong");
	is_int(m.clock_repaired, 0, "such a device is not repaired");
	ok(m.skewed > 0, "its leads are counted as skewed");
	model_release(&m);
}

/*
 * Work that leads its calls by 30 us in the first 100 ms and the last, and
 * not in the 300 ms between: the shift comes down between them no faster
 * than 1e-4, so a kernel across the dip keeps its duration within 1e-4
 * (it lost 3e-4 of it when the shift fell to 0 there).
 */
static void test_no_dip(void)
{
	uint64_t bad_dur = 0, early = 0, n = 0;
	struct model m;

	model_init(&m);
	for (uint32_t i = 0; i < 50; i++) {     /* a 9 ms kernel every 10 ms */
		uint64_t t = T0 + i * 10 * STEP;
		int64_t lead = i < 10 || i >= 40 ? 30000 : -LAT;
		struct model_event *k;

		unit_event(&m, t, 0, 500, 500, "cuLaunchKernel");
		model_add_corr(&m, t, 500, 500, 1 + i);
		k = unit_event(&m, t - lead, 9 * STEP, 500, 0x40000000, "k");
		k->kind = EV_KERNEL;
		k->device = 0;
		k->correlation = 1 + i;
	}
	ok(!model_finish(&m), "finish: 30 us leads, then 300 ms without, then 30 us again");
	for (size_t i = 0; i < m.nev; i++) {
		const struct model_event *e = &m.ev[i];

		if (e->kind != EV_KERNEL || e->link == MODEL_NO_LINK)
			continue;
		n++;
		early += e->ts <= m.ev[e->link].ts;
		bad_dur += e->dur + 2 < 9 * STEP - 9 * STEP / 10000 ||
			   e->dur > 9 * STEP + 9 * STEP / 10000 + 2;
	}
	is_int(n, 50, "every kernel is there, linked to its call");
	is_int(early, 0, "none starts at or before its call");
	is_int(bad_dur, 0, "each keeps its duration within 1e-4 of it");
	model_release(&m);
}

int main(void)
{
	test_drift_repaired();
	test_idempotent_and_clean();
	test_no_dip();
	return done_testing();
}
