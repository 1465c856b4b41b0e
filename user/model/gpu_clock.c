// SPDX-License-Identifier: BSD-2-Clause
/* GPU work put back after the calls that caused it: see gpu_clock.h. */
#include <errno.h>
#include <stdlib.h>
#include "model/gpu_clock.h"
#include "model/model.h"

/* A GPU event's group and start, for sorting. */
struct gkey {
	uint32_t pid, device;
	uint64_t ts;
	uint32_t i;             /* index in m->ev */
};

/* Timed on the GPU's clock: what CUPTI converted. */
static int gpu_timed(const struct model_event *e)
{
	return e->kind == EV_KERNEL || e->kind == EV_MEMCPY || e->kind == EV_MEMSET;
}

static int cmp_group_ts(const void *a, const void *b)
{
	const struct gkey *x = a, *y = b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->device != y->device)
		return x->device < y->device ? -1 : 1;
	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	return x->i < y->i ? -1 : x->i > y->i;
}

/* The shift at t, from the windows' edge shifts edge[0..nw] after t0. */
static uint64_t shift_at(const uint64_t *edge, uint64_t nw, uint64_t t0, uint64_t t)
{
	uint64_t i, off;

	if (t <= t0)
		return edge[0];
	i = (t - t0) / GPU_CLOCK_WINDOW_NS;
	if (i >= nw)
		return edge[nw];
	off = t - t0 - i * GPU_CLOCK_WINDOW_NS;
	return (uint64_t)((int64_t)edge[i] + ((int64_t)edge[i + 1] - (int64_t)edge[i]) *
			  (int64_t)off / (int64_t)GPU_CLOCK_WINDOW_NS);
}

/* One (pid, device): its events g[0..n), by start. */
static int repair_group(struct model *m, const struct gkey *g, size_t n, uint64_t *moved)
{
	uint64_t t0 = g[0].ts, nw, worst = 0, *edge;

	nw = (g[n - 1].ts - t0) / GPU_CLOCK_WINDOW_NS + 1;
	if (nw > GPU_CLOCK_MAX_WINDOWS)
		return 0;       /* no recording spans that: timestamps gone wrong */
	/* edge[i] holds window i's deficit until the edges are made */
	edge = calloc(nw + 1, sizeof(*edge));
	if (!edge)
		return -ENOMEM;
	for (size_t k = 0; k < n; k++) {
		const struct model_event *e = &m->ev[g[k].i], *h;
		uint64_t w = (e->ts - t0) / GPU_CLOCK_WINDOW_NS;

		if (e->link == MODEL_NO_LINK)
			continue;
		h = &m->ev[e->link];
		if (h->ts < e->ts)
			continue;
		/* 1 ns past the call: no tie that could order the work first */
		if (h->ts - e->ts + 1 > edge[w])
			edge[w] = h->ts - e->ts + 1;
		if (edge[w] > worst)
			worst = edge[w];
	}
	/* 1: none before its call (some at its very start) */
	if (worst <= 1 || worst > GPU_CLOCK_MAX_REPAIR_NS)
		goto out;
	/* edge i: the larger deficit of windows i - 1 and i */
	for (uint64_t i = nw; i > 0; i--)
		edge[i] = edge[i] > edge[i - 1] ? edge[i] : edge[i - 1];
	/*
	 * raised where a neighbour is more than GPU_CLOCK_SLOPE_NS higher, so
	 * that the shift never changes faster than that: a window whose work
	 * happened not to lead its calls would otherwise pull the shift down
	 * between two that did, and stretch or shrink what spans the dip
	 */
	for (uint64_t i = 1; i <= nw; i++)
		if (edge[i - 1] > edge[i] + GPU_CLOCK_SLOPE_NS)
			edge[i] = edge[i - 1] - GPU_CLOCK_SLOPE_NS;
	for (uint64_t i = nw; i > 0; i--)
		if (edge[i] > edge[i - 1] + GPU_CLOCK_SLOPE_NS)
			edge[i - 1] = edge[i] - GPU_CLOCK_SLOPE_NS;
	for (size_t k = 0; k < n; k++) {
		struct model_event *e = &m->ev[g[k].i];
		uint64_t s = shift_at(edge, nw, t0, e->ts);
		uint64_t end = e->ts + e->dur;

		if (!s)
			continue;
		end += shift_at(edge, nw, t0, end);
		e->ts += s;
		e->dur = end - e->ts;
		(*moved)++;
		if (s > m->max_clock_repair_ns)
			m->max_clock_repair_ns = s;
	}
out:
	free(edge);
	return 0;
}

int gpu_clock_repair(struct model *m, uint64_t *moved)
{
	struct gkey *g;
	size_t n = 0;
	int ret = 0;

	*moved = 0;
	for (size_t i = 0; i < m->nev; i++)
		n += gpu_timed(&m->ev[i]);
	if (!n)
		return 0;
	g = malloc(n * sizeof(*g));
	if (!g)
		return -ENOMEM;
	n = 0;
	for (size_t i = 0; i < m->nev; i++) {
		const struct model_event *e = &m->ev[i];

		if (gpu_timed(e))
			g[n++] = (struct gkey){ .pid = e->pid, .device = e->device,
						.ts = e->ts, .i = i };
	}
	qsort(g, n, sizeof(*g), cmp_group_ts);
	for (size_t a = 0, b; a < n && !ret; a = b) {
		for (b = a + 1; b < n && g[b].pid == g[a].pid && g[b].device == g[a].device; b++)
			;
		ret = repair_group(m, g + a, b - a, moved);
	}
	free(g);
	m->clock_repaired += *moved;
	return ret;
}
