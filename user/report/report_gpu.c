// SPDX-License-Identifier: BSD-2-Clause
/*
 * GPU usage, idle causes, sync hotspots, launch-bound streams and
 * communication overlap, per process and device.
 *
 * Busy time is the union of the device's kernel, copy and memset
 * intervals (all streams); the span runs from the device's first GPU
 * activity to its last.  Each idle gap [g0, g1) inside the span ends with
 * some GPU work W; L is the time of the host call that launched W (found
 * by correlation id).
 *  - L <= g0: W was already queued when the device went idle; it waited
 *    on something else (an event or stream dependency, the copy engine):
 *    the whole gap is "other".
 *  - L > g0: the device ran dry waiting for the host.  The part [g0,
 *    min(L, g1)) is
 *      "sync-bound", up to the sync's own duration, if when the gap began
 *      a host thread of the process was blocked in a sync call (stream,
 *      context or event synchronize, or a synchronous copy; a call in
 *      progress at g0, or that returned at most SYNC_SLACK before it):
 *      the sync drained the queue, and the host time it spent blocked
 *      would otherwise have gone to queueing the next work ahead, so the
 *      device idles that much longer for it (its hotspot's gpu_idle).  A
 *      gap longer than that sync was the host's doing (a 4 s startup
 *      after a 50 us sync is not the sync's): the rest is host-bound;
 *      "host-bound" otherwise: the launch simply came late;
 *    and the rest, [L, g1) (launch latency), is "other".
 *  - W without a known launch call: "other".
 * host_bound + sync_bound + other = span - busy.  Host-bound time is also
 * kept by the site and stream of W's launch (rep_late), for the findings,
 * and split by what the launching thread was doing (report_cause.c).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lib/array.h"
#include "lib/hashmap.h"
#include "report/report.h"

#define SYNC_SLACK 50000        /* ns */

