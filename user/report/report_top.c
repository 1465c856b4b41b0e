// SPDX-License-Identifier: BSD-2-Clause
/*
 * Top kernels (count, total, mean, share of the process's kernel time) and
 * top driver calls by host time, per process; its failed calls, and those
 * it was still in when the recording stopped.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lib/array.h"
#include "model/cuda_calls.h"
#include "report/report.h"

#define TOP_KEEP 20

static int cmp_top(const void *a, const void *b)
{
	const struct rep_top *x = a, *y = b;

	if (x->total_ns != y->total_ns)
		return (x->total_ns < y->total_ns) - (x->total_ns > y->total_ns);
	return (x->count < y->count) - (x->count > y->count);
}

/* Keep the TOP_KEEP largest entries of agg[0..n) with a count. */
static int keep_top(struct rep_top *agg, size_t n, struct rep_top **out, size_t *nout)
{
	size_t k = 0;

	for (size_t i = 0; i < n; i++)
		if (agg[i].count)
			agg[k++] = agg[i];
	qsort(agg, k, sizeof(*agg), cmp_top);
	if (k > TOP_KEEP)
		k = TOP_KEEP;
	*out = malloc((k + 1) * sizeof(**out));
	if (!*out)
		return -ENOMEM;
	memcpy(*out, agg, k * sizeof(*agg));
	*nout = k;
	return 0;
}

static int cmp_err(const void *a, const void *b)
{
	const struct rep_err *x = a, *y = b;

	if (x->count != y->count)
		return (x->count < y->count) - (x->count > y->count);
	return (x->name > y->name) - (x->name < y->name);
}

/* Count the failed calls of process p by (name, error). */
static int count_errors(const struct rt_table *t, size_t p, struct rep_proc *rp)
{
	size_t cap = 0;

	for (size_t i = 0; i < t->nev; i++) {
		const struct rt_event *e = &t->ev[i];
		struct rep_err *x = NULL;

		if (e->proc != p || e->kind != RT_API || !(e->flags & RTF_FAILED) ||
		    !cuda_result_failed(e->ret))
			continue;
		rp->nfailed++;
		for (size_t k = 0; k < rp->nerrors && !x; k++)
			if (rp->errors[k].name == e->name && rp->errors[k].ret == e->ret)
				x = &rp->errors[k];
		if (!x) {
			if (array_grow(&rp->errors, &cap, rp->nerrors + 1))
				return -ENOMEM;
			x = &rp->errors[rp->nerrors++];
			*x = (struct rep_err){ .name = e->name, .ret = e->ret };
		}
		x->count++;
	}
	if (rp->nerrors)
		qsort(rp->errors, rp->nerrors, sizeof(*rp->errors), cmp_err);
	return 0;
}

/* The calls of process p still in flight when the recording stopped. */
static int list_open(const struct rt_table *t, size_t p, struct rep_proc *rp)
{
	size_t cap = 0;

	for (size_t i = 0; i < t->nev; i++) {
		const struct rt_event *e = &t->ev[i];

		if (e->proc != p || e->kind != RT_API || !(e->flags & RTF_UNFINISHED))
			continue;
		if (array_grow(&rp->open, &cap, rp->nopen + 1))
			return -ENOMEM;
		rp->open[rp->nopen++] = (struct rep_open){ .name = e->name, .tid = e->tid,
			.site = rt_site(t, e), .ts = e->ts, .dur = e->dur };
	}
	return 0;
}

int report_top(const struct rt_table *t, struct report *r)
{
	size_t nstr = t->strs.n;
	struct rep_top *kern = calloc(nstr + 1, sizeof(*kern));
	struct rep_top *call = calloc(nstr + 1, sizeof(*call));
	int ret = -ENOMEM;

	if (!kern || !call)
		goto out;
	for (size_t p = 0; p < r->nprocs; p++) {
		struct rep_proc *rp = &r->procs[p];
		uint64_t all = 0;

		memset(kern, 0, nstr * sizeof(*kern));
		memset(call, 0, nstr * sizeof(*call));
		for (size_t i = 0; i < t->nev; i++) {
			const struct rt_event *e = &t->ev[i];
			struct rep_top *a;

			if (e->proc != p)
				continue;
			if (e->kind == RT_API) {
				rp->napi++;
				a = &call[e->name];
			} else {
				rp->ngpu++;
				if (e->kind != RT_KERNEL && e->kind != RT_NCCL)
					continue;
				a = &kern[e->name];
			}
			a->name = e->name;
			a->count++;
			a->total_ns += e->dur;
			if ((uint64_t)e->dur > a->max_ns)
				a->max_ns = e->dur;
		}
		/* summed, not the union: kernels running side by side share no more than 100% */
		for (size_t i = 0; i < nstr; i++)
			all += kern[i].total_ns;
		if (keep_top(kern, nstr, &rp->kernels, &rp->nkernels) ||
		    keep_top(call, nstr, &rp->calls, &rp->ncalls))
			goto out;
		for (size_t k = 0; k < rp->nkernels; k++)
			rp->kernels[k].share = all ? (double)rp->kernels[k].total_ns / all : 0;
		if (count_errors(t, p, rp) || list_open(t, p, rp))
			goto out;
	}
	ret = 0;
out:
	free(kern);
	free(call);
	return ret;
}
