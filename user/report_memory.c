// SPDX-License-Identifier: BSD-2-Clause
/*
 * Device memory per process: in use over time from the allocation and
 * free calls (memory.h), its peak, and the allocation that reached it with
 * its innermost user Python frame.  Host calls carry no device: a
 * process's allocations are counted on the device of its GPU work (the
 * first, if it used several), device 0 without GPU work.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "memory.h"
#include "report.h"

static const struct rt_table *sort_t;

static int cmp_mem(const void *a, const void *b)
{
	const struct rt_mem *x = &sort_t->mem[*(const uint32_t *)a];
	const struct rt_mem *y = &sort_t->mem[*(const uint32_t *)b];

	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	return (*(const uint32_t *)a > *(const uint32_t *)b) - (*(const uint32_t *)a < *(const uint32_t *)b);
}

int report_mem_track(const struct rt_table *t, uint32_t proc, struct mem_tracker *mt)
{
	uint32_t *ix = malloc((t->nmem + 1) * sizeof(*ix));
	size_t n = 0;
	int ret = 0;

	mem_tracker_init(mt);
	if (!ix)
		return -ENOMEM;
	for (size_t i = 0; i < t->nmem; i++)
		if (t->mem[i].proc == proc)
			ix[n++] = i;
	sort_t = t;
	qsort(ix, n, sizeof(*ix), cmp_mem);
	for (size_t i = 0; i < n && !ret; i++) {
		const struct rt_mem *m = &t->mem[ix[i]];

		if (m->op == RTM_ALLOC)
			ret = mem_tracker_alloc(mt, m->key, m->bytes, m->ts, m->site, m->name);
		else
			mem_tracker_free(mt, m->key, m->ts);
	}
	free(ix);
	return ret;
}

int report_memory(const struct rt_table *t, struct report *r)
{
	for (size_t p = 0; p < r->nprocs; p++) {
		struct rep_proc *rp = &r->procs[p];
		struct mem_tracker mt;
		struct rep_mem_dev *d;

		if (report_mem_track(t, p, &mt)) {
			mem_tracker_release(&mt);
			return -ENOMEM;
		}
		if (!mt.allocs) {
			mem_tracker_release(&mt);
			continue;
		}
		rp->mem = calloc(1, sizeof(*rp->mem));
		if (!rp->mem) {
			mem_tracker_release(&mt);
			return -ENOMEM;
		}
		rp->nmem = 1;
		d = rp->mem;
		d->device = rp->ndevs ? rp->devs[0].device : 0;
		d->allocs = mt.allocs;
		d->frees = mt.frees;
		d->peak_bytes = mt.peak;
		d->end_bytes = mt.in_use;
		d->peak_ts = mt.peak_ts;
		d->peak_site = mt.blocks[mt.peak_block].site;
		d->peak_call = mt.blocks[mt.peak_block].name;
		d->peak_alloc_bytes = mt.blocks[mt.peak_block].bytes;
		mem_tracker_release(&mt);
	}
	return 0;
}