uint64_t report_median_u64(uint64_t *v, size_t n)
{
	if (!n)
		return 0;
	qsort(v, n, sizeof(*v), array_cmp_u64);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static const struct rt_table *sort_t;

/* GPU work by device, stream, start */
static int cmp_dev_ts(const void *a, const void *b)
{
	const struct rt_event *x = &sort_t->ev[*(const uint32_t *)a];
	const struct rt_event *y = &sort_t->ev[*(const uint32_t *)b];

	if (x->device != y->device)
		return x->device < y->device ? -1 : 1;
	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	return (*(const uint32_t *)a > *(const uint32_t *)b) - (*(const uint32_t *)a < *(const uint32_t *)b);
}

static int cmp_stream_ts(const void *a, const void *b)
{
	const struct rt_event *x = &sort_t->ev[*(const uint32_t *)a];
	const struct rt_event *y = &sort_t->ev[*(const uint32_t *)b];

	if (x->device != y->device)
		return x->device < y->device ? -1 : 1;
	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	return 0;
}

/*
 * The syncs that may be in progress at a gap's start g0, which only rises
 * along a device's work: those started by then are taken in order, those
 * over before it dropped.
 */
struct sync_sweep {
	const uint32_t *syncs;          /* by start */
	size_t n, next;
	uint32_t *live;                 /* indices into syncs */
	size_t nlive;
};

/*
 * The longest sync call in progress at g0 (or returned within SYNC_SLACK
 * before it), index into syncs or -1: the one that drained the queue, not
 * a short poll of another thread's that happened to end later (it was the
 * one that ended last, among at most 512 started before g0: a long sync
 * with more after its start went unseen).
 */
static long sync_at(const struct rt_table *t, struct sync_sweep *w, int64_t g0)
{
	long best = -1;
	size_t k = 0;

	while (w->next < w->n && t->ev[w->syncs[w->next]].ts <= g0)
		w->live[w->nlive++] = w->next++;
	for (size_t i = 0; i < w->nlive; i++) {
		const struct rt_event *s = &t->ev[w->syncs[w->live[i]]];

		if (s->ts + s->dur < g0 - SYNC_SLACK)
			continue;       /* over for good: g0 only rises */
		w->live[k++] = w->live[i];
		if (best < 0 || s->dur > t->ev[w->syncs[best]].dur)
			best = w->live[i];
	}
	w->nlive = k;
	return best;
}

struct ivl {
	int64_t a, b;
};

/* Length of [a, b) covered by the sorted disjoint intervals u[0..n). */
static int64_t covered(const struct ivl *u, size_t n, int64_t a, int64_t b)
{
	size_t lo = 0, hi = n;
	int64_t c = 0;

	while (lo < hi) {       /* first interval ending after a */
		size_t mid = (lo + hi) / 2;

		if (u[mid].b <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t k = lo; k < n && u[k].a < b; k++) {
		int64_t x = u[k].a > a ? u[k].a : a, y = u[k].b < b ? u[k].b : b;

		if (y > x)
			c += y - x;
	}
	return c;
}

/* rp->late by (site, device, stream, long gap or not) */
struct late_map {
	struct hashmap map;     /* hash -> index into rp->late */
	size_t cap;
};

/* Add host-bound idle ns ended by e, launched by l: its entry, NULL without memory. */
static struct rep_late *late_add(const struct rt_table *t, struct late_map *lm, struct rep_proc *rp,
		    const struct rt_event *l, const struct rt_event *e, uint64_t ns)
{
	uint32_t site = rt_site(t, l);
	uint8_t long_gap = ns > REP_LONG_GAP_NS;
	uint64_t h = hashmap_hash2(site, (uint64_t)e->device << 32 | e->tid) ^ long_gap;
	struct hashmap_slot *s;
	struct rep_late *x = NULL;

	for (s = hashmap_find(&lm->map, h); s && !x; s = hashmap_find_next(&lm->map, s))
		if (rp->late[s->val].site == site && rp->late[s->val].device == e->device &&
		    rp->late[s->val].stream == e->tid && rp->late[s->val].long_gap == long_gap)
			x = &rp->late[s->val];
	if (!x) {
		if (array_grow(&rp->late, &lm->cap, rp->nlate + 1) ||
		    hashmap_add(&lm->map, h, rp->nlate))
			return NULL;
		x = &rp->late[rp->nlate++];
		*x = (struct rep_late){ .site = site, .device = e->device, .stream = e->tid,
					.long_gap = long_gap };
	}
	x->count++;
	x->idle_ns += ns;
	return x;
}

static int device_usage(const struct rt_table *t, const struct hashmap *cm, struct late_map *lm,
			struct rep_proc *rp, const uint32_t *g, size_t n, const uint32_t *syncs,
			size_t nsync, uint64_t *sync_idle)
{
	struct sync_sweep w = { .syncs = syncs, .n = nsync };
	struct rep_device *d;
	int64_t end;
	void *p = realloc(rp->devs, (rp->ndevs + 1) * sizeof(*rp->devs));

	if (!p)
		return -ENOMEM;
	rp->devs = p;
	w.live = malloc((nsync ? nsync : 1) * sizeof(*w.live));
	if (!w.live)
		return -ENOMEM;
	d = &rp->devs[rp->ndevs++];
	memset(d, 0, sizeof(*d));
	d->device = t->ev[g[0]].device;
	d->nwork = n;
	d->first_ns = t->ev[g[0]].ts;
	end = t->ev[g[0]].ts + t->ev[g[0]].dur;
	d->busy_ns = t->ev[g[0]].dur;
	for (size_t i = 1; i < n; i++) {
		const struct rt_event *e = &t->ev[g[i]];
		const struct rt_event *l;
		struct rep_late *x;
		int64_t g0 = end, g1 = e->ts, wait;
		long s;

		if (e->ts + e->dur <= end)
			continue;
		if (e->ts < end) {
			d->busy_ns += e->ts + e->dur - end;
			end = e->ts + e->dur;
			continue;
		}
		d->busy_ns += e->dur;
		end = e->ts + e->dur;
		if (g1 == g0)
			continue;
		l = report_launch_of(cm, t, e);
		if (!l || l->ts <= g0) {
			d->other_ns += g1 - g0;
			continue;
		}
		wait = (l->ts < g1 ? l->ts : g1) - g0;
		d->other_ns += g1 - g0 - wait;
		s = sync_at(t, &w, g0);
		if (s >= 0) {
			int64_t sb = t->ev[syncs[s]].dur < wait ? t->ev[syncs[s]].dur : wait;

			d->sync_bound_ns += sb;
			sync_idle[s] += sb;
			g0 += sb;
			wait -= sb;
		}
		if (wait > 0) {
			d->host_bound_ns += wait;
			x = late_add(t, lm, rp, l, e, wait);
			if (!x || report_causes_add(t, d, x, l, g0, g0 + wait)) {
				free(w.live);
				return -ENOMEM;
			}
		}
	}
	free(w.live);
	d->last_ns = end;
	d->span_ns = end - d->first_ns;
	report_causes_sort(d);
	return 0;
}

static int hotspots(const struct rt_table *t, struct rep_proc *rp, const uint32_t *syncs,
		    size_t nsync, const uint64_t *idle)
{
	for (size_t i = 0; i < nsync; i++) {
		const struct rt_event *s = &t->ev[syncs[i]];
		size_t k;

		/* by site and call: a wrapper's line makes several kinds of sync */
		for (k = 0; k < rp->nhot; k++)
			if (rp->hot[k].site == rt_site(t, s) && rp->hot[k].call == s->name)
				break;
		if (k == rp->nhot) {
			void *p = realloc(rp->hot, (rp->nhot + 1) * sizeof(*rp->hot));

			if (!p)
				return -ENOMEM;
			rp->hot = p;
			rp->hot[rp->nhot++] = (struct rep_hotspot){ .site = rt_site(t, s),
								    .call = s->name };
		}
		rp->hot[k].count++;
		rp->hot[k].blocked_ns += s->dur;
		rp->hot[k].gpu_idle_ns += idle[i];
	}
	return 0;
}

static int cmp_hot(const void *a, const void *b)
{
	const struct rep_hotspot *x = a, *y = b;
	uint64_t cx = x->gpu_idle_ns + x->blocked_ns, cy = y->gpu_idle_ns + y->blocked_ns;

	return (cx < cy) - (cx > cy);
}

/* Launch-bound streams: over the kernels of one stream, g[0..n). */
static int stream_stats(const struct rt_table *t, const struct hashmap *cm, struct rep_proc *rp,
			const uint32_t *g, size_t n)
{
	uint64_t *durs = malloc(n * sizeof(*durs)), *gaps = malloc(n * sizeof(*gaps));
	const struct rt_event *first_l = NULL, *last_l = NULL;
	size_t late = 0, ngaps = 0, nl = 0;
	struct rep_stream *s;
	void *p;

	if (!durs || !gaps || !(p = realloc(rp->streams, (rp->nstreams + 1) * sizeof(*rp->streams)))) {
		free(durs);
		free(gaps);
		return -ENOMEM;
	}
	rp->streams = p;
	s = &rp->streams[rp->nstreams++];
	memset(s, 0, sizeof(*s));
	s->device = t->ev[g[0]].device;
	s->stream = t->ev[g[0]].tid;
	s->kernels = n;
	for (size_t i = 0; i < n; i++) {
		const struct rt_event *e = &t->ev[g[i]], *l = report_launch_of(cm, t, e);

		durs[i] = e->dur;
		if (l) {
			if (!first_l || l->ts < first_l->ts)
				first_l = l;
			if (!last_l || l->ts > last_l->ts)
				last_l = l;
			nl++;
		}
		if (i + 1 < n) {
			const struct rt_event *x = &t->ev[g[i + 1]], *lx = report_launch_of(cm, t, x);
			int64_t gap = x->ts - (e->ts + e->dur);

			gaps[ngaps++] = gap > 0 ? gap : 0;
			if (gap > 0 && lx && lx->ts > e->ts + e->dur)
				late++;
		}
	}
	s->median_kernel_ns = report_median_u64(durs, n);
	s->median_gap_ns = report_median_u64(gaps, ngaps);
	s->late_fraction = ngaps ? (double)late / ngaps : 0;
	if (nl > 1 && last_l->ts > first_l->ts) {
		s->launch_rate = (nl - 1) * 1e9 / (last_l->ts - first_l->ts);
		s->host_per_launch_ns = (last_l->ts - first_l->ts) / (nl - 1);
	}
	s->launch_bound = n >= 8 && s->median_gap_ns > s->median_kernel_ns &&
			  s->median_gap_ns <= REP_LAUNCH_GAP_NS && s->late_fraction >= 0.5;
	free(durs);
	free(gaps);
	return 0;
}

/* NCCL kernels: how much of each ran with no compute kernel on its device. */
static int comm_overlap(const struct rt_table *t, const struct hashmap *cm, struct rep_proc *rp,
			const uint32_t *g, size_t n)
{
	struct ivl *u = malloc((n + 1) * sizeof(*u));
	uint32_t *cstreams = NULL;
	size_t nu = 0, ncs = 0;

	if (!u)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {        /* g is by start time */
		const struct rt_event *e = &t->ev[g[i]];
		size_t k;

		if (e->kind != RT_KERNEL)
			continue;
		if (nu && e->ts <= u[nu - 1].b) {
			if (e->ts + e->dur > u[nu - 1].b)
				u[nu - 1].b = e->ts + e->dur;
		} else {
			u[nu++] = (struct ivl){ e->ts, e->ts + e->dur };
		}
		for (k = 0; k < ncs && cstreams[k] != e->tid; k++)
			;
		if (k == ncs) {
			void *p = realloc(cstreams, (ncs + 1) * sizeof(*cstreams));

			if (!p)
				goto nomem;
			cstreams = p;
			cstreams[ncs++] = e->tid;
		}
	}
	for (size_t i = 0; i < n; i++) {
		const struct rt_event *e = &t->ev[g[i]];
		struct rep_comm *c;
		size_t k;

		if (e->kind != RT_NCCL)
			continue;
		for (k = 0; k < rp->ncomm; k++)
			if (rp->comm[k].kernel == e->name && rp->comm[k].device == e->device &&
			    rp->comm[k].stream == e->tid)
				break;
		if (k == rp->ncomm) {
			void *p = realloc(rp->comm, (rp->ncomm + 1) * sizeof(*rp->comm));

			if (!p)
				goto nomem;
			rp->comm = p;
			c = &rp->comm[rp->ncomm++];
			*c = (struct rep_comm){ .kernel = e->name, .device = e->device, .stream = e->tid };
			for (size_t j = 0; j < ncs; j++)
				if (cstreams[j] == e->tid)
					c->same_stream_as_compute = true;
		}
		c = &rp->comm[k];
		if (!c->site && report_launch_of(cm, t, e))
			c->site = rt_site(t, report_launch_of(cm, t, e));
		c->count++;
		c->total_ns += e->dur;
		c->exposed_ns += e->dur - covered(u, nu, e->ts, e->ts + e->dur);
	}
	free(u);
	free(cstreams);
	return 0;
nomem:
	free(u);
	free(cstreams);
	return -ENOMEM;
}

int report_gpu(const struct rt_table *t, struct report *r)
{
	struct hashmap cm;
	struct late_map lm = { .cap = 0 };
	uint32_t *g = NULL, *syncs = NULL;
	uint64_t *idle = NULL;
	int ret = -ENOMEM;

	hashmap_init(&cm);
	hashmap_init(&lm.map);
	if (report_corr_build(&cm, t))
		goto out;
	g = malloc((t->nev + 1) * sizeof(*g));
	syncs = malloc((t->nev + 1) * sizeof(*syncs));
	if (!g || !syncs)
		goto out;
	sort_t = t;
	for (size_t p = 0; p < r->nprocs; p++) {
		struct rep_proc *rp = &r->procs[p];
		size_t n = 0, ns = 0;

		for (size_t i = 0; i < t->nev; i++) {
			const struct rt_event *e = &t->ev[i];

			if (e->proc != p)
				continue;
			if (e->kind != RT_API)
				g[n++] = i;
			else if ((e->flags & RTF_SYNC) && e->dur > 0)
				syncs[ns++] = i;
		}
		rp->nsync = ns;
		hashmap_release(&lm.map);
		hashmap_init(&lm.map);
		lm.cap = 0;
		free(idle);
		idle = calloc(ns + 1, sizeof(*idle));
		if (!idle)
			goto out;
		qsort(g, n, sizeof(*g), cmp_dev_ts);
		for (size_t a = 0, b; a < n; a = b) {
			for (b = a; b < n && t->ev[g[b]].device == t->ev[g[a]].device; b++)
				;
			if ((ret = device_usage(t, &cm, &lm, rp, g + a, b - a, syncs, ns, idle)) ||
			    (ret = comm_overlap(t, &cm, rp, g + a, b - a)))
				goto out;
			ret = -ENOMEM;
		}
		if (hotspots(t, rp, syncs, ns, idle))
			goto out;
		if (rp->nhot)   /* rp->hot is NULL without hotspots */
			qsort(rp->hot, rp->nhot, sizeof(*rp->hot), cmp_hot);
		/* kernels only, by stream */
		{
			size_t k = 0;

			for (size_t i = 0; i < n; i++)
				if (t->ev[g[i]].kind == RT_KERNEL || t->ev[g[i]].kind == RT_NCCL)
					g[k++] = g[i];
			n = k;
		}
		qsort(g, n, sizeof(*g), cmp_stream_ts);
		for (size_t a = 0, b; a < n; a = b) {
			for (b = a; b < n && t->ev[g[b]].device == t->ev[g[a]].device &&
				    t->ev[g[b]].tid == t->ev[g[a]].tid; b++)
				;
			if (stream_stats(t, &cm, rp, g + a, b - a))
				goto out;
		}
	}
	ret = 0;
out:
	hashmap_release(&cm);
	hashmap_release(&lm.map);
	free(g);
	free(syncs);
	free(idle);
	return ret;
}
