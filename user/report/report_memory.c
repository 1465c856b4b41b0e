// SPDX-License-Identifier: BSD-2-Clause
/*
 * Device memory per process and device: in use over time, its peak, and
 * the allocation that reached it with its innermost user Python frame.
 * From the process's CUPTI memory records when it has any (they see every
 * allocation, a library's included, on its device), else from its
 * allocation and free calls (memory.h), never both.  Host calls carry no
 * device: a process's calls are counted on the device of its GPU work (the
 * first, if it used several), device 0 without GPU work.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "model/memory.h"
#include "report/report.h"

static const struct rt_table *sort_t;

static int cmp_mem(const void *a, const void *b)
{
	const struct rt_mem *x = &sort_t->mem[*(const uint32_t *)a];
	const struct rt_mem *y = &sort_t->mem[*(const uint32_t *)b];

	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	return (*(const uint32_t *)a > *(const uint32_t *)b) - (*(const uint32_t *)a < *(const uint32_t *)b);
}

static bool proc_has_records(const struct rt_table *t, uint32_t proc)
{
	for (size_t i = 0; i < t->nmem; i++)
		if (t->mem[i].proc == proc && t->mem[i].gpu)
			return true;
	return false;
}

int report_mem_track(const struct rt_table *t, uint32_t proc, uint32_t device,
		     struct mem_tracker *mt)
{
	uint32_t *ix = malloc((t->nmem + 1) * sizeof(*ix));
	bool gpu = proc_has_records(t, proc);
	size_t n = 0;
	int ret = 0;

	mem_tracker_init(mt);
	if (!ix)
		return -ENOMEM;
	for (size_t i = 0; i < t->nmem; i++)
		if (t->mem[i].proc == proc && t->mem[i].gpu == gpu &&
		    (!gpu || t->mem[i].device == device))
			ix[n++] = i;
	sort_t = t;
	qsort(ix, n, sizeof(*ix), cmp_mem);
	for (size_t i = 0; i < n && !ret; i++) {
		const struct rt_mem *m = &t->mem[ix[i]];

		if (m->op == RTM_ALLOC)
			ret = mem_tracker_alloc(mt, m->key, m->bytes, m->ts,
						rt_stack_site(t, m->stack, m->attributed), m->name);
		else
			mem_tracker_free(mt, m->key, m->ts);
	}
	free(ix);
	return ret;
}

/* Add the memory figures of process p on device, if it allocated there. */
static int mem_device(const struct rt_table *t, struct rep_proc *rp, uint32_t p, uint32_t device)
{
	struct mem_tracker mt;
	struct rep_mem_dev *d;
	void *q;

	if (report_mem_track(t, p, device, &mt)) {
		mem_tracker_release(&mt);
		return -ENOMEM;
	}
	if (!mt.allocs) {
		mem_tracker_release(&mt);
		return 0;
	}
	q = realloc(rp->mem, (rp->nmem + 1) * sizeof(*rp->mem));
	if (!q) {
		mem_tracker_release(&mt);
		return -ENOMEM;
	}
	rp->mem = q;
	d = &rp->mem[rp->nmem++];
	memset(d, 0, sizeof(*d));
	d->device = device;
	d->allocs = mt.allocs;
	d->frees = mt.frees;
	d->peak_bytes = mt.peak;
	d->end_bytes = mt.in_use;
	d->peak_ts = mt.peak_ts;
	d->peak_site = mt.blocks[mt.peak_block].site;
	d->peak_call = mt.blocks[mt.peak_block].name;
	d->peak_alloc_bytes = mt.blocks[mt.peak_block].bytes;
	mem_tracker_release(&mt);
	return 0;
}

int report_memory(const struct rt_table *t, struct report *r)
{
	for (size_t p = 0; p < r->nprocs; p++) {
		struct rep_proc *rp = &r->procs[p];
		int64_t dev = -1;

		if (!proc_has_records(t, p)) {
			if (mem_device(t, rp, p, rp->ndevs ? rp->devs[0].device : 0))
				return -ENOMEM;
			continue;
		}
		/* each device of the process's records, in ascending order */
		for (;;) {
			int64_t next = INT64_MAX;

			for (size_t i = 0; i < t->nmem; i++)
				if (t->mem[i].proc == p && t->mem[i].gpu && t->mem[i].device > dev &&
				    t->mem[i].device < next)
					next = t->mem[i].device;
			if (next == INT64_MAX)
				break;
			if (mem_device(t, rp, p, (uint32_t)next))
				return -ENOMEM;
			dev = next;
		}
	}
	return 0;
}
