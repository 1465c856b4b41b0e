// SPDX-License-Identifier: BSD-2-Clause
/*
 * Why the host launched late: each host-bound gap [a, b) (report_gpu.c)
 * is split by the state of the thread that made the launch ending it,
 * over the same interval, from its state spans (rt_table.states).  Time
 * in a wait goes to that wait at the line the thread blocked in (the
 * wait's Python stack), else at the launch's site; time running goes to
 * the sites of the thread's CPU samples' stacks in it, evenly
 * (each sample an equal share), as "gc" for samples taken in the garbage
 * collector, or to the launch's site without samples; time with no state
 * recorded is "other".  The parts sum to the gap
 * exactly.
 */
#include <errno.h>
#include <stdlib.h>

#include "lib/array.h"
#include "report/report.h"

static const char *const cause_names[REP_NCAUSES] = {
	[MS_RUNNING] = "running",
	[MS_RUNNABLE] = "runnable",
	[MS_GIL_WAIT] = "gil_wait",
	[MS_LOCK_WAIT] = "lock_wait",
	[MS_IO] = "io",
	[MS_SLEEP] = "sleep",
	[MS_OTHER_WAIT] = "other",
	[REP_CAUSE_GC] = "gc",
};

const char *report_cause_name(unsigned cause)
{
	return cause < REP_NCAUSES ? cause_names[cause] : "other";
}

static int cause_add(struct rep_device *d, struct rep_late *x, unsigned cause, uint32_t site,
		     uint64_t ns)
{
	size_t k;

	if (!ns)
		return 0;
	x->cause_ns[cause] += ns;
	for (k = 0; k < d->ncauses; k++)
		if (d->causes[k].cause == cause && d->causes[k].site == site)
			break;
	if (k == d->ncauses) {
		if (array_grow(&d->causes, &d->capcauses, k + 1))
			return -ENOMEM;
		d->causes[d->ncauses++] = (struct rep_cause){ .cause = cause, .site = site };
	}
	d->causes[k].ns += ns;
	return 0;
}

/* (pid, tid, ts) against (p, q, u): <0, 0, >0. */
static int key_cmp(uint32_t pid, uint32_t tid, int64_t ts, uint32_t p, uint32_t q, int64_t u)
{
	if (pid != p)
		return pid < p ? -1 : 1;
	if (tid != q)
		return tid < q ? -1 : 1;
	return (ts > u) - (ts < u);
}

/* The first span of thread (pid, tid) ending after a. */
static size_t first_state(const struct rt_table *t, uint32_t pid, uint32_t tid, int64_t a)
{
	size_t lo = 0, hi = t->nstates;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		const struct rt_state *s = &t->states[mid];

		if (key_cmp(s->pid, s->tid, s->ts + s->dur, pid, tid, a) <= 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The first sample of thread (pid, tid) at or after a. */
static size_t first_sample(const struct rt_table *t, uint32_t pid, uint32_t tid, int64_t a)
{
	size_t lo = 0, hi = t->nsamples;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		const struct rt_sample *s = &t->samples[mid];

		if (key_cmp(s->pid, s->tid, s->ts, pid, tid, a) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* [a, b) running: shared evenly by the sites (and gc) of the thread's samples in it. */
static int running(const struct rt_table *t, struct rep_device *d, struct rep_late *x,
		   const struct rt_event *l, uint32_t pid, int64_t a, int64_t b)
{
	size_t i = first_sample(t, pid, l->tid, a), n = 0;
	uint64_t ns = b - a, done = 0;

	while (i + n < t->nsamples && t->samples[i + n].pid == pid &&
	       t->samples[i + n].tid == l->tid && t->samples[i + n].ts < b)
		n++;
	if (!n)
		return cause_add(d, x, MS_RUNNING, rt_site(t, l), ns);
	for (size_t k = 0; k < n; k++) {
		uint64_t upto = (unsigned __int128)ns * (k + 1) / n;
		uint32_t site = rt_stack_site(t, t->samples[i + k].stack, false);

		if (cause_add(d, x, t->samples[i + k].gc ? REP_CAUSE_GC : MS_RUNNING,
			      site ? site : rt_site(t, l), upto - done))
			return -ENOMEM;
		done = upto;
	}
	return 0;
}

int report_causes_add(const struct rt_table *t, struct rep_device *d, struct rep_late *x,
		      const struct rt_event *l, int64_t a, int64_t b)
{
	uint32_t pid = t->procs[l->proc].pid, site = rt_site(t, l);
	int64_t at = a;

	for (size_t i = first_state(t, pid, l->tid, a); i < t->nstates; i++) {
		const struct rt_state *s = &t->states[i];
		int64_t x0 = s->ts > at ? s->ts : at;
		int64_t x1 = s->ts + s->dur < b ? s->ts + s->dur : b;
		uint32_t in;

		if (s->pid != pid || s->tid != l->tid || s->ts >= b)
			break;
		if (x1 <= x0)
			continue;
		in = rt_stack_site(t, s->stack, false);         /* a wait's line */
		if (cause_add(d, x, MS_OTHER_WAIT, site, x0 - at) ||
		    (s->state == MS_RUNNING ? running(t, d, x, l, pid, x0, x1)
					    : cause_add(d, x, s->state, in ? in : site, x1 - x0)))
			return -ENOMEM;
		at = x1;
	}
	return cause_add(d, x, MS_OTHER_WAIT, site, b - at);
}

static int cmp_cause(const void *a, const void *b)
{
	const struct rep_cause *x = a, *y = b;

	if (x->ns != y->ns)
		return x->ns < y->ns ? 1 : -1;
	if (x->cause != y->cause)
		return x->cause < y->cause ? -1 : 1;
	return (x->site > y->site) - (x->site < y->site);
}

void report_causes_sort(struct rep_device *d)
{
	if (d->ncauses)
		qsort(d->causes, d->ncauses, sizeof(*d->causes), cmp_cause);
}
