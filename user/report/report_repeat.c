// SPDX-License-Identifier: BSD-2-Clause
/*
 * Repeated work: a kernel launched again within one step on the same grid,
 * block, shared memory and argument bytes (a kernel row's aux, see
 * report_table.h) computes the same output from the same inputs again,
 * unless something wrote those inputs in between, which gpubpf cannot see:
 * so the finding says the output is possibly recomputed.  Per process
 * with steps (report_iter.c), each kernel goes to the step of its launch;
 * within a step, every launch of a (name, identity) after its first is a
 * repeat.  Repeats are grouped by kernel name and launch site, and a group
 * is kept when it repeats in at least half of the steps, and in two.
 * Kernels whose arguments are not known (a driver before CUDA 12.4, graph
 * nodes, a trace without them) are never repeats.
 */
#include <errno.h>
#include <stdlib.h>

#include "lib/array.h"
#include "lib/hashmap.h"
#include "report/report.h"

struct launch {
	uint64_t step;
	uint32_t name, id, site;
	int64_t ts, dur;
};

static int cmp_launch(const void *a, const void *b)
{
	const struct launch *x = a, *y = b;

	if (x->step != y->step)
		return x->step < y->step ? -1 : 1;
	if (x->name != y->name)
		return x->name < y->name ? -1 : 1;
	if (x->id != y->id)
		return x->id < y->id ? -1 : 1;
	return (x->ts > y->ts) - (x->ts < y->ts);
}

static int cmp_repeat(const void *a, const void *b)
{
	const struct rep_repeat *x = a, *y = b;

	if (x->gpu_ns != y->gpu_ns)
		return x->gpu_ns < y->gpu_ns ? 1 : -1;
	if (x->kernel != y->kernel)
		return x->kernel < y->kernel ? -1 : 1;
	return (x->site > y->site) - (x->site < y->site);
}

/* The step whose launch started at ts: k with starts[k] <= ts < starts[k + 1], else -1. */
static int64_t step_of(const struct rep_iter *it, int64_t ts)
{
	size_t lo = 0, hi = it->steps;

	if (ts < it->starts[0] || ts >= it->starts[it->steps])
		return -1;
	while (hi - lo > 1) {
		size_t mid = (lo + hi) / 2;

		if (it->starts[mid] <= ts)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

/* One repeat of (name, site) in step: into the group, counting its steps. */
static int add_repeat(struct rep_proc *rp, size_t *cap, uint64_t *last_step,
		      const struct launch *l)
{
	size_t k;

	for (k = 0; k < rp->nrepeats; k++)
		if (rp->repeats[k].kernel == l->name && rp->repeats[k].site == l->site)
			break;
	if (k == rp->nrepeats) {
		if (array_grow(&rp->repeats, cap, k + 1))
			return -ENOMEM;
		rp->repeats[rp->nrepeats++] = (struct rep_repeat){ .kernel = l->name,
								   .site = l->site };
		last_step[k] = UINT64_MAX;
	}
	rp->repeats[k].count++;
	rp->repeats[k].gpu_ns += l->dur;
	if (last_step[k] != l->step) {
		rp->repeats[k].steps++;
		last_step[k] = l->step;
	}
	return 0;
}

static int proc_repeats(const struct rt_table *t, const struct hashmap *corr, uint32_t proc,
			struct rep_proc *rp)
{
	const struct rep_iter *it = &rp->iter;
	struct launch *v = NULL;
	uint64_t *last_step = NULL;
	size_t n = 0, cap = 0, rcap = 0, kept = 0;
	int ret = -ENOMEM;

	if (!it->found || !it->starts || it->steps < 2)
		return 0;
	for (size_t i = 0; i < t->nev; i++) {
		const struct rt_event *e = &t->ev[i], *l;
		int64_t step;

		if (e->proc != proc || e->kind != RT_KERNEL || !e->aux ||
		    !(l = report_launch_of(corr, t, e)) || (step = step_of(it, l->ts)) < 0)
			continue;
		if (array_grow(&v, &cap, n + 1))
			goto out;
		v[n++] = (struct launch){ .step = step, .name = e->name, .id = e->aux,
					  .site = rt_site(t, l), .ts = e->ts, .dur = e->dur };
	}
	if (!n) {
		ret = 0;
		goto out;
	}
	qsort(v, n, sizeof(*v), cmp_launch);
	/* at most one group per launch */
	last_step = malloc(n * sizeof(*last_step));
	if (!last_step)
		goto out;
	for (size_t i = 1; i < n; i++)
		if (v[i].step == v[i - 1].step && v[i].name == v[i - 1].name &&
		    v[i].id == v[i - 1].id && add_repeat(rp, &rcap, last_step, &v[i]))
			goto out;
	for (size_t k = 0; k < rp->nrepeats; k++)
		if (rp->repeats[k].steps >= 2 && 2 * rp->repeats[k].steps >= it->steps)
			rp->repeats[kept++] = rp->repeats[k];
	rp->nrepeats = kept;
	if (kept)
		qsort(rp->repeats, kept, sizeof(*rp->repeats), cmp_repeat);
	ret = 0;
out:
	free(v);
	free(last_step);
	return ret;
}

int report_repeats(const struct rt_table *t, struct report *r)
{
	struct hashmap corr;
	int ret;

	hashmap_init(&corr);
	ret = report_corr_build(&corr, t);
	for (size_t p = 0; p < r->nprocs && !ret; p++)
		ret = proc_repeats(t, &corr, p, &r->procs[p]);
	hashmap_release(&corr);
	return ret;
}
